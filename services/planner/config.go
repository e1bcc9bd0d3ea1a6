package planner

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Config of the planner. Zero fields take the defaults of WithDefaults.
type Config struct {
	// Tick is how often due nodes are looked for (seed 004: every second).
	Tick time.Duration
	// FirstRunDelay is how long after it becomes plannable a node first runs
	// (seed 003: about one minute; no catch-up).
	FirstRunDelay time.Duration
	// DelayedAfter is how late a due node must be to count as delayed and be
	// sorted before on-time nodes.
	DelayedAfter time.Duration
	// DiscoveryTimeoutSeconds is the timeout of discovery, walk and bulkwalk
	// jobs that set none (seed 001: 300 s).
	DiscoveryTimeoutSeconds int
	// PollTimeoutSeconds is the timeout of get jobs that set none (seed 001:
	// 60 s).
	PollTimeoutSeconds int
	// FirstRunSpread bounds the per-node offset added to the first runs of
	// nodes that become plannable together (within a minute of another: a
	// job enabled on 1,000 OLTs, or a script adding OLTs one by one) so
	// they do not fire together: a node's offset is a hash of its id in
	// [0, min(interval, FirstRunSpread)). A node enabled alone gets none.
	// Negative: no spread.
	FirstRunSpread time.Duration
	// StuckGrace: a flight whose terminal event has not come by
	// dispatch + interval + timeout + StuckGrace is ended by the planner
	// (a safety net; the poller ends every NodeDue).
	StuckGrace time.Duration
	// RetryBackoff is the seed 001 retry class: the delay before retry n
	// is RetryBackoff[n-1] (the last one repeats). A job with
	// retry_delay_seconds > 0 uses that delay doubled at each retry
	// instead (300 s gives 300, 600, 1200 s). Default 300 s, 600 s, 1200 s.
	RetryBackoff []time.Duration
	// ClassRetries are the retries of a failed execution per queue class
	// when its job sets no max_retries (seed 001: discovery 3, polling 2),
	// and the retry class's ceiling (3). Zero fields take those defaults;
	// negative: none.
	ClassRetries ClassRetries
	// DisableAfterFailures is how many consecutive failed executions (after
	// their retries) disable an OLT (seed 001: 3). Negative: never.
	DisableAfterFailures int
	// PublishTimeout bounds one publish to JetStream.
	PublishTimeout time.Duration
	// Source names the planner in event envelopes.
	Source string
	// Instance names this replica as the holder of the leader lease.
	// Default "planner-" and a random suffix.
	Instance string
	// ONUKnownRecheck is how often, at most, the planner looks up whether
	// an OLT whose get it holds has an ONU known yet (getfirst.go), while
	// a discovery of the OLT has just succeeded; 30 times less often
	// otherwise. Default 1 s.
	ONUKnownRecheck time.Duration
	// ONUFoldWait is how long after an OLT's discovery succeeded its gets
	// still wait for its first ONU to be known (the projector folding the
	// discovery), when none is known yet. Default 5 min: a projector
	// behind by more than the old 30 s (a whole fleet's first discovery
	// on a busy box) made new OLTs' gets fail no_onus_known, failures
	// that count towards the auto-disable though the OLT answered. The
	// hold never outlasts the get's interval past its scheduled time.
	ONUFoldWait time.Duration
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Tick == 0 {
		c.Tick = time.Second
	}
	if c.FirstRunDelay == 0 {
		c.FirstRunDelay = 60 * time.Second
	}
	if c.DelayedAfter == 0 {
		c.DelayedAfter = 2 * time.Second
	}
	if c.DiscoveryTimeoutSeconds == 0 {
		c.DiscoveryTimeoutSeconds = 300
	}
	if c.PollTimeoutSeconds == 0 {
		c.PollTimeoutSeconds = 60
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 5 * time.Second
	}
	if c.FirstRunSpread == 0 {
		c.FirstRunSpread = 15 * time.Minute
	}
	if len(c.RetryBackoff) == 0 {
		c.RetryBackoff = []time.Duration{300 * time.Second, 600 * time.Second, 1200 * time.Second}
	}
	c.ClassRetries = c.ClassRetries.withDefaults()
	if c.DisableAfterFailures == 0 {
		c.DisableAfterFailures = 3
	}
	if c.StuckGrace == 0 {
		c.StuckGrace = 5 * time.Minute
	}
	if c.Source == "" {
		c.Source = "planner"
	}
	if c.Instance == "" {
		c.Instance = "planner-" + uuid.NewString()[:8]
	}
	if c.ONUKnownRecheck == 0 {
		c.ONUKnownRecheck = time.Second
	}
	if c.ONUFoldWait == 0 {
		c.ONUFoldWait = 5 * time.Minute
	}
	return c
}

// Validate checks the config after defaults.
func (c Config) Validate() error {
	var errs []error
	if c.Tick < time.Millisecond || c.Tick > time.Second {
		// Above one second the planner would not react to changes within 1 s.
		errs = append(errs, fmt.Errorf("tick %s: want 1ms..1s", c.Tick))
	}
	if c.ONUKnownRecheck < time.Millisecond || c.ONUKnownRecheck > time.Minute {
		errs = append(errs, fmt.Errorf("onu known recheck %s: want 1ms..1m", c.ONUKnownRecheck))
	}
	if c.ONUFoldWait < 0 {
		errs = append(errs, fmt.Errorf("onu fold wait %s: want >= 0", c.ONUFoldWait))
	}
	if c.FirstRunDelay < 0 {
		errs = append(errs, fmt.Errorf("first run delay %s: want >= 0", c.FirstRunDelay))
	}
	if c.DelayedAfter < 0 {
		errs = append(errs, fmt.Errorf("delayed after %s: want >= 0", c.DelayedAfter))
	}
	if c.DiscoveryTimeoutSeconds < 1 || c.PollTimeoutSeconds < 1 {
		errs = append(errs, errors.New("default timeouts must be at least 1 s"))
	}
	for _, r := range []struct {
		class string
		n     int
	}{{"discovery", c.ClassRetries.Discovery}, {"polling", c.ClassRetries.Polling}, {"retry", c.ClassRetries.Retry}} {
		if r.n > MaxJobRetries {
			errs = append(errs, fmt.Errorf("class %s max retries %d: want at most %d (negative: none)", r.class, r.n, MaxJobRetries))
		}
	}
	for _, d := range c.RetryBackoff {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("retry backoff %s: want > 0", d))
		}
	}
	if c.StuckGrace < 0 {
		errs = append(errs, fmt.Errorf("stuck grace %s: want > 0", c.StuckGrace))
	}
	if c.PublishTimeout <= 0 {
		errs = append(errs, fmt.Errorf("publish timeout %s: want > 0", c.PublishTimeout))
	}
	return errors.Join(errs...)
}

// retryDelay is the delay before retry n (1-based) of a node.
func (c Config) retryDelay(spec NodeSpec, n int) time.Duration {
	if spec.RetryDelaySeconds > 0 {
		return time.Duration(spec.RetryDelaySeconds) * time.Second << min(n-1, 16)
	}
	return c.RetryBackoff[min(n, len(c.RetryBackoff))-1]
}
