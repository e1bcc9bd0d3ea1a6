package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/facho-olt/facho/pkg/buildinfo"
)

func TestVersion(t *testing.T) {
	want := buildinfo.Get()
	for _, tc := range []struct {
		name    string
		args    []string
		check   func(t *testing.T, out string)
		wantErr string
	}{
		{name: "line", args: []string{"version"}, check: func(t *testing.T, out string) {
			if out != want.String()+"\n" {
				t.Errorf("facho version = %q, want %q", out, want.String())
			}
			for _, part := range []string{want.Version, "commit " + want.Commit, "built " + want.Date} {
				if !strings.Contains(out, part) {
					t.Errorf("facho version = %q, lacks %q", out, part)
				}
			}
		}},
		{name: "json", args: []string{"version", "-json"}, check: func(t *testing.T, out string) {
			var got buildinfo.Info
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("facho version -json: %v: %q", err, out)
			}
			if got != want {
				t.Errorf("facho version -json = %+v, want %+v", got, want)
			}
		}},
		{name: "extra argument", args: []string{"version", "now"}, wantErr: `unexpected argument "now"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, func(string) string { return "" }, &stdout, &stderr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, stdout.String())
		})
	}
}
