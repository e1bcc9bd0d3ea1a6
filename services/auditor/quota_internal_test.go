package auditor

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

var h10 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func TestQuotaRequired(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval int
		first    time.Time
		want     int
	}{
		{"5-minute task, known before the hour", 300, h10.Add(-time.Hour), 12},
		{"15-minute task, known before the hour", 900, h10.Add(-time.Minute), 4},
		{"15-minute task first run at the hour", 900, h10, 4},
		{"15-minute task enabled at 10:07", 900, h10.Add(7 * time.Minute), 4},
		{"15-minute task enabled at 10:50", 900, h10.Add(50 * time.Minute), 1},
		{"60-second task enabled at 10:40", 60, h10.Add(40 * time.Minute), 20},
		{"2-hour task", 7200, h10.Add(-3 * time.Hour), 1},
		{"first run in a later hour (replay)", 900, h10.Add(2 * time.Hour), 4},
		{"no interval", 0, time.Time{}, 1},
	} {
		if got := quotaRequired(tc.interval, h10, tc.first); got != tc.want {
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
