package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/facho-olt/facho/pkg/secret"
)

func TestCheckConfig(t *testing.T) {
	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		ok   bool
	}{
		{"defaults with a key", nil, map[string]string{"FACHO_SECRET_KEY": key}, true},
		{"flags", []string{"-workers", "8", "-snmp-timeout", "500ms", "-lease-ttl", "5s"}, map[string]string{"FACHO_SECRET_KEY": key}, true},
		{"env fallbacks", nil, map[string]string{"FACHO_SECRET_KEY": key, "FACHO_POLLER_WORKERS": "2", "FACHO_SNMP_RETRIES": "-1"}, true},
		{"no key", nil, nil, false},
		{"bad key", nil, map[string]string{"FACHO_SECRET_KEY": "public"}, false},
		{"zero max repetitions is refused", []string{"-max-repetitions", "-5"}, map[string]string{"FACHO_SECRET_KEY": key}, false},
		{"bad duration in env", nil, map[string]string{"FACHO_SECRET_KEY": key, "FACHO_LEASE_TTL": "soon"}, false},
		{"lease ttl too short", []string{"-lease-ttl", "10ms"}, map[string]string{"FACHO_SECRET_KEY": key}, false},
		{"bad log level", []string{"-log-level", "loud"}, map[string]string{"FACHO_SECRET_KEY": key}, false},
		{"historical and common names of the nats and http flags", []string{"-nats", "nats://n:4222", "-http", "", "-nats-url", "nats://m:4222", "-http-addr", ":0"}, map[string]string{"FACHO_SECRET_KEY": key}, true},
		{"replicas out of range", []string{"-replicas", "9"}, map[string]string{"FACHO_SECRET_KEY": key}, false},
		{"malformed env fallback", nil, map[string]string{"FACHO_SECRET_KEY": key, "FACHO_POLLER_WORKERS": "many"}, false},
		{"class flags", []string{"-class-discovery-concurrency", "1", "-class-polling-timeout", "30s", "-class-high-priority-concurrency", "4"}, map[string]string{"FACHO_SECRET_KEY": key}, true},
		{"class env fallbacks", nil, map[string]string{"FACHO_SECRET_KEY": key, "FACHO_CLASS_DISCOVERY_CONCURRENCY": "3", "FACHO_CLASS_RETRY_TIMEOUT": "2m", "FACHO_CLASS_HIGH_PRIORITY_TIMEOUT": "0s"}, true},
		{"class concurrency out of range", []string{"-class-polling-concurrency", "-1"}, map[string]string{"FACHO_SECRET_KEY": key}, false},
		{"class concurrency too high in env", nil, map[string]string{"FACHO_SECRET_KEY": key, "FACHO_CLASS_RETRY_CONCURRENCY": "1000"}, false},
		{"negative class timeout", []string{"-class-high-priority-timeout", "-1s"}, map[string]string{"FACHO_SECRET_KEY": key}, false},
		{"bound flags", []string{"-bound-onus-per-pon", "64", "-bound-value-bytes", "256", "-bound-bytes-per-execution", "1048576"}, map[string]string{"FACHO_SECRET_KEY": key}, true},
		{"bound env fallbacks", nil, map[string]string{"FACHO_SECRET_KEY": key, "FACHO_BOUND_ROWS_PER_TABLE": "1000", "FACHO_BOUND_VARBINDS_PER_EXECUTION": "5000"}, true},
		{"a value bound too short for a serial", []string{"-bound-value-bytes", "4"}, map[string]string{"FACHO_SECRET_KEY": key}, false},
		{"negative ONUs per PON", nil, map[string]string{"FACHO_SECRET_KEY": key, "FACHO_BOUND_ONUS_PER_PON": "-1"}, false},
		{"malformed class timeout in env", nil, map[string]string{"FACHO_SECRET_KEY": key, "FACHO_CLASS_DISCOVERY_TIMEOUT": "long"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"facho-poller", "-check-config"}, tc.args...)
			err := run(context.Background(), args, func(k string) string { return tc.env[k] }, &stdout, &stderr)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v (stderr %s)", err, tc.ok, stderr.String())
			}
			if tc.ok && !strings.Contains(stdout.String(), "configuration ok") {
				t.Fatalf("stdout %q", stdout.String())
			}
			if err != nil && strings.Contains(err.Error(), key) {
				t.Fatal("error leaks the secret key")
			}
		})
	}
}
