package streams

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Per-stream limits. Every stream can be sized on its own with variables
// named after it: <STREAM>_MAX_AGE, <STREAM>_MAX_BYTES and
// <STREAM>_COMPRESSION (e.g. FACHO_ONU_MAX_AGE=8760h). They override the
// group defaults (FACHO_EVENTS_MAX_AGE, FACHO_STREAM_MAX_BYTES,
// FACHO_STREAM_COMPRESSION); FACHO_VARBINDS_MAX_AGE and
// FACHO_SCHEDULE_MAX_AGE are already of that form. Like the other stream
// variables, every service and `facho dev` read them (OptionsFromEnv).
const (
	// EnvCompression is the store compression of every stream: s2
	// (default with file storage) or none. Memory storage is never
	// compressed.
	EnvCompression = "FACHO_STREAM_COMPRESSION"
)

// Compression values.
const (
	CompressionS2   = "s2"
	CompressionNone = "none"
)

// EnvStreamMaxAge names stream's own max age variable.
func EnvStreamMaxAge(stream string) string { return stream + "_MAX_AGE" }

// EnvStreamMaxBytes names stream's own byte cap variable.
func EnvStreamMaxBytes(stream string) string { return stream + "_MAX_BYTES" }

// EnvStreamCompression names stream's own compression variable.
func EnvStreamCompression(stream string) string { return stream + "_COMPRESSION" }

// StreamLimits overrides one stream's limits; zero fields keep the
// defaults of Options.
type StreamLimits struct {
	MaxAge      time.Duration
	MaxBytes    int64  // bytes; -1: no cap
	Compression string // s2 or none; "": Options.Compression
}

// streamNamesForLimits lists the streams whose limits can be set.
func streamNamesForLimits() []string {
	return []string{StreamConfig, StreamSchedule, StreamExec, StreamVarbinds, StreamONU, StreamAudit, StreamDLQ, StreamNotify, StreamOLT, StreamAlert, StreamTrap}
}

// limitsFromEnv reads the compression and per-stream variables into o.
func limitsFromEnv(getenv func(string) string, o *Options) error {
	var errs []error
	if v := getenv(EnvCompression); v != "" {
		if v != CompressionS2 && v != CompressionNone {
			errs = append(errs, fmt.Errorf("%s: %q, want s2 or none", EnvCompression, v))
		}
		o.Compression = v
	}
	for _, name := range streamNamesForLimits() {
		var l StreamLimits
		set := false
		if k := EnvStreamMaxAge(name); k != EnvVarbindsMaxAge && k != EnvScheduleMaxAge {
			if v := getenv(k); v != "" {
				d, err := time.ParseDuration(v)
				if err != nil || d <= 0 {
					errs = append(errs, fmt.Errorf("%s: %q is not a positive duration (e.g. 720h)", k, v))
				}
				l.MaxAge, set = d, true
			}
		}
		if v := getenv(EnvStreamMaxBytes(name)); v != "" {
			n, err := ParseBytes(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", EnvStreamMaxBytes(name), err))
			}
			if n == 0 {
				n = -1 // 0: explicitly no cap
			}
			l.MaxBytes, set = n, true
		}
		if v := getenv(EnvStreamCompression(name)); v != "" {
			if v != CompressionS2 && v != CompressionNone {
				errs = append(errs, fmt.Errorf("%s: %q, want s2 or none", EnvStreamCompression(name), v))
			}
			l.Compression, set = v, true
		}
		if set {
			if o.Streams == nil {
				o.Streams = map[string]StreamLimits{}
			}
			o.Streams[name] = l
		}
	}
	return errors.Join(errs...)
}

// validateLimits checks the per-stream limits.
func (o Options) validateLimits() error {
	var errs []error
	if o.Compression != "" && o.Compression != CompressionS2 && o.Compression != CompressionNone {
		errs = append(errs, fmt.Errorf("compression %q: want s2 or none", o.Compression))
	}
	for name, l := range o.Streams {
		if l.MaxBytes > 0 && l.MaxBytes < 1<<20 {
			errs = append(errs, fmt.Errorf("stream %s max bytes %d: want no cap or at least 1 MiB", name, l.MaxBytes))
		}
		if l.MaxAge < 0 {
			errs = append(errs, fmt.Errorf("stream %s max age %s: want positive", name, l.MaxAge))
		}
		if l.Compression != "" && l.Compression != CompressionS2 && l.Compression != CompressionNone {
			errs = append(errs, fmt.Errorf("stream %s compression %q: want s2 or none", name, l.Compression))
		}
	}
	return errors.Join(errs...)
}

// withLimits applies the compression and the per-stream overrides.
func (o Options) withLimits(scs []jetstream.StreamConfig) []jetstream.StreamConfig {
	for i := range scs {
		sc := &scs[i]
		l := o.Streams[sc.Name]
		if l.MaxAge > 0 {
			sc.MaxAge = l.MaxAge
		}
		if l.MaxBytes != 0 {
			sc.MaxBytes = l.MaxBytes
		}
		c := o.Compression
		if l.Compression != "" {
			c = l.Compression
		}
		// S2 by default: it pays on every stream (JSON with repeated keys
		// and OIDs; see the README's retention figures). Memory storage
		// cannot be compressed.
		if o.Storage == jetstream.FileStorage && c != CompressionNone {
			sc.Compression = jetstream.S2Compression
		} else {
			sc.Compression = jetstream.NoCompression
		}
	}
	return scs
}
