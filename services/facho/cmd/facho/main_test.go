package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/streams"
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
		{"dev pg port", []string{"dev", "-check-config", "-pg-port", "25432"}, "", "configuration ok"},
		{"dev bad pg port", []string{"dev", "-check-config", "-pg-port", "70000"}, "postgres port 70000", ""},
		{"dev bad nats port", []string{"dev", "-check-config", "-nats-port", "-7"}, "nats port -7", ""},
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

// facho dev -h lists -pg-port and the retention variables with their dev
// defaults.
func TestDevHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"dev", "-h"}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-pg-port", "(default 15432)", "FACHO_VARBINDS_MAX_AGE", "dev default 1h", "FACHO_STREAM_MAX_BYTES", "256MiB", "FACHO_LOG_LEVEL", "FACHO_LOG_FORMAT", "examples:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("facho dev -h lacks %q:\n%s", want, out.String())
		}
	}
}

// facho dev reads the stream variables like every service, with bounded
// defaults of its own where they are unset.
func TestDevStreamEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    streams.Options // the fields checked: max ages and bytes
		wantErr string
	}{
		{"dev defaults", nil, streams.Options{VarbindsMaxAge: time.Hour, ScheduleMaxAge: time.Hour, EventsMaxAge: 24 * time.Hour, MaxBytes: 256 << 20}, ""},
		{"honoured", map[string]string{streams.EnvVarbindsMaxAge: "30m", streams.EnvScheduleMaxAge: "10m", streams.EnvEventsMaxAge: "2h", streams.EnvMaxBytes: "64MiB"},
			streams.Options{VarbindsMaxAge: 30 * time.Minute, ScheduleMaxAge: 10 * time.Minute, EventsMaxAge: 2 * time.Hour, MaxBytes: 64 << 20}, ""},
		{"no cap asked for", map[string]string{streams.EnvMaxBytes: "0"}, streams.Options{VarbindsMaxAge: time.Hour, ScheduleMaxAge: time.Hour, EventsMaxAge: 24 * time.Hour}, ""},
		{"bad age", map[string]string{streams.EnvEventsMaxAge: "forever"}, streams.Options{}, streams.EnvEventsMaxAge},
		{"bad stream age", map[string]string{streams.EnvStreamMaxAge(streams.StreamONU): "forever"}, streams.Options{}, "FACHO_ONU_MAX_AGE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			o, err := streams.OptionsFromEnv(devStreamEnv(getenv))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				var out, errOut bytes.Buffer
				if err := run(context.Background(), []string{"dev", "-check-config"}, getenv, &out, &errOut); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("facho dev -check-config: %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.VarbindsMaxAge != tc.want.VarbindsMaxAge || o.ScheduleMaxAge != tc.want.ScheduleMaxAge || o.EventsMaxAge != tc.want.EventsMaxAge || o.MaxBytes != tc.want.MaxBytes {
				t.Errorf("options %+v, want %+v", o, tc.want)
			}
		})
	}
}

func TestRetention(t *testing.T) {
	o := streams.Options{VarbindsMaxAge: time.Hour, ScheduleMaxAge: 90 * time.Minute, EventsMaxAge: 24 * time.Hour, MaxBytes: 256 << 20}
	if got, want := retention(o), "varbinds 1h, NodeDue 1h30m, events 24h, at most 256 MiB per stream; configuration kept"; got != want {
		t.Errorf("retention = %q, want %q", got, want)
	}
	o.Streams = map[string]streams.StreamLimits{streams.StreamONU: {MaxAge: 8760 * time.Hour}, streams.StreamExec: {MaxAge: 48 * time.Hour, MaxBytes: 1 << 30}}
	o.Compression = streams.CompressionNone
	if got, want := retention(o), "varbinds 1h, NodeDue 1h30m, events 24h, at most 256 MiB per stream, FACHO_EXEC 48h and 1024 MiB, FACHO_ONU 8760h, uncompressed; configuration kept"; got != want {
		t.Errorf("retention = %q, want %q", got, want)
	}
}
