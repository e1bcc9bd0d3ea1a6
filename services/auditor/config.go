package auditor

import (
	"errors"
	"fmt"
	"time"
)

// Config of the auditor. Zero fields take the defaults of WithDefaults.
type Config struct {
	// LogFile is the rotating coordinator log file (seed 002:
	// logs/coordinator/main.log); "-" disables the file.
	LogFile string
	// LogMaxSizeMB and LogMaxBackups size the rotation (seed 002: 10 MB, 5).
	LogMaxSizeMB  int
	LogMaxBackups int
	// Retention is how long coordinator_logs rows are kept (seed 002: 7 days).
	Retention time.Duration
	// CleanupInterval is how often old rows are deleted (seed 002: daily).
	CleanupInterval time.Duration
	// FetchWait bounds one pull from a consumer, and so how long shutdown
	// may wait for an idle fetch; default 1s.
	FetchWait time.Duration
	// NackDelay is how long a message that failed for a transient reason
	// (database down) waits before redelivery, after the in-place retries;
	// default 5s.
	NackDelay time.Duration
	// Source names the auditor in dead-letter envelopes.
	Source string
	// Quota is the hourly quota check, Notify the notifications.
	Quota  QuotaConfig
	Notify NotifyConfig
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.LogFile == "" {
		c.LogFile = "logs/coordinator/main.log"
	}
	if c.LogMaxSizeMB == 0 {
		c.LogMaxSizeMB = 10
	}
	if c.LogMaxBackups == 0 {
		c.LogMaxBackups = 5
	}
	if c.Retention == 0 {
		c.Retention = 7 * 24 * time.Hour
	}
	if c.CleanupInterval == 0 {
		c.CleanupInterval = 24 * time.Hour
	}
	if c.FetchWait == 0 {
		c.FetchWait = time.Second
	}
	if c.NackDelay == 0 {
		c.NackDelay = 5 * time.Second
	}
	if c.Source == "" {
		c.Source = "auditor"
	}
	c.Quota = c.Quota.withDefaults()
	c.Notify = c.Notify.withDefaults()
	return c
}

// Validate checks the config after defaults.
func (c Config) Validate() error {
	var errs []error
	if c.LogMaxSizeMB < 1 || c.LogMaxBackups < 0 {
		errs = append(errs, fmt.Errorf("log rotation %d MB x %d backups: want >= 1 MB and >= 0 backups", c.LogMaxSizeMB, c.LogMaxBackups))
	}
	if c.Retention < time.Hour {
		errs = append(errs, fmt.Errorf("retention %s: want at least 1h", c.Retention))
	}
	if c.CleanupInterval < time.Second {
		errs = append(errs, fmt.Errorf("cleanup interval %s: want at least 1s", c.CleanupInterval))
	}
	if c.FetchWait < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("fetch wait %s: want at least 10ms", c.FetchWait))
	}
	if c.NackDelay <= 0 {
		errs = append(errs, errors.New("nak delay must be positive"))
	}
	errs = append(errs, c.Quota.validate(), c.Notify.validate())
	return errors.Join(errs...)
}
