package streams

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Environment variables that size the streams. Every service provisions
// the streams at start-up with CreateOrUpdate, so every service must read
// the same values: they all call OptionsFromEnv.
const (
	EnvReplicas       = "FACHO_STREAM_REPLICAS"
	EnvStorage        = "FACHO_STREAM_STORAGE"
	EnvLeaseTTL       = "FACHO_LEASE_TTL"
	EnvPollersTTL     = "FACHO_POLLERS_TTL"
	EnvPollerAckWait  = "FACHO_POLLER_ACK_WAIT"
	EnvVarbindsMaxAge = "FACHO_VARBINDS_MAX_AGE"
	EnvScheduleMaxAge = "FACHO_SCHEDULE_MAX_AGE"
	EnvEventsMaxAge   = "FACHO_EVENTS_MAX_AGE"
	// EnvMaxBytes caps each stream but the configuration stream: bytes,
	// or a number with KiB, MiB or GiB (e.g. 256MiB); unset or 0: no cap.
	EnvMaxBytes  = "FACHO_STREAM_MAX_BYTES"
	EnvLeaderTTL = "FACHO_PLANNER_LEADER_TTL"
)

// OptionsFromEnv reads Options from the environment; unset variables take
// the defaults. The result is validated.
func OptionsFromEnv(getenv func(string) string) (Options, error) {
	var o Options
	var errs []error
	if v := getenv(EnvReplicas); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a number", EnvReplicas, v))
		}
		o.Replicas = n
	}
	switch v := getenv(EnvStorage); v {
	case "", "file":
		o.Storage = jetstream.FileStorage
	case "memory":
		o.Storage = jetstream.MemoryStorage
	default:
		errs = append(errs, fmt.Errorf("%s: %q, want file or memory", EnvStorage, v))
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{
		{EnvLeaseTTL, &o.LeaseTTL},
		{EnvPollersTTL, &o.PollersTTL},
		{EnvPollerAckWait, &o.PollerAckWait},
		{EnvVarbindsMaxAge, &o.VarbindsMaxAge},
		{EnvScheduleMaxAge, &o.ScheduleMaxAge},
		{EnvEventsMaxAge, &o.EventsMaxAge},
		{EnvLeaderTTL, &o.LeaderTTL},
	} {
		v := getenv(d.key)
		if v == "" {
			continue
		}
		dur, err := time.ParseDuration(v)
		if err != nil || dur <= 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive duration (e.g. 30s, 168h)", d.key, v))
			continue
		}
		*d.dst = dur
	}
	if v := getenv(EnvMaxBytes); v != "" {
		n, err := ParseBytes(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvMaxBytes, err))
		}
		o.MaxBytes = n
	}
	if err := limitsFromEnv(getenv, &o); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return o, err
	}
	o = o.WithDefaults()
	return o, o.Validate()
}

// ParseBytes reads a size: a whole number of bytes, or one with the suffix
// KiB, MiB or GiB.
func ParseBytes(v string) (int64, error) {
	num, mult := v, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size (e.g. 268435456 or 256MiB)", v)
	}
	return n * mult, nil
}
