package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestBenchUsageAndFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"bench", "-h"}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatalf("bench -h: %v", err)
	}
	for _, flag := range []string{"-olts", "-shape", "-cycles", "-json"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("usage lacks %s:\n%s", flag, out.String())
		}
	}
	if err := run(context.Background(), []string{"bench", "-shape", "nope"}, func(string) string { return "" }, &out, &errOut); err == nil {
		t.Error("a bad shape was accepted")
	}
}
