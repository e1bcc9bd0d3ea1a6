package planner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/telemetry"
)

// follow reads stream with an ordered consumer of cfg and hands what
// decode makes of each message to out until ctx ends or the returned stop
// is called. A message decode refuses (err) is logged and skipped; one it
// has no use for (ok false) is skipped. what names the reading in logs and
// errors.
func follow[T any](ctx context.Context, p *planner, stream, what string, cfg jetstream.OrderedConsumerConfig,
	decode func(data []byte) (v T, ok bool, err error), out chan<- T) (stop func(), err error) {
	cons, err := p.js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("planner: ordered consumer for %s on %s: %w", what, stream, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("planner: consume %s on %s: %w", what, stream, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := it.Next()
			if err != nil {
				if errors.Is(err, jetstream.ErrMsgIteratorClosed) || ctx.Err() != nil {
					return
				}
				p.log.Warn().Err(err).Msg("read " + what)
				select {
				case <-ctx.Done():
					return
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
			v, ok, err := decode(msg.Data())
			if err != nil {
				p.log.Warn().Err(err).Str(telemetry.KeySubject, msg.Subject()).Msg("skip malformed " + what)
				continue
			}
			if !ok {
				continue
			}
			select {
			case out <- v:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { it.Stop(); <-done }, nil
}
