package telemetry

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestParseLogFormat(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"", LogFormatAuto, false},
		{"json", LogFormatJSON, false},
		{"console", LogFormatConsole, false},
		{"JSON", "", true},
		{"text", "", true},
	} {
		got, err := ParseLogFormat(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseLogFormat(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestResolveLogFormatOffTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tc := range []struct {
		name   string
		format string
		out    any
		want   string
	}{
		{"auto, buffer", LogFormatAuto, &bytes.Buffer{}, LogFormatJSON},
		{"auto, pipe", LogFormatAuto, w, LogFormatJSON},
		{"forced console, pipe", LogFormatConsole, w, LogFormatConsole},
		{"forced json, pipe", LogFormatJSON, w, LogFormatJSON},
	} {
		var got string
		switch o := tc.out.(type) {
		case *bytes.Buffer:
			got = ResolveLogFormat(tc.format, o)
		case *os.File:
			got = ResolveLogFormat(tc.format, o)
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestLoggerFromEnv checks what a line looks like in each format and that
// the level and format variables are honoured or refused by name.
func TestLoggerFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, out string)
	}{
		{name: "default: json off a terminal, info", env: map[string]string{}, check: func(t *testing.T, out string) {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 1 {
				t.Fatalf("want the info line only (debug filtered), got %q", out)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
				t.Fatalf("not JSON: %q: %v", lines[0], err)
			}
			if m["message"] != "walk done" || m["olt_id"] != "olt-1" || m["service"] != "poller" {
				t.Fatalf("fields: %v", m)
			}
		}},
		{name: "console forced", env: map[string]string{EnvLogFormat: "console", EnvLogLevel: "debug"}, check: func(t *testing.T, out string) {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 {
				t.Fatalf("want debug and info lines, got %q", out)
			}
			l := lines[1]
			if strings.HasPrefix(l, "{") || !strings.Contains(l, "INF") || !strings.Contains(l, "walk done") || !strings.Contains(l, "olt_id=olt-1") {
				t.Fatalf("not a console line: %q", l)
			}
			if strings.Contains(l, "\x1b[") {
				t.Fatalf("colours off a terminal: %q", l)
			}
		}},
		{name: "bad level", env: map[string]string{EnvLogLevel: "loud"}, wantErr: EnvLogLevel},
		{name: "bad format", env: map[string]string{EnvLogFormat: "text"}, wantErr: EnvLogFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := LoggerFromEnv(func(k string) string { return tc.env[k] }, &buf, "poller", zerolog.InfoLevel)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Debug().Msg("detail")
			log.Info().Str(KeyOLT, "olt-1").Int("duration_ms", 12).Msg("walk done")
			tc.check(t, buf.String())
		})
	}
}
