package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/facho-olt/facho/pkg/secret"
)

func TestRun(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		wantOut string
	}{
		{"no command", nil, "no command", ""},
		{"unknown", []string{"frobnicate"}, "unknown command", ""},
		{"help", []string{"help"}, "", "usage: facho <command>"},
		{"catalogue", []string{"streams", "catalogue"}, "", "facho.varbinds.<olt_id>"},
		{"streams without verb", []string{"streams"}, "want provision or catalogue", ""},
		{"dev check-config", []string{"dev", "-check-config"}, "", "configuration ok"},
		{"dev help", []string{"dev", "-h"}, "", ""},
		{"dev bad shape", []string{"dev", "-check-config", "-shape", "2x16"}, "SLOTSxPORTSxONUS", ""},
		{"dev zero onus", []string{"dev", "-check-config", "-shape", "1x2x0"}, "not a positive number", ""},
		{"dev no pollers", []string{"dev", "-check-config", "-pollers", "-1"}, "pollers", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tc.args, getenv, &out, &errOut)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("output %q lacks %q", out.String(), tc.wantOut)
			}
		})
	}
}

func TestKeygenMakesUsableKeys(t *testing.T) {
	var a, b bytes.Buffer
	getenv := func(string) string { return "" }
	if err := run(context.Background(), []string{"keygen"}, getenv, &a, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"keygen"}, getenv, &b, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if a.String() == b.String() {
		t.Fatal("two keygens printed the same key")
	}
	if _, err := secret.ParseKey(a.String()); err != nil {
		t.Fatalf("keygen printed an unusable key: %v", err)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db":  "postgres://u:xxxxx@h:5432/db",
		"postgres://postgres@h:1/db": "postgres://postgres@h:1/db",
		"host=/tmp dbname=x":         "host=/tmp dbname=x",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMetricsList(t *testing.T) {
	got := metricsList(map[string]string{"poller-1": "http://h:2", "auditor": "http://h:5", "planner": "http://h:1"})
	want := "auditor http://h:5/metrics, planner http://h:1/metrics, poller-1 http://h:2/metrics"
	if got != want {
		t.Errorf("metricsList = %q, want %q", got, want)
	}
}
