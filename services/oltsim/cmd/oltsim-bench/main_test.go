package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestRunSmoke runs every scenario briefly on a tiny fleet.
func TestRunSmoke(t *testing.T) {
	var out strings.Builder
	err := run(context.Background(), []string{"oltsim-bench", "-seconds", "0.05", "-fleet-olts", "4", "-fleet-sample", "2", "-netsnmp=false"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"raw UDP echo", "gosnmp GET sysName.0", "one OLT, 4096 ONUs", "fleet of 4 OLTs", "OLTs walked: 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
