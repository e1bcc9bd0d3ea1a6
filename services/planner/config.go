package planner

import (
	"errors"
	"fmt"
	"time"
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
	// PublishTimeout bounds one publish to JetStream.
	PublishTimeout time.Duration
	// Source names the planner in event envelopes.
	Source string
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
	if c.Source == "" {
		c.Source = "planner"
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
	if c.FirstRunDelay < 0 {
		errs = append(errs, fmt.Errorf("first run delay %s: want >= 0", c.FirstRunDelay))
	}
	if c.DelayedAfter < 0 {
		errs = append(errs, fmt.Errorf("delayed after %s: want >= 0", c.DelayedAfter))
	}
	if c.DiscoveryTimeoutSeconds < 1 || c.PollTimeoutSeconds < 1 {
		errs = append(errs, errors.New("default timeouts must be at least 1 s"))
	}
	if c.PublishTimeout <= 0 {
		errs = append(errs, fmt.Errorf("publish timeout %s: want > 0", c.PublishTimeout))
	}
	return errors.Join(errs...)
}
