package jsrouter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// GaveUpError is why the router dead-lettered a message that did not fail
// as malformed: it kept failing while the dependency was healthy, or it
// was delivered too often without ever ending.
type GaveUpError struct {
	Deliveries uint64
	Last       error // the last handler error; nil when not handled
}

func (e *GaveUpError) Error() string {
	if e.Last == nil {
		return fmt.Sprintf("gave up after %d deliveries: never finished handling it (the consumer stopped or crashed each time)", e.Deliveries)
	}
	return fmt.Sprintf("gave up after %d deliveries: %v", e.Deliveries, e.Last)
}

func (e *GaveUpError) Unwrap() error { return e.Last }

// bound runs the handler of one delivery to an end: success, an error to
// dead-letter (malformed, panic, GaveUpError), or a transient error that
// NAKs the message for a later delivery. See the package doc for the rule.
func (r *Router) bound(h message.HandlerFunc) message.HandlerFunc {
	return func(wm *message.Message) ([]*message.Message, error) {
		ctx := wm.Context()
		consumer := wm.Metadata.Get(MetaConsumer)
		delivered, _ := strconv.ParseUint(wm.Metadata.Get(MetaNumDelivered), 10, 64)
		log := r.cfg.Log.With().Str(telemetry.KeyConsumer, consumer).Str(telemetry.KeyStreamSeq, wm.Metadata.Get(MetaStreamSeq)).Logger()
		if delivered > uint64(r.cfg.MaxDeliveries) {
			// Only while the dependency is healthy: deliveries that ended
			// because the service restarted during an outage are not this
			// message's fault, so it is handled (and held) as usual.
			herr := r.health(ctx, nil)
			if herr == nil {
				return nil, &GaveUpError{Deliveries: delivered - 1}
			}
			log.Warn().AnErr("health", herr).Uint64("deliveries", delivered).Msg("delivery bound reached during an outage; handling the message anyway")
		}
		retries := 0
		backoff := r.cfg.RetryInitial
		outage := time.Duration(0) // the current wait while the dependency is down; 0: it is up
		for {
			out, err := h(wm)
			if err == nil || final(err) {
				return out, err
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("stopped while handling: %w", err)
			}
			if herr := r.health(ctx, err); herr != nil {
				// An outage: the failure is not this message's, so it does
				// not count. Hold the message (the subscriber keeps it in
				// progress) and try again once the dependency is back.
				if outage == 0 {
					outage = r.cfg.RetryInitial
					r.metrics.waiting.WithLabelValues(consumer).Set(1)
					log.Warn().Err(err).AnErr("health", herr).Msg("dependency unavailable; holding the message until it is back")
				} else {
					outage = min(2*outage, r.cfg.OutageBackoffMax)
				}
				r.metrics.outageRetries.WithLabelValues(consumer).Inc()
				if !sleep(ctx, outage) {
					r.metrics.waiting.WithLabelValues(consumer).Set(0)
					return nil, fmt.Errorf("stopped while the dependency was unavailable: %w", err)
				}
				continue
			}
			if outage != 0 {
				outage = 0
				r.metrics.waiting.WithLabelValues(consumer).Set(0)
				log.Info().Msg("dependency available again")
			}
			// The dependency is healthy: the failure is this message's.
			if retries < r.cfg.MaxRetries {
				retries++
				log.Debug().Err(err).Int("retry", retries).Msg("handler failed; retrying in place")
				if !sleep(ctx, backoff) {
					return nil, fmt.Errorf("stopped while retrying: %w", err)
				}
				backoff = min(2*backoff, r.cfg.RetryMax)
				continue
			}
			if delivered >= uint64(r.cfg.MaxFailedDeliveries) {
				return nil, &GaveUpError{Deliveries: delivered, Last: err}
			}
			return nil, err
		}
	}
}

// final reports whether err ends the message at once (dead letter): it
// can never pass.
func final(err error) bool {
	var panicErr middleware.RecoveredPanicError
	var gaveUp *GaveUpError
	return errors.Is(err, streams.ErrMalformed) || errors.As(err, &panicErr) || errors.As(err, &gaveUp)
}

// health runs the Health check with its timeout; nil when none is set.
func (r *Router) health(ctx context.Context, cause error) error {
	if r.cfg.Health == nil {
		return nil
	}
	hctx, cancel := context.WithTimeout(ctx, r.cfg.HealthTimeout)
	defer cancel()
	return r.cfg.Health(hctx, cause)
}
