package auditor

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

func envelope(t *testing.T, ev streams.Event) streams.Envelope {
	t.Helper()
	b, err := streams.Encode("test", time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), ev)
	if err != nil {
		t.Fatal(err)
	}
	env, err := streams.DecodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestEntries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ev        streams.Event
		from      func(streams.Envelope) (Entry, error)
		wantType  string
		wantLevel string
		wantOLT   string
		wantErr   error
	}{
		{"started", streams.ExecutionStarted{ExecutionID: "e", OLTID: "o"}, fromExec, streams.AuditExecStarted, streams.LevelInfo, "o", nil},
		{"succeeded", streams.ExecutionSucceeded{ExecutionID: "e", OLTID: "o"}, fromExec, streams.AuditExecSucceeded, streams.LevelInfo, "o", nil},
		{"failed for good", streams.ExecutionFailed{ExecutionID: "e", OLTID: "o", Error: "timeout"}, fromExec, streams.AuditExecFailed, streams.LevelError, "o", nil},
		{"failed, will retry", streams.ExecutionFailed{ExecutionID: "e", OLTID: "o", Retryable: true}, fromExec, streams.AuditExecFailed, streams.LevelWarning, "o", nil},
		{"skipped", streams.ExecutionSkipped{ExecutionID: "e", JobID: "j", OLTID: "o", Reason: "stale"}, fromExec, streams.AuditExecSkipped, streams.LevelWarning, "o", nil},
		{"interrupted", streams.ExecutionInterrupted{ExecutionID: "e", JobID: "j", OLTID: "o", Attempt: 1, Reason: "lease expired"}, fromExec, streams.AuditExecInterrupted, streams.LevelError, "o", nil},
		{"aborted", streams.ExecutionAborted{ExecutionID: "e", JobID: "j", OLTID: "o", Reason: "job disabled"}, fromExec, streams.AuditExecAborted, streams.LevelWarning, "o", nil},
		{"interrupted by the planner", streams.ExecutionInterrupted{ExecutionID: "e", JobID: "j", OLTID: "o", Attempt: 1, Reason: "OLT disabled", Cancelled: true}, fromExec, streams.AuditExecInterrupted, streams.LevelWarning, "o", nil},
		{"audit", streams.AuditEvent{Kind: streams.AuditOLTDisabled, Level: "critical", OLTID: "o"}, fromAudit, streams.AuditOLTDisabled, streams.LevelCritical, "o", nil},
		{"audit with unknown level is INFO", streams.AuditEvent{Kind: streams.AuditTaskAdded, Level: "loud"}, fromAudit, streams.AuditTaskAdded, streams.LevelInfo, "", nil},
		{"audit without type is malformed", streams.AuditEvent{Level: "INFO"}, fromAudit, "", "", "", streams.ErrMalformed},
		{"other type on the exec stream is skipped", streams.AuditEvent{Kind: "X"}, fromExec, "", "", "", errSkip{streams.TypeAudit}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := tc.from(envelope(t, tc.ev))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) && err != tc.wantErr {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.EventType != tc.wantType || e.Level != tc.wantLevel || e.OLTID != tc.wantOLT || e.Timestamp.IsZero() {
				t.Errorf("entry %+v", e)
			}
		})
	}
}

func TestSkippedEntryNamesExecutionJobAndReason(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	reason := "stale: scheduled at 2026-11-21T10:00:00Z, interval 300s; a newer run supersedes it"
	e, err := fromExec(envelope(t, streams.ExecutionSkipped{ExecutionID: "exec-7", JobID: "job-disc", OLTID: "olt-a", PollerID: "p1",
		ScheduledAt: at, SkippedAt: at.Add(10 * time.Minute), Reason: reason}))
	if err != nil {
		t.Fatal(err)
	}
	want := "execution exec-7 of job job-disc skipped: " + reason
	if e.Message != want {
		t.Errorf("message %q, want %q", e.Message, want)
	}
	if e.Details["execution_id"] != "exec-7" || e.Details["job_id"] != "job-disc" || e.Details["reason"] != reason || e.Details["poller_id"] != "p1" {
		t.Errorf("details %v", e.Details)
	}
	if _, ok := e.Details["attempt"]; ok {
		t.Errorf("a skip without an attempt has one in its details: %v", e.Details)
	}
	// The retry's skip says which attempt it was (the live path and the
	// rebuild's fast path alike).
	retry := streams.ExecutionSkipped{ExecutionID: "exec-7", JobID: "job-disc", OLTID: "olt-a", PollerID: "p1", Attempt: 2,
		ScheduledAt: at, SkippedAt: at.Add(10 * time.Minute), Reason: reason}
	data, err := streams.Encode("test", at, retry)
	if err != nil {
		t.Fatal(err)
	}
	subject := streams.SubjectExec("olt-a", streams.PhaseSkipped)
	fast, ok := fromExecOn(projection.NewDecoders(), subject, data)
	if !ok {
		t.Fatal("the fast path refused the retry's skip")
	}
	e, err = fromExec(envelope(t, retry))
	if err != nil {
		t.Fatal(err)
	}
	want = "execution exec-7 of job job-disc skipped (attempt 2): " + reason
	for _, got := range []Entry{e, fast} {
		if got.Message != want || got.Details["attempt"] != 2 {
			t.Errorf("retry's skip: message %q, attempt %v; want %q and 2", got.Message, got.Details["attempt"], want)
		}
	}
}

func TestSanitize(t *testing.T) {
	e := sanitize(Entry{
		Message: "line one\nline two\x1b[31m",
		Details: map[string]any{
			"community": "public", "SNMP_Community": "x", "password": "p", "api_token": "t",
			"nested": map[string]any{"community_enc": "v1:abc", "ok": "fine\r\n"},
			"list":   []any{map[string]any{"secret": "s"}},
			"count":  3,
		},
	})
	if strings.ContainsAny(e.Message, "\n\x1b") {
		t.Errorf("message %q keeps control characters", e.Message)
	}
	for _, k := range []string{"community", "SNMP_Community", "password", "api_token"} {
		if e.Details[k] != redacted {
			t.Errorf("%s = %v, want redacted", k, e.Details[k])
		}
	}
	nested := e.Details["nested"].(map[string]any)
	if nested["community_enc"] != redacted || nested["ok"] != "fine " {
		t.Errorf("nested %v", nested)
	}
	if e.Details["list"].([]any)[0].(map[string]any)["secret"] != redacted || e.Details["count"] != 3 {
		t.Errorf("details %v", e.Details)
	}
}

// Cutting a long message or event type must not split a character:
// Postgres refuses invalid UTF-8 (22021), which would dead-letter the entry.
func TestSanitizeCutsOnCharacterBoundaries(t *testing.T) {
	e := sanitize(Entry{
		Message:   strings.Repeat("a", 3999) + strings.Repeat("ñ", 10),
		EventType: strings.Repeat("E", 63) + "É",
		Details:   map[string]any{"error": strings.Repeat("x", 3998) + "€€"},
	})
	if !utf8.ValidString(e.Message) || !utf8.ValidString(e.EventType) || !utf8.ValidString(e.Details["error"].(string)) {
		t.Fatalf("invalid UTF-8 after cutting: message %q, event type %q, detail %q",
			e.Message[3990:], e.EventType, e.Details["error"].(string)[3990:])
	}
	if !strings.HasPrefix(e.Message, strings.Repeat("a", 3999)) || !strings.HasSuffix(e.Message, "...") || len(e.Message) > 4003 {
		t.Errorf("message cut to %d bytes: ...%q", len(e.Message), e.Message[3990:])
	}
	if len(e.EventType) > 64 || !strings.HasPrefix(e.EventType, strings.Repeat("E", 63)) {
		t.Errorf("event type %q", e.EventType)
	}
}

// sanitizeMap returns a clean map as it is instead of a copy: it must be
// what the copy would be, for clean and unclean maps alike.
func TestSanitizeMapWithoutCopyEqualsCopy(t *testing.T) {
	at := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	cases := map[string]map[string]any{
		"clean":              {"execution_id": "e1", "attempt": 2, "started_at": at, "ok": true, "n": nil},
		"nested clean":       {"a": map[string]any{"b": []any{"x", 1.5, map[string]any{"c": "d"}}}},
		"secret key":         {"execution_id": "e1", "api_token": "t"},
		"nested secret":      {"a": map[string]any{"Community": "public"}},
		"secret in list":     {"a": []any{map[string]any{"password": "p"}}},
		"control character":  {"error": "line\nnext"},
		"escape in list":     {"a": []any{"ok", "\x1b[31m"}},
		"long string":        {"error": strings.Repeat("x", 4001)},
		"exactly 4000":       {"error": strings.Repeat("x", 4000)},
		"nil nested map":     {"a": map[string]any(nil)},
		"nil nested list":    {"a": []any(nil)},
		"unicode secret key": {"passwοrd": "greek omicron: not a secret", "\u212aey_secret": "s"},
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			got, want := sanitizeMap(m), sanitizeMapCopy(m)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("sanitizeMap = %#v, the copy = %#v", got, want)
			}
		})
	}
	if got := sanitizeMap(nil); got == nil || len(got) != 0 {
		t.Errorf("sanitizeMap(nil) = %#v, want an empty map", got)
	}
}

// isSecretKey answers the execution entries' keys without the word
// search: each answer must be the regexp's.
func TestIsSecretKeyOfExecutionEntries(t *testing.T) {
	at := time.Now()
	entries := []Entry{
		startedEntry(at, streams.ExecutionStarted{}), succeededEntry(at, streams.ExecutionSucceeded{}),
		failedEntry(at, streams.ExecutionFailed{}), skippedEntry(at, streams.ExecutionSkipped{}),
		abortedEntry(at, streams.ExecutionAborted{}), interruptedEntry(at, streams.ExecutionInterrupted{}),
	}
	for _, e := range entries {
		for k := range e.Details {
			if got, want := isSecretKey(k), secretKey.MatchString(k); got != want {
				t.Errorf("isSecretKey(%q) = %v, the regexp says %v", k, got, want)
			}
		}
	}
	for _, k := range []string{"community", "x_Password", "token", "CREDENTIALS", "execution_idsecret", "job_id"} {
		if got, want := isSecretKey(k), secretKey.MatchString(k); got != want {
			t.Errorf("isSecretKey(%q) = %v, the regexp says %v", k, got, want)
		}
	}
}
