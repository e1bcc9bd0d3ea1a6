package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestPublicCheck(t *testing.T) {
	const secretDetail = "failed to connect to `user=postgres database=facho`: 127.0.0.1:15432: connection refused"
	var logBuf bytes.Buffer
	var fail error
	check := PublicCheck(zerolog.New(&logBuf), "postgres", "database unavailable", func(context.Context) error { return fail })
	clock := time.Unix(1000, 0)
	// The same check with a clock of the test's.
	p := &publicCheck{log: zerolog.New(&logBuf), name: "postgres", public: errors.New("database unavailable"),
		check: func(context.Context) error { return fail }, now: func() time.Time { return clock }}

	for _, step := range []struct {
		name    string
		fail    error
		advance time.Duration
		wantErr string
		wantLog string // "" = no line
	}{
		{"ok", nil, 0, "", ""},
		{"first failure logged", errors.New(secretDetail), 0, "database unavailable", "health check fails"},
		{"same failure not logged again", errors.New(secretDetail), time.Second, "database unavailable", ""},
		{"same failure still quiet", errors.New(secretDetail), time.Minute, "database unavailable", ""},
		{"reminder after the remind interval", errors.New(secretDetail), PublicCheckRemind, "database unavailable", "health check fails"},
		{"another failure logged", errors.New("ping: timeout"), time.Second, "database unavailable", "health check fails"},
		{"recovery logged", nil, time.Second, "", "health check passes again"},
		{"ok again quiet", nil, time.Second, "", ""},
	} {
		logBuf.Reset()
		fail = step.fail
		clock = clock.Add(step.advance)
		err := p.run(context.Background())
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != step.wantErr {
			t.Errorf("%s: error %q, want %q", step.name, got, step.wantErr)
		}
		line := logBuf.String()
		switch {
		case step.wantLog == "" && line != "":
			t.Errorf("%s: logged %s, want nothing", step.name, line)
		case step.wantLog != "" && !strings.Contains(line, step.wantLog):
			t.Errorf("%s: logged %q, want %q", step.name, line, step.wantLog)
		case step.fail != nil && step.wantLog != "" && !strings.Contains(line, step.fail.Error()):
			t.Errorf("%s: the log %q lacks the detail", step.name, line)
		}
	}

	// Served on /healthz, the detail never shows.
	fail = errors.New(secretDetail)
	h := NewHealth()
	h.Add("postgres", check)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var body struct {
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable || body.Checks["postgres"] != "database unavailable" {
		t.Errorf("/healthz = %d %s, want 503 with database unavailable", rec.Code, rec.Body)
	}
	for _, leak := range []string{"user=", "facho", "15432", "127.0.0.1"} {
		if strings.Contains(rec.Body.String(), leak) {
			t.Errorf("/healthz shows %q: %s", leak, rec.Body)
		}
	}
}
