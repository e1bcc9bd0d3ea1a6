package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestLogWriter(t *testing.T) {
	for _, tc := range []struct {
		format  string
		console bool
		wantErr bool
	}{
		{"", false, false}, // a buffer is not a terminal: JSON
		{"json", false, false},
		{"console", true, false},
		{"text", false, true},
	} {
		var buf bytes.Buffer
		w, err := logWriter(&buf, tc.format)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%q: error %v", tc.format, err)
		}
		if err != nil {
			continue
		}
		log := zerolog.New(w)
		log.Info().Str("olt", "olt-1").Msg("fleet started")
		line := buf.String()
		if isJSON := strings.HasPrefix(line, "{"); isJSON == tc.console {
			t.Errorf("%q: line %q, console %v", tc.format, line, tc.console)
		}
	}
}
