package availability

import (
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

func TestTracker(t *testing.T) {
	tm := Timings{Recheck: 15 * time.Second, ProbeInterval: 60 * time.Second, UnavailableAfter: 45 * time.Second}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		at     time.Duration
		op     string // answer, fail, tick
		state  string
		since  time.Duration
		next   time.Duration
		failed int
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"first answer is available", []step{
			{0, "answer", streams.AvailabilityAvailable, 0, 60 * time.Second, 0},
		}},
		{"never answers: unreachable then unavailable 45s after the first failure", []step{
			{0, "fail", streams.AvailabilityUnreachable, 0, 15 * time.Second, 1},
			{15 * time.Second, "fail", streams.AvailabilityUnreachable, 0, 30 * time.Second, 2},
			{44 * time.Second, "tick", streams.AvailabilityUnreachable, 0, 30 * time.Second, 2},
			{45 * time.Second, "tick", streams.AvailabilityUnavailable, 0, 30 * time.Second, 2},
			{46 * time.Second, "fail", streams.AvailabilityUnavailable, 0, 61 * time.Second, 3},
		}},
		{"back to available on the first answer", []step{
			{0, "answer", streams.AvailabilityAvailable, 0, 60 * time.Second, 0},
			{10 * time.Second, "fail", streams.AvailabilityUnreachable, 10 * time.Second, 25 * time.Second, 1},
			{20 * time.Second, "answer", streams.AvailabilityAvailable, 20 * time.Second, 80 * time.Second, 0},
			{100 * time.Second, "tick", streams.AvailabilityAvailable, 20 * time.Second, 80 * time.Second, 0},
		}},
		{"an answer inside the unavailable delay prevents unavailable", []step{
			{0, "fail", streams.AvailabilityUnreachable, 0, 15 * time.Second, 1},
			{30 * time.Second, "answer", streams.AvailabilityAvailable, 30 * time.Second, 90 * time.Second, 0},
			{50 * time.Second, "tick", streams.AvailabilityAvailable, 30 * time.Second, 90 * time.Second, 0},
		}},
		{"a skipped probe (OLT busy) changes only the next probe: available stays available", []step{
			{0, "answer", streams.AvailabilityAvailable, 0, 60 * time.Second, 0},
			{60 * time.Second, "skip", streams.AvailabilityAvailable, 0, 75 * time.Second, 0},
			{75 * time.Second, "skip", streams.AvailabilityAvailable, 0, 90 * time.Second, 0},
		}},
		{"a skipped probe does not end an outage nor count as a failure", []step{
			{0, "fail", streams.AvailabilityUnreachable, 0, 15 * time.Second, 1},
			{15 * time.Second, "skip", streams.AvailabilityUnreachable, 0, 30 * time.Second, 1},
			{45 * time.Second, "tick", streams.AvailabilityUnavailable, 0, 30 * time.Second, 1},
			{50 * time.Second, "skip", streams.AvailabilityUnavailable, 0, 65 * time.Second, 1},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tr Tracker
			for i, s := range c.steps {
				at := t0.Add(s.at)
				switch s.op {
				case "answer":
					tr.Answer(tm, at, streams.AvailabilitySourceProbe, "")
				case "fail":
					tr.NoAnswer(tm, at, "request timeout", streams.AvailabilitySourceProbe, "")
				case "tick":
					tr.Tick(tm, at)
				case "skip":
					answers := tr.Answers
					tr.Skipped(tm, at)
					if tr.Answers != answers {
						t.Fatalf("step %d: a skipped probe changed the answers counted for a recovery: %d, was %d", i, tr.Answers, answers)
					}
				}
				if tr.State != s.state || !tr.Since.Equal(t0.Add(s.since)) || !tr.NextProbe.Equal(t0.Add(s.next)) || tr.FailedChecks != s.failed {
					t.Fatalf("step %d (%s at %s): state %q since %s next %s failed %d; want %q since %s next %s failed %d", i, s.op, s.at,
						tr.State, tr.Since.Sub(t0), tr.NextProbe.Sub(t0), tr.FailedChecks, s.state, s.since, s.next, s.failed)
				}
			}
		})
	}
}

func TestTrackerEventAndRestore(t *testing.T) {
	tm := Timings{Recheck: time.Second, ProbeInterval: time.Minute, UnavailableAfter: 3 * time.Second}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var tr Tracker
	tr.NoAnswer(tm, t0, strings.Repeat("é", 400), streams.AvailabilitySourceExecution, "e1")
	ev := tr.Event("olt-1", t0)
	if ev.State != streams.AvailabilityUnreachable || ev.Previous != "" || len(ev.LastError) > maxErrorBytes || ev.ExecutionID != "e1" || ev.FailedChecks != 1 {
		t.Fatalf("event %+v", ev)
	}
	if !strings.HasPrefix(strings.Repeat("é", 400), ev.LastError) {
		t.Fatal("the bounded error cut a rune")
	}
	tr.Published = ev.State
	var restored Tracker
	restored.Restore(ev)
	if restored.State != tr.State || restored.Published != tr.State || !restored.Since.Equal(tr.Since) || !restored.Due(t0) {
		t.Fatalf("restored %+v from %+v", restored, ev)
	}
	// A restored unreachable OLT still goes unavailable on the outage's clock.
	if !restored.Tick(tm, t0.Add(3*time.Second)) || restored.State != streams.AvailabilityUnavailable || !restored.Since.Equal(t0) {
		t.Fatalf("restored tick: %+v", restored)
	}
	if got := MsgID(restored.Event("olt-1", t0)); got != "avail:olt-1:unavailable:"+itoa(t0.UnixNano()) {
		t.Fatalf("msg id %q", got)
	}
}

func itoa(n int64) string { return fmtInt(n) }

func fmtInt(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func TestNoAnswer(t *testing.T) {
	cases := map[string]bool{
		"olt o1 did not answer (timeout): request timeout (after 1 retries)": true,
		"walk: request timeout (after 2 retries): max retries exceeded":      true,
		"read udp 127.0.0.1:1->127.0.0.1:2: i/o timeout":                     true,
		"connection refused":                true,
		"node timeout after 1m0s":           false,
		"decode column hw-rx: not a number": false,
		"":                                  false,
	}
	for in, want := range cases {
		if got := NoAnswer(in); got != want {
			t.Errorf("NoAnswer(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	bad := []Config{
		{Recheck: time.Millisecond},
		{Recheck: time.Minute, ProbeInterval: time.Second},
		{Workers: -1},
		{ProbeRetries: 9},
		{ProbeTimeout: time.Hour},
	}
	for i, c := range bad {
		if err := c.WithDefaults().Validate(); err == nil {
			t.Errorf("case %d: %+v accepted", i, c)
		}
	}
}
