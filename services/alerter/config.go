package alerter

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/facho-olt/facho/streams"
)

// Config of the alerter. Zero fields take the defaults of WithDefaults.
type Config struct {
	// RulesFile is the YAML rules file (FACHO_ALERT_RULES); "" ships the
	// defaults. Rules is what it holds (with the environment's globals in
	// Rules.Global); Run loads the file when Rules is empty.
	RulesFile string
	Rules     Rules
	// AlertmanagerURLs are the Alertmanager base URLs (e.g.
	// http://127.0.0.1:9093): alerts are posted to each one's
	// /api/v2/alerts. None: no Alertmanager.
	AlertmanagerURLs []string
	// ResendInterval: firing alerts are re-sent to Alertmanager this
	// often (it resolves an alert it stops hearing about after its
	// resolve_timeout, 5m by default); default 1m.
	ResendInterval time.Duration
	// Tick is how often held down alerts, calmed flapping ONUs and point
	// alerts are re-evaluated; default 1s.
	Tick time.Duration
	// QuotaAlertTTL: a quota_violation alert resolves after it; default 1h.
	QuotaAlertTTL time.Duration
	// PONGaugesOff turns the per-PON gauges (facho_pon_onus,
	// facho_pon_rx_dbm) off; they are on by default.
	PONGaugesOff bool
	// Limits bound the evaluation state.
	Limits Limits
	// Delivery: timeout of one request, retries with a doubling backoff.
	Timeout     time.Duration
	MaxAttempts int
	Backoff     time.Duration
	MaxBackoff  time.Duration
	// FetchWait, NackDelay and Source as the other consumers.
	FetchWait time.Duration
	NackDelay time.Duration
	Source    string
	// OutboxRetention: published alert events whose deliveries ended are
	// deleted from the outbox after it; default 7 days.
	OutboxRetention time.Duration
	// GroupMessages is how many waiting onu.changed events are evaluated
	// and committed in one transaction at most; default 1000.
	GroupMessages int
	// LeaderRetry is how often a standby replica tries to become the
	// active one; default 2s.
	LeaderRetry time.Duration
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.ResendInterval, time.Minute)
	def(&c.Tick, time.Second)
	def(&c.QuotaAlertTTL, time.Hour)
	def(&c.Timeout, 10*time.Second)
	def(&c.Backoff, 2*time.Second)
	def(&c.MaxBackoff, 5*time.Minute)
	def(&c.FetchWait, time.Second)
	def(&c.NackDelay, 5*time.Second)
	def(&c.LeaderRetry, 2*time.Second)
	def(&c.OutboxRetention, 7*24*time.Hour)
	if c.GroupMessages == 0 {
		c.GroupMessages = 1000
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 10
	}
	if c.Source == "" {
		c.Source = "alerter"
	}
	if c.Limits.MaxONUs == 0 {
		c.Limits.MaxONUs = 2_000_000
	}
	if c.Limits.MaxPONs == 0 {
		c.Limits.MaxPONs = 100_000
	}
	if c.Limits.MaxOLTs == 0 {
		c.Limits.MaxOLTs = 10_000
	}
	if c.Limits.MaxActive == 0 {
		c.Limits.MaxActive = 500_000
	}
	if c.Limits.MaxSilences == 0 {
		c.Limits.MaxSilences = 10_000
	}
	return c
}

// ParseURLs splits a comma-separated list of URLs.
func ParseURLs(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, strings.TrimRight(u, "/"))
		}
	}
	return out
}

// Validate checks the config after defaults.
func (c Config) Validate() error {
	var errs []error
	for _, u := range c.AlertmanagerURLs {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			errs = append(errs, fmt.Errorf("alertmanager URL %q: want http(s)://host[:port][/path]", redactURL(u)))
		}
	}
	if c.ResendInterval < time.Second {
		errs = append(errs, fmt.Errorf("resend interval %s: want >= 1s", c.ResendInterval))
	}
	if c.Tick < 10*time.Millisecond || c.Tick > time.Minute {
		errs = append(errs, fmt.Errorf("tick %s: want 10ms..1m", c.Tick))
	}
	if c.OutboxRetention < time.Hour {
		errs = append(errs, fmt.Errorf("outbox retention %s: want >= 1h", c.OutboxRetention))
	}
	if c.QuotaAlertTTL < time.Minute {
		errs = append(errs, fmt.Errorf("quota alert ttl %s: want >= 1m", c.QuotaAlertTTL))
	}
	if c.Timeout <= 0 || c.Backoff <= 0 || c.MaxBackoff < c.Backoff || c.MaxAttempts < 1 {
		errs = append(errs, errors.New("delivery: want timeout > 0, backoff > 0, max backoff >= backoff, max attempts >= 1"))
	}
	if c.FetchWait < 10*time.Millisecond || c.NackDelay <= 0 || c.LeaderRetry <= 0 {
		errs = append(errs, errors.New("want fetch wait >= 10ms, nak delay and leader retry > 0"))
	}
	if c.GroupMessages < 1 || c.GroupMessages > streams.ProjectionGroupMaxMessages {
		errs = append(errs, fmt.Errorf("group messages %d: want 1..%d", c.GroupMessages, streams.ProjectionGroupMaxMessages))
	}
	l := c.Limits
	if l.MaxONUs < 1 || l.MaxPONs < 1 || l.MaxOLTs < 1 || l.MaxActive < 1 || l.MaxSilences < 1 {
		errs = append(errs, errors.New("limits must be positive"))
	}
	if err := c.Rules.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("alert rules: %w", err))
	}
	return errors.Join(errs...)
}

// redactURL drops a URL's user info (it may hold a password).
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparseable)"
	}
	p.User = nil
	return p.String()
}
