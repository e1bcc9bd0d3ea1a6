package availability

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Config of the availability service. Zero fields take the defaults of
// WithDefaults.
type Config struct {
	// Instance names this replica (leader lease holder); default
	// availability-<hostname>-<pid>.
	Instance string
	// Source names the service in event envelopes; default availability.
	Source string
	// Recheck is the probe period of an unreachable or unavailable OLT;
	// default 15s.
	Recheck time.Duration
	// ProbeInterval is the probe period of an available OLT; default 60s.
	ProbeInterval time.Duration
	// UnavailableAfter is how long an OLT stays unreachable before it is
	// unavailable (no work is dispatched to it); default 45s.
	UnavailableAfter time.Duration
	// ProbeTimeout and ProbeRetries are one probe's SNMP timeout and
	// retries; default 2s and 1.
	ProbeTimeout time.Duration
	ProbeRetries int
	// Workers bounds the probes in flight; default 16.
	Workers int
	// RecoverProbes is how many consecutive answered probes re-enable an
	// auto-disabled OLT; default 3; negative: never.
	RecoverProbes int
	// Tick is the loop's period (unavailable transitions, due probes,
	// retried publishes); default 250ms.
	Tick time.Duration
	// PublishTimeout bounds one publish; default 5s.
	PublishTimeout time.Duration
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Instance == "" {
		host, _ := os.Hostname()
		c.Instance = fmt.Sprintf("availability-%s-%d", host, os.Getpid())
	}
	if c.Source == "" {
		c.Source = "availability"
	}
	if c.Recheck == 0 {
		c.Recheck = 15 * time.Second
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = 60 * time.Second
	}
	if c.UnavailableAfter == 0 {
		c.UnavailableAfter = 45 * time.Second
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = 2 * time.Second
	}
	if c.ProbeRetries == 0 {
		c.ProbeRetries = 1
	}
	if c.Workers == 0 {
		c.Workers = 16
	}
	if c.RecoverProbes == 0 {
		c.RecoverProbes = 3
	}
	if c.Tick == 0 {
		c.Tick = min(250*time.Millisecond, c.Recheck/2)
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 5 * time.Second
	}
	return c
}

// Validate checks the config after defaults.
func (c Config) Validate() error {
	var errs []error
	if c.Recheck < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("recheck %s: want at least 100ms", c.Recheck))
	}
	if c.ProbeInterval < c.Recheck {
		errs = append(errs, fmt.Errorf("probe interval %s: want at least the recheck %s", c.ProbeInterval, c.Recheck))
	}
	if c.UnavailableAfter < 0 {
		errs = append(errs, fmt.Errorf("unavailable after %s: want >= 0", c.UnavailableAfter))
	}
	if c.ProbeTimeout < 10*time.Millisecond || c.ProbeTimeout > time.Minute {
		errs = append(errs, fmt.Errorf("probe timeout %s: want 10ms..1m", c.ProbeTimeout))
	}
	if c.ProbeRetries < 0 || c.ProbeRetries > 5 {
		errs = append(errs, fmt.Errorf("probe retries %d: want 0..5", c.ProbeRetries))
	}
	if c.Workers < 1 || c.Workers > 1024 {
		errs = append(errs, fmt.Errorf("workers %d: want 1..1024", c.Workers))
	}
	if c.Tick < 10*time.Millisecond || c.Tick > c.Recheck {
		errs = append(errs, fmt.Errorf("tick %s: want 10ms..recheck", c.Tick))
	}
	if c.PublishTimeout <= 0 {
		errs = append(errs, errors.New("publish timeout must be positive"))
	}
	return errors.Join(errs...)
}

func (c Config) timings() Timings {
	return Timings{Recheck: c.Recheck, ProbeInterval: c.ProbeInterval, UnavailableAfter: c.UnavailableAfter}
}
