package servicemain

import (
	"fmt"
	"strconv"
	"time"
)

// Env gives flags their environment fallbacks. A malformed value keeps the
// default and is remembered: it fails -check-config and the start-up, so a
// typo in the environment never goes unnoticed.
type Env struct {
	getenv func(string) string
	errs   []error
}

func newEnv(getenv func(string) string) *Env { return &Env{getenv: getenv} }

// String returns the variable key, or def when it is unset or empty.
func (e *Env) String(key, def string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return def
}

// Int returns the variable key as an integer, or def when it is unset.
func (e *Env) Int(key string, def int) int {
	v := e.getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s: %q is not an integer", key, v))
		return def
	}
	return n
}

// Duration returns the variable key as a duration (e.g. 500ms, 2s), or def
// when it is unset.
func (e *Env) Duration(key string, def time.Duration) time.Duration {
	v := e.getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s: %q is not a duration (e.g. 500ms, 2s)", key, v))
		return def
	}
	return d
}

func (e *Env) fail(err error) { e.errs = append(e.errs, err) }
