// Package jsrouter runs handlers on Facho's provisioned durable pull
// consumers through watermill's message.Router: the router brings the
// middleware (Recoverer, Retry), this package brings a watermill Subscriber
// over jetstream.Consumer and a dead-letter path for malformed messages.
//
// watermill-nats is not used: its subscriber provisions consumers itself
// and its grouped consumer forces WorkQueue retention (see
// NOTES-JETSTREAM.md); ours binds to consumers streams.Provision created.
//
// # Every message ends
//
// No message is redelivered without bound, and an outage of the handlers'
// dependency (the database) loses nothing. For each delivery:
//
//   - the handler returns nil: the message is acked;
//   - it returns an error wrapping streams.ErrMalformed, or panics: the
//     message is dead-lettered at once (facho.dlq.<consumer>, with the
//     reason; see pkg/deadletter) and the consumer carries on;
//   - any other error is transient. The router asks Config.Health, given
//     the error. While Health fails (the database is down, or the error
//     says the database as a whole is unusable), the failure is not the
//     message's: the router holds the message (kept in progress, so it is
//     not redelivered), waits with backoff up to OutageBackoffMax and tries
//     again, without counting, for as long as the outage lasts. When Health
//     passes, the failure is the message's own (a deadlock, a value the
//     handler trips on): it is retried in place MaxRetries times, then
//     Nacked for a later delivery; on the MaxFailedDeliveries-th delivery
//     or a later one it is dead-lettered instead, with the reason "gave up
//     after N deliveries: <last error>";
//   - a message delivered more than MaxDeliveries times (whatever ended
//     the earlier deliveries: a message that crashes the process is
//     redelivered without ever failing) is dead-lettered before it is
//     handled, if Health passes then; during an outage (deliveries that
//     ended because the service restarted while the database was down)
//     it is handled and held as above.
//
// The server's MaxDeliver of these consumers is unlimited: the server
// cannot tell an outage from a bad message, and would silently drop the
// message. A dead letter that cannot be published (NATS itself down)
// leaves the message Nacked: it comes back.
package jsrouter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// Metadata keys set on every message.
const (
	MetaStream       = "stream"
	MetaConsumer     = "consumer"
	MetaStreamSeq    = "stream_seq"
	MetaSubject      = "subject"
	MetaNumDelivered = "num_delivered"
)

// SubscriberConfig tunes the subscriber. Zero values take defaults.
type SubscriberConfig struct {
	// NackDelay is how long JetStream waits before redelivering a message
	// the handler Nacked; default 5s.
	NackDelay time.Duration
	// FetchWait bounds one pull request, and so how long a shutdown may
	// wait for an idle fetch; default 1s.
	FetchWait time.Duration
	// InProgressEvery is how often a message still being handled gets an
	// in-progress ack so AckWait does not redeliver it; default a third
	// of streams.ProjectionAckWait.
	InProgressEvery time.Duration
}

// WithDefaults fills zero fields.
func (c SubscriberConfig) WithDefaults() SubscriberConfig {
	if c.NackDelay == 0 {
		c.NackDelay = 5 * time.Second
	}
	if c.FetchWait == 0 {
		c.FetchWait = time.Second
	}
	if c.InProgressEvery == 0 {
		c.InProgressEvery = streams.ProjectionAckWait / 3
	}
	return c
}

// Subscriber is a watermill message.Subscriber over durable pull consumers.
// A topic is "<stream>/<durable>" (see Topic). Each subscription has one
// message in flight: the next is fetched only after the handler acked or
// nacked the current one, so a consumer's messages are handled in stream
// order. (A Nack redelivers later through the server; for a strict order
// across Nacks and replicas the consumer needs MaxAckPending 1.)
type Subscriber struct {
	js  jetstream.JetStream
	cfg SubscriberConfig
	log zerolog.Logger

	closing   chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

var _ message.Subscriber = (*Subscriber)(nil)

// NewSubscriber returns a subscriber on js.
func NewSubscriber(js jetstream.JetStream, cfg SubscriberConfig, log zerolog.Logger) *Subscriber {
	return &Subscriber{js: js, cfg: cfg.WithDefaults(), log: log, closing: make(chan struct{})}
}

// Topic names the durable consumer durable of stream as a watermill topic.
func Topic(stream, durable string) string { return stream + "/" + durable }

// ParseTopic splits a topic made by Topic.
func ParseTopic(topic string) (stream, durable string, err error) {
	stream, durable, ok := strings.Cut(topic, "/")
	if !ok || stream == "" || durable == "" || strings.Contains(durable, "/") {
		return "", "", fmt.Errorf("topic %q: want <stream>/<durable>", topic)
	}
	return stream, durable, nil
}

// Subscribe binds to an existing durable consumer; it does not create one.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	stream, durable, err := ParseTopic(topic)
	if err != nil {
		return nil, err
	}
	select {
	case <-s.closing:
		return nil, errors.New("subscriber closed")
	default:
	}
	cons, err := s.js.Consumer(ctx, stream, durable)
	if err != nil {
		return nil, fmt.Errorf("bind consumer %s: %w", topic, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan *message.Message)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer close(out)
		s.consume(ctx, cons, stream, durable, out)
	}()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return out, nil
}

// Close ends every subscription and waits for them.
func (s *Subscriber) Close() error {
	s.closeOnce.Do(func() { close(s.closing) })
	s.wg.Wait()
	return nil
}

func (s *Subscriber) consume(ctx context.Context, cons jetstream.Consumer, stream, durable string, out chan<- *message.Message) {
	log := s.log.With().Str(telemetry.KeyConsumer, durable).Logger()
	for ctx.Err() == nil {
		jm, err := cons.Next(jetstream.FetchMaxWait(s.cfg.FetchWait))
		if err != nil {
			if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) {
				continue
			}
			log.Warn().Err(err).Msg("fetch failed; retrying")
			sleep(ctx, time.Second)
			continue
		}
		wm, err := toMessage(ctx, jm, durable)
		if err != nil {
			// No metadata means this is not a JetStream message: nothing
			// to ack or retry.
			log.Error().Err(err).Msg("skipping message without metadata")
			continue
		}
		select {
		case out <- wm:
		case <-ctx.Done():
			nakNow(jm, log)
			return
		}
		if !s.await(ctx, jm, wm, log) {
			return
		}
	}
}

// await settles jm the way the handler settled wm. It returns false when
// the subscription ends first; the message is then Nacked at once so the
// next consumer instance gets it without waiting for AckWait.
func (s *Subscriber) await(ctx context.Context, jm jetstream.Msg, wm *message.Message, log zerolog.Logger) bool {
	tick := time.NewTicker(s.cfg.InProgressEvery)
	defer tick.Stop()
	for {
		select {
		case <-wm.Acked():
			if err := jm.Ack(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
				log.Warn().Err(err).Str(telemetry.KeyStreamSeq, wm.Metadata.Get(MetaStreamSeq)).Msg("ack failed; the message will be redelivered")
			}
			return true
		case <-wm.Nacked():
			if err := jm.NakWithDelay(s.cfg.NackDelay); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
				log.Warn().Err(err).Str(telemetry.KeyStreamSeq, wm.Metadata.Get(MetaStreamSeq)).Msg("nak failed; the message will be redelivered after ack wait")
			}
			return true
		case <-tick.C:
			_ = jm.InProgress()
		case <-ctx.Done():
			nakNow(jm, log)
			return false
		}
	}
}

func nakNow(jm jetstream.Msg, log zerolog.Logger) {
	if err := jm.Nak(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		log.Debug().Err(err).Msg("nak on shutdown failed")
	}
}

type rawKey struct{}

// toMessage wraps jm; the original stays reachable through Raw(ctx) for
// dead-lettering, which needs to Term it.
func toMessage(ctx context.Context, jm jetstream.Msg, durable string) (*message.Message, error) {
	meta, err := jm.Metadata()
	if err != nil {
		return nil, fmt.Errorf("message metadata: %w", err)
	}
	id := jm.Headers().Get(jetstream.MsgIDHeader)
	if id == "" {
		id = meta.Stream + ":" + strconv.FormatUint(meta.Sequence.Stream, 10)
	}
	wm := message.NewMessage(id, jm.Data())
	wm.Metadata.Set(MetaStream, meta.Stream)
	wm.Metadata.Set(MetaConsumer, durable)
	wm.Metadata.Set(MetaStreamSeq, strconv.FormatUint(meta.Sequence.Stream, 10))
	wm.Metadata.Set(MetaSubject, jm.Subject())
	wm.Metadata.Set(MetaNumDelivered, strconv.FormatUint(meta.NumDelivered, 10))
	wm.SetContext(context.WithValue(ctx, rawKey{}, jm))
	return wm, nil
}

// Raw returns the JetStream message behind a message's context.
func Raw(ctx context.Context) (jetstream.Msg, bool) {
	jm, ok := ctx.Value(rawKey{}).(jetstream.Msg)
	return jm, ok
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
