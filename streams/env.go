package streams

import (
	"errors"
	"fmt"
	"strconv"
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
	EnvPollerAckWait  = "FACHO_POLLER_ACK_WAIT"
	EnvVarbindsMaxAge = "FACHO_VARBINDS_MAX_AGE"
	EnvScheduleMaxAge = "FACHO_SCHEDULE_MAX_AGE"
	EnvEventsMaxAge   = "FACHO_EVENTS_MAX_AGE"
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
		{EnvPollerAckWait, &o.PollerAckWait},
		{EnvVarbindsMaxAge, &o.VarbindsMaxAge},
		{EnvScheduleMaxAge, &o.ScheduleMaxAge},
		{EnvEventsMaxAge, &o.EventsMaxAge},
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
	if err := errors.Join(errs...); err != nil {
		return o, err
	}
	o = o.WithDefaults()
	return o, o.Validate()
}
