package main

import (
	"bytes"
	"context"
	"testing"
)

func TestCheckConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		ok   bool
	}{
		{"database url", []string{"x", "-check-config"}, map[string]string{"DATABASE_URL": "postgres://u@h/db"}, true},
		{"data dir", []string{"x", "-check-config", "-pg-data-dir", "/tmp/pg"}, nil, true},
		{"no database", []string{"x", "-check-config"}, nil, false},
		{"bad fetch wait", []string{"x", "-check-config", "-fetch-wait", "1ns"}, map[string]string{"DATABASE_URL": "postgres://u@h/db"}, false},
		{"history retention forever", []string{"x", "-check-config", "-history-retention", "0"}, map[string]string{"DATABASE_URL": "postgres://u@h/db"}, true},
		{"history retention from env", []string{"x", "-check-config"}, map[string]string{"DATABASE_URL": "postgres://u@h/db", "FACHO_HISTORY_RETENTION": "720h"}, true},
		{"negative history retention", []string{"x", "-check-config", "-history-retention", "-1h"}, map[string]string{"DATABASE_URL": "postgres://u@h/db"}, false},
		{"negative history retention env", []string{"x", "-check-config"}, map[string]string{"DATABASE_URL": "postgres://u@h/db", "FACHO_HISTORY_RETENTION": "-24h"}, false},
		{"malformed history retention env", []string{"x", "-check-config"}, map[string]string{"DATABASE_URL": "postgres://u@h/db", "FACHO_HISTORY_RETENTION": "a year"}, false},
		{"bad log level", []string{"x", "-check-config", "-log-level", "loud"}, map[string]string{"DATABASE_URL": "postgres://u@h/db"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tc.args, env(tc.env), &out, &errOut)
			if (err == nil) != tc.ok {
				t.Fatalf("run = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
