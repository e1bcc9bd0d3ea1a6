package api

import (
	"errors"
	"fmt"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
)

// Config of the API. Zero fields take the defaults of WithDefaults.
type Config struct {
	// Addr is where the API listens.
	Addr string
	// Tokens are static bearer tokens (Authorization: Bearer <token>) that
	// act as an admin, for scripts (FACHO_API_TOKENS); optional: users
	// create their own tokens in the console.
	Tokens []string
	// PublishTimeout bounds one publish or lookup on JetStream.
	PublishTimeout time.Duration
	// QueryTimeout bounds one read-model query.
	QueryTimeout time.Duration
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// Source names the API in event envelopes.
	Source string
	// ProfilesDir is a folder of vendor profiles (*.yaml) added to the
	// built-in ones (FACHO_PROFILES_DIR); empty: built-in only.
	ProfilesDir string
	// DetectTimeout bounds the SNMP GET of brand_id "auto".
	DetectTimeout time.Duration
	// Throttle limits failed console logins per (username, client IP)
	// and per client IP, and requests with unknown bearer tokens per
	// client IP; its trusted proxies also say when a request came over
	// TLS (Secure session cookie) (FACHO_API_LOGIN_MAX_FAILURES,
	// FACHO_API_LOGIN_MAX_FAILURES_PER_ADDRESS, FACHO_API_TOKEN_MAX_FAILURES,
	// FACHO_API_AUTH_WINDOW, FACHO_API_AUTH_MAX_KEYS,
	// FACHO_API_TRUSTED_PROXIES).
	Throttle auth.ThrottleConfig
	// MaxSilence bounds how long a silence of alerts lasts
	// (FACHO_API_MAX_SILENCE; default 30 days).
	MaxSilence time.Duration
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 5 * time.Second
	}
	if c.QueryTimeout == 0 {
		c.QueryTimeout = 10 * time.Second
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.Source == "" {
		c.Source = "api"
	}
	if c.DetectTimeout == 0 {
		c.DetectTimeout = 3 * time.Second
	}
	c.Throttle = c.Throttle.WithDefaults()
	if c.MaxSilence == 0 {
		c.MaxSilence = 30 * 24 * time.Hour
	}
	return c
}

// Validate checks the config after defaults.
func (c Config) Validate() error {
	var errs []error
	for i, t := range c.Tokens {
		if len(t) < 16 {
			errs = append(errs, fmt.Errorf("token %d: shorter than 16 characters", i+1)) // never echo a token
		}
	}
	if c.PublishTimeout <= 0 || c.QueryTimeout <= 0 {
		errs = append(errs, errors.New("timeouts must be positive"))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("max body %d bytes: want at least 1024", c.MaxBodyBytes))
	}
	if c.MaxSilence < time.Minute {
		errs = append(errs, fmt.Errorf("max silence %s: want at least 1m", c.MaxSilence))
	}
	if err := c.Throttle.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
