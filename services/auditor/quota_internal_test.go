package auditor

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

var h10 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// TestQuotaRequired: the tracker's quota follows the scheduling rule
// (pkg/quotaplan has the rule's own table): a 5-minute task whose runs
// take a few ms or 60 s owes the runs it had, not 3600/300; durations come
// in ms, untimed runs (nil) take the timed ones' mean.
func TestQuotaRequired(t *testing.T) {
	ms := func(v int64) *int64 { return &v }
	// every: runs scheduled from first, each cycle apart, while in the hour.
	every := func(first time.Time, cycle time.Duration) []time.Time {
		var out []time.Time
		for at := first; at.Before(h10.Add(time.Hour)); at = at.Add(cycle) {
			out = append(out, at)
		}
		return out
	}
	timed := func(n int, d int64) []*int64 {
		out := make([]*int64, n)
		for i := range out {
			out[i] = ms(d)
		}
		return out
	}
	fast := every(h10.Add(4*time.Second), 5*time.Minute+4*time.Millisecond)
	slow := every(h10.Add(2*time.Minute), 6*time.Minute)
	for _, tc := range []struct {
		name      string
		interval  int
		ranBefore bool
		scheds    []time.Time
		durs      []*int64
		want      int
	}{
		{"5-minute task, 4 ms runs", 300, true, fast, timed(len(fast), 4), 12},
		{"5-minute task, 60 s runs (10, not 12)", 300, true, slow, timed(len(slow), 60_000), 10},
		{"5-minute task, 60 s runs, one missing at :26", 300, true, append(append([]time.Time{}, slow[:4]...), slow[5:]...), timed(len(slow)-1, 60_000), 10},
		{"5-minute task, stopped after :32", 300, true, slow[:6], timed(6, 60_000), 10},
		{"15-minute task enabled at 10:50", 900, false, []time.Time{h10.Add(50 * time.Minute)}, nil, 1},
		{"60-second task enabled at 10:40, one run pending", 60, false, []time.Time{h10.Add(40 * time.Minute)}, []*int64{nil}, 20},
		{"2-hour task", 7200, true, []time.Time{h10.Add(time.Minute)}, []*int64{ms(1000)}, 1},
		{"no interval", 0, false, []time.Time{h10}, nil, 1},
	} {
		if got, _, _ := quotaRequired(tc.interval, h10, tc.ranBefore, tc.scheds, tc.durs); got != tc.want {
			t.Errorf("%s: required %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestTrackerStatus(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		completed, required  int
		interrupted, checked bool
		want                 string
	}{
		{"open hour", 1, 4, false, false, QuotaInProgress},
		{"open hour, OLT disabled", 1, 4, true, false, QuotaInterrupted},
		{"checked, OLT disabled", 0, 4, true, true, QuotaInterrupted},
		{"all done", 4, 4, false, true, QuotaCompleted},
		{"more than required", 5, 4, false, true, QuotaCompleted},
		{"10 of 12 (83 %)", 10, 12, false, true, QuotaPartial},
		{"8 of 10 (80 %)", 8, 10, false, true, QuotaPartial},
		{"3 of 4 (75 %)", 3, 4, false, true, QuotaNotMet},
		{"none", 0, 4, false, true, QuotaNotMet},
	} {
		if got := trackerStatus(counts{completed: tc.completed}, tc.required, tc.interrupted, tc.checked, 0.8); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestSeverity(t *testing.T) {
	q := QuotaConfig{}.withDefaults()
	for _, tc := range []struct {
		completed, required int
		want                string
	}{
		{3, 4, SeverityLow},       // 75 %
		{2, 4, SeverityHigh},      // 50 %: seed 002, scenario 2
		{1, 4, SeverityCritical},  // 25 %
		{0, 4, SeverityCritical},  // 0 %
		{9, 12, SeverityLow},      // 75 %
		{8, 12, SeverityMedium},   // 67 %
		{7, 12, SeverityMedium},   // 58 %
		{6, 12, SeverityHigh},     // 50 %
		{4, 12, SeverityHigh},     // 33 %
		{3, 12, SeverityCritical}, // 25 %
	} {
		if got := q.Severity(compliance(tc.completed, tc.required)); got != tc.want {
			t.Errorf("%d of %d: %s, want %s", tc.completed, tc.required, got, tc.want)
		}
	}
	custom := QuotaConfig{Threshold: 0.9, Low: 0.8, Medium: 0.6, High: 0.4}.withDefaults()
	if err := custom.validate(); err != nil || custom.Severity(0.5) != SeverityHigh || custom.Severity(0.85) != SeverityLow {
		t.Errorf("custom thresholds: %v %s %s", err, custom.Severity(0.5), custom.Severity(0.85))
	}
	if err := (QuotaConfig{Threshold: 0.8, Low: 0.9, Medium: 0.5, High: 0.3}).withDefaults().validate(); err == nil {
		t.Error("low above the threshold accepted")
	}
}

func TestBackoffIsBounded(t *testing.T) {
	n := NotifyConfig{}.withDefaults()
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 320 * time.Second, 10 * time.Minute, 10 * time.Minute}
	for i, w := range want {
		if got := n.backoff(i + 1); got != w {
			t.Errorf("backoff after attempt %d = %s, want %s", i+1, got, w)
		}
	}
}

func TestSignature(t *testing.T) {
	body := []byte(`{"id":"x"}`)
	now := time.Unix(1763719200, 0)
	h := http.Header{}
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(HeaderSignature, Sign("s3cret", now.Unix(), body))
	if err := VerifySignature("s3cret", h, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Errorf("valid signature refused: %v", err)
	}
	for name, check := range map[string]func() error{
		"wrong secret":   func() error { return VerifySignature("other", h, body, now, 5*time.Minute) },
		"changed body":   func() error { return VerifySignature("s3cret", h, []byte(`{"id":"y"}`), now, 5*time.Minute) },
		"replayed later": func() error { return VerifySignature("s3cret", h, body, now.Add(time.Hour), 5*time.Minute) },
		"no timestamp": func() error {
			return VerifySignature("s3cret", http.Header{HeaderSignature: h[HeaderSignature]}, body, now, 5*time.Minute)
		},
	} {
		if check() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
