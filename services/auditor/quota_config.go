package auditor

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// QuotaConfig is the hourly quota check (seed 002/003). Zero fields take
// the defaults of withDefaults.
type QuotaConfig struct {
	// Threshold: a tracker whose compliance (completed / required) is
	// below it is a violation (seed 002: 80 %).
	Threshold float64
	// Low, Medium and High are the lowest compliance of each severity; a
	// violation below High is CRITICAL (defaults 0.70, 0.55, 0.30).
	Low, Medium, High float64
	// Grace is how long after the end of its hour a tracker is checked,
	// so the hour's last executions can end (default 5m).
	Grace time.Duration
	// CheckEvery is how often the check looks for ended hours (default
	// 1m).
	CheckEvery time.Duration
	// Retention is how long trackers, their executions and the
	// notification outbox are kept (default 90 days; violations are kept).
	// The daily cleanup of the coordinator logs deletes older rows.
	Retention time.Duration
}

func (q QuotaConfig) withDefaults() QuotaConfig {
	if q.Threshold == 0 {
		q.Threshold = 0.8
	}
	if q.Low == 0 {
		q.Low = 0.70
	}
	if q.Medium == 0 {
		q.Medium = 0.55
	}
	if q.High == 0 {
		q.High = 0.30
	}
	if q.Grace == 0 {
		q.Grace = 5 * time.Minute
	}
	if q.CheckEvery == 0 {
		q.CheckEvery = time.Minute
	}
	if q.Retention == 0 {
		q.Retention = 90 * 24 * time.Hour
	}
	return q
}

func (q QuotaConfig) validate() error {
	var errs []error
	if !(q.Threshold > 0 && q.Threshold <= 1) {
		errs = append(errs, fmt.Errorf("quota threshold %g: want 0 < threshold <= 1", q.Threshold))
	}
	if !(q.Threshold >= q.Low && q.Low >= q.Medium && q.Medium >= q.High && q.High >= 0) {
		errs = append(errs, fmt.Errorf("quota severities low %g, medium %g, high %g: want threshold >= low >= medium >= high >= 0", q.Low, q.Medium, q.High))
	}
	if q.Grace < 0 {
		errs = append(errs, fmt.Errorf("quota grace %s: want >= 0", q.Grace))
	}
	if q.Retention < 2*time.Hour+q.Grace {
		errs = append(errs, fmt.Errorf("quota retention %s: want at least 2h plus the grace", q.Retention))
	}
	if q.CheckEvery < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("quota check interval %s: want at least 10ms", q.CheckEvery))
	}
	return errors.Join(errs...)
}

// NotifyConfig is how notifications are published and delivered to
// webhooks. Zero fields take the defaults of withDefaults.
type NotifyConfig struct {
	// FailureStreak: this many consecutive final failures of an OLT's
	// executions are notified (default 3, the seeds' failure count).
	FailureStreak int
	// MaxAttempts bounds a webhook delivery: it ends failed after this
	// many attempts (default 6).
	MaxAttempts int
	// Backoff is the wait after the first failed attempt, doubled after
	// each further one up to MaxBackoff (defaults 10s, 10m): with the
	// defaults a delivery is given up about 5 minutes after the first try.
	Backoff, MaxBackoff time.Duration
	// Timeout bounds one webhook request and one publish (default 10s).
	Timeout time.Duration
	// PublishEvery and DeliverEvery are how often the outbox and the due
	// deliveries are looked at (default 1s).
	PublishEvery, DeliverEvery time.Duration
	// Client sends the webhook requests (default: an http.Client with
	// Timeout).
	Client *http.Client `json:"-"`
}

func (n NotifyConfig) withDefaults() NotifyConfig {
	if n.FailureStreak == 0 {
		n.FailureStreak = 3
	}
	if n.MaxAttempts == 0 {
		n.MaxAttempts = 6
	}
	if n.Backoff == 0 {
		n.Backoff = 10 * time.Second
	}
	if n.MaxBackoff == 0 {
		n.MaxBackoff = 10 * time.Minute
	}
	if n.Timeout == 0 {
		n.Timeout = 10 * time.Second
	}
	if n.PublishEvery == 0 {
		n.PublishEvery = time.Second
	}
	if n.DeliverEvery == 0 {
		n.DeliverEvery = time.Second
	}
	return n
}

func (n NotifyConfig) validate() error {
	var errs []error
	if n.FailureStreak < 1 {
		errs = append(errs, fmt.Errorf("failure streak %d: want at least 1", n.FailureStreak))
	}
	if n.MaxAttempts < 1 || n.MaxAttempts > 100 {
		errs = append(errs, fmt.Errorf("webhook max attempts %d: want 1..100", n.MaxAttempts))
	}
	if n.Backoff <= 0 || n.MaxBackoff < n.Backoff {
		errs = append(errs, fmt.Errorf("webhook backoff %s..%s: want 0 < backoff <= max backoff", n.Backoff, n.MaxBackoff))
	}
	if n.Timeout < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("webhook timeout %s: want at least 10ms", n.Timeout))
	}
	if n.PublishEvery < 10*time.Millisecond || n.DeliverEvery < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("notification intervals %s, %s: want at least 10ms", n.PublishEvery, n.DeliverEvery))
	}
	return errors.Join(errs...)
}

// backoff is the wait after failed attempt number attempt (1-based).
func (n NotifyConfig) backoff(attempt int) time.Duration {
	d := n.Backoff
	for i := 1; i < attempt && d < n.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, n.MaxBackoff)
}
