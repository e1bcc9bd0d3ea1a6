package poller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// interruptedError is the cancellation cause of an execution the planner
// cancelled while it ran (its OLT was disabled or deleted).
type interruptedError struct{ reason string }

func (e *interruptedError) Error() string { return "interrupted: " + e.reason }

// cancels follows the facho_cancel bucket: one watcher per poller, which
// interrupts the registered running executions whose key gets a value of
// mode "all". A NodeDue is checked with a Get after it registers, so a
// cancellation put before the watcher saw it is not missed.
type cancels struct {
	kv      jetstream.KeyValue
	log     zerolog.Logger
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
}

func openCancels(ctx context.Context, js jetstream.JetStream, log zerolog.Logger) (*cancels, error) {
	kv, err := js.KeyValue(ctx, streams.BucketCancel)
	if err != nil {
		return nil, fmt.Errorf("open kv %s: %w", streams.BucketCancel, err)
	}
	return &cancels{kv: kv, log: log, running: map[string]context.CancelCauseFunc{}}, nil
}

// watch interrupts registered executions as their keys are put, until ctx
// ends.
func (c *cancels) watch(ctx context.Context) error {
	w, err := c.kv.Watch(ctx, "exec.*", jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("watch %s: %w", streams.BucketCancel, err)
	}
	go func() {
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				id := strings.TrimPrefix(e.Key(), "exec.")
				ec, err := decodeCancel(e.Value())
				if err != nil {
					c.log.Warn().Err(err).Str(telemetry.KeyExecution, id).Msg("unreadable cancellation")
					continue
				}
				if ec.Mode != streams.CancelAll {
					continue // a disabled task: a running execution goes on
				}
				c.mu.Lock()
				cancel := c.running[id]
				c.mu.Unlock()
				if cancel != nil {
					cancel(&interruptedError{reason: ec.Reason})
				}
			}
		}
	}()
	return nil
}

// register makes an execution interruptible and says whether it was
// cancelled already (then it must not start). unregister must follow.
func (c *cancels) register(ctx context.Context, id string, cancel context.CancelCauseFunc) (*streams.ExecutionCancel, error) {
	c.mu.Lock()
	c.running[id] = cancel
	c.mu.Unlock()
	e, err := c.kv.Get(ctx, streams.CancelKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
		// Not cancelled; an id that cannot be a key (the planner's are
		// UUIDs) cannot have been cancelled either.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read cancellation of %s: %w", id, err)
	}
	ec, err := decodeCancel(e.Value())
	if err != nil {
		return nil, err
	}
	return &ec, nil
}

func (c *cancels) unregister(id string) {
	c.mu.Lock()
	delete(c.running, id)
	c.mu.Unlock()
}

func decodeCancel(b []byte) (streams.ExecutionCancel, error) {
	var ec streams.ExecutionCancel
	if err := json.Unmarshal(b, &ec); err != nil {
		return ec, fmt.Errorf("decode cancellation: %w", err)
	}
	return ec, nil
}

// abort records a NodeDue the planner cancelled before it started as
// aborted, with a composite's chained executions (publishNotRunWhole), and
// acknowledges it; no SNMP request was sent.
func (p *poller) abort(work context.Context, msg jetstream.Msg, node streams.NodeDue, reason string, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(work), finalPublishTimeout)
	defer cancel()
	if err := p.publishNotRunWhole(ctx, node, streams.PhaseAborted, reason, time.Now().UTC()); err != nil {
		log.Warn().Err(err).Msg("publish execution aborted")
		nak(msg, p.cfg.TransientDelay, log)
		return
	}
	p.metrics.executions.WithLabelValues("aborted").Add(float64(1 + len(node.Chain)))
	log.Warn().Str("reason", reason).Int("chained", len(node.Chain)).Msg("node due aborted by the planner")
	if err := msg.DoubleAck(ctx); err != nil {
		log.Warn().Err(err).Msg("ack aborted node due")
	}
}
