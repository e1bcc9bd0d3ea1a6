package jsrouter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/deadletter"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// Msg is what a Handler sees of one stream message.
type Msg struct {
	Stream       string
	Consumer     string
	Subject      string
	Seq          uint64 // stream sequence
	NumDelivered uint64
	Data         []byte
	Header       nats.Header
	// Time is when the stream stored the message (zero: not known).
	Time time.Time
	// Raw is the JetStream message, for what the router does not cover
	// (e.g. InProgress on very long work). Do not Ack or Nak it: the
	// router does.
	Raw jetstream.Msg

	outcome *string // where SetOutcome writes; nil outside a Router
}

// SetOutcome names what handling m did, for the outcome label of
// facho_consumer_messages_total when the handler returns nil (default
// OutcomeAcked). Use the Outcome constants. Outside a Router it does
// nothing.
func (m Msg) SetOutcome(outcome string) {
	if m.outcome != nil {
		*m.outcome = outcome
	}
}

// Handler handles one message. Return nil to ack it; an error wrapping
// streams.ErrMalformed to dead-letter it (facho.dlq.<consumer>, with the
// error as reason) and carry on; any other error is transient: retried in
// place, then Nacked with a delay, within the bounds of the package doc.
type Handler func(ctx context.Context, m Msg) error

// Config of a Router. Zero values take defaults.
type Config struct {
	// Source names the service in dead-letter envelopes.
	Source string
	SubscriberConfig
	// MaxRetries is how many times a transient error is retried in place
	// (dependency healthy) before the message is Nacked; default 3.
	MaxRetries int
	// Health says whether the handlers' dependency (the database) is
	// available, given the error a handler just returned: nil when it is,
	// so the failure is the message's own and counts; an error when it is
	// not (an outage), so the router holds the message, waits with backoff
	// and retries it without counting. Nil: every failure counts.
	Health func(ctx context.Context, cause error) error
	// HealthTimeout bounds one Health call; default 5s.
	HealthTimeout time.Duration
	// OutageBackoffMax caps the wait between tries while Health fails, and
	// so how long a held message may wait after the dependency is back;
	// default 5s.
	OutageBackoffMax time.Duration
	// MaxFailedDeliveries: a message that still fails, dependency healthy,
	// after its in-place retries on this delivery or a later one is
	// dead-lettered ("gave up after N deliveries: <last error>"); default
	// streams.MaxFailedDeliveries.
	MaxFailedDeliveries int
	// MaxDeliveries: a message delivered more often than this is
	// dead-lettered before it is handled (it never ended: e.g. it crashes
	// the consumer); default streams.MaxDeliveries.
	MaxDeliveries int
	// RetryInitial and RetryMax bound the in-place retry backoff; default
	// 100ms and 2s.
	RetryInitial time.Duration
	RetryMax     time.Duration
	// CloseTimeout bounds how long shutdown waits for handlers; default 15s.
	CloseTimeout time.Duration
	Log          zerolog.Logger
	// Registry receives the router's metrics; nil: not registered.
	Registry prometheus.Registerer
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	c.SubscriberConfig = c.SubscriberConfig.WithDefaults()
	if c.MaxRetries == 0 {
		c.MaxRetries = 3
	}
	if c.RetryInitial == 0 {
		c.RetryInitial = 100 * time.Millisecond
	}
	if c.RetryMax == 0 {
		c.RetryMax = 2 * time.Second
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = 15 * time.Second
	}
	if c.HealthTimeout == 0 {
		c.HealthTimeout = 5 * time.Second
	}
	if c.OutageBackoffMax == 0 {
		c.OutageBackoffMax = 5 * time.Second
	}
	if c.MaxFailedDeliveries == 0 {
		c.MaxFailedDeliveries = streams.MaxFailedDeliveries
	}
	if c.MaxDeliveries == 0 {
		c.MaxDeliveries = streams.MaxDeliveries
	}
	return c
}

// Router runs Handlers on durable consumers.
type Router struct {
	js      jetstream.JetStream
	cfg     Config
	router  *message.Router
	sub     *Subscriber
	metrics *metrics
}

// New builds a router; add handlers with Handle, then Run.
func New(js jetstream.JetStream, cfg Config) (*Router, error) {
	cfg = cfg.WithDefaults()
	if cfg.Source == "" {
		return nil, errors.New("jsrouter: source is required")
	}
	if cfg.MaxRetries < 0 || cfg.MaxFailedDeliveries < 1 || cfg.MaxDeliveries < cfg.MaxFailedDeliveries {
		return nil, fmt.Errorf("jsrouter: want max retries >= 0 (%d) and 1 <= max failed deliveries (%d) <= max deliveries (%d)",
			cfg.MaxRetries, cfg.MaxFailedDeliveries, cfg.MaxDeliveries)
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	wr, err := message.NewRouter(message.RouterConfig{CloseTimeout: cfg.CloseTimeout}, logAdapter{cfg.Log})
	if err != nil {
		return nil, fmt.Errorf("jsrouter: new router: %w", err)
	}
	r := &Router{js: js, cfg: cfg, router: wr, sub: NewSubscriber(js, cfg.SubscriberConfig, cfg.Log), metrics: m}
	// First added runs outermost: count the outcome; dead-letter what
	// ends as malformed, panicked or given up; bound the tries (retry in
	// place, hold through an outage, give up); recover panics.
	wr.AddMiddleware(
		r.countOutcome,
		r.deadLetter,
		r.bound,
		middleware.Recoverer,
	)
	return r, nil
}

// Handle runs h on the durable consumer durable of stream, which
// streams.Provision must have created.
func (r *Router) Handle(stream, durable string, h Handler) {
	r.router.AddConsumerHandler(durable, Topic(stream, durable), r.sub, func(wm *message.Message) error {
		m, err := fromMessage(wm)
		if err != nil {
			return fmt.Errorf("%w: %v", streams.ErrMalformed, err)
		}
		var outcome string
		m.outcome = &outcome
		if err := h(wm.Context(), m); err != nil {
			return err
		}
		if outcome != "" {
			wm.Metadata.Set(metaOutcome, outcome)
		}
		return nil
	})
}

// Run handles messages until ctx ends, then waits for the handlers in
// flight (up to CloseTimeout) and returns nil.
func (r *Router) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- r.router.Run(ctx) }()
	// Close only a router that is running: watermill counts a handler from
	// AddHandler on, so closing one whose start-up failed (a subscription
	// refused because ctx ended meanwhile) waits for a handler that never
	// ran, until CloseTimeout.
	select {
	case err := <-errc:
		_ = r.sub.Close()
		switch {
		case ctx.Err() != nil:
			return nil // stopped while starting: a clean stop
		case err != nil:
			return fmt.Errorf("jsrouter: %w", err)
		}
		return errors.New("jsrouter: every handler stopped")
	case <-r.router.Running():
	}
	select {
	case err := <-errc:
		_ = r.sub.Close()
		if err != nil {
			return fmt.Errorf("jsrouter: %w", err)
		}
		if ctx.Err() == nil {
			return errors.New("jsrouter: every handler stopped")
		}
		return nil
	case <-ctx.Done():
	}
	if err := r.router.Close(); err != nil {
		return fmt.Errorf("jsrouter: close: %w", err)
	}
	if err := <-errc; err != nil {
		return fmt.Errorf("jsrouter: %w", err)
	}
	return r.sub.Close()
}

// Running is closed once every handler is subscribed.
func (r *Router) Running() <-chan struct{} { return r.router.Running() }

func fromMessage(wm *message.Message) (Msg, error) {
	jm, ok := Raw(wm.Context())
	if !ok {
		return Msg{}, errors.New("no jetstream message in context")
	}
	seq, err := strconv.ParseUint(wm.Metadata.Get(MetaStreamSeq), 10, 64)
	if err != nil {
		return Msg{}, fmt.Errorf("stream seq: %w", err)
	}
	nd, _ := strconv.ParseUint(wm.Metadata.Get(MetaNumDelivered), 10, 64)
	return Msg{
		Stream:       wm.Metadata.Get(MetaStream),
		Consumer:     wm.Metadata.Get(MetaConsumer),
		Subject:      wm.Metadata.Get(MetaSubject),
		Seq:          seq,
		NumDelivered: nd,
		Data:         wm.Payload,
		Header:       jm.Headers(),
		Raw:          jm,
	}, nil
}

// deadLetter sends malformed messages, panics and messages the router
// gave up on to facho.dlq.<consumer> and reports success, so the message
// is terminated and the consumer carries on. A dead letter that cannot be
// published leaves the error: the message is Nacked and comes back.
func (r *Router) deadLetter(h message.HandlerFunc) message.HandlerFunc {
	return func(wm *message.Message) ([]*message.Message, error) {
		out, err := h(wm)
		if err == nil {
			return out, nil
		}
		reason := ""
		var panicErr middleware.RecoveredPanicError
		var gaveUp *GaveUpError
		switch {
		case errors.As(err, &gaveUp):
			reason = gaveUp.Error()
		case errors.Is(err, streams.ErrMalformed):
			reason = err.Error()
		case errors.As(err, &panicErr):
			reason = fmt.Sprintf("handler panicked: %v", panicErr.V)
		default:
			return out, err
		}
		jm, ok := Raw(wm.Context())
		if !ok {
			return nil, fmt.Errorf("dead letter: no jetstream message: %w", err)
		}
		consumer := wm.Metadata.Get(MetaConsumer)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(wm.Context()), 10*time.Second)
		defer cancel()
		if dlErr := deadletter.Publish(ctx, r.js, consumer, r.cfg.Source, jm, reason); dlErr != nil {
			return nil, fmt.Errorf("dead letter after %v: %w", err, dlErr)
		}
		r.cfg.Log.Warn().Str(telemetry.KeyConsumer, consumer).Str(telemetry.KeyStreamSeq, wm.Metadata.Get(MetaStreamSeq)).
			Str(telemetry.KeySubject, wm.Metadata.Get(MetaSubject)).Str("reason", deadletter.Bound(reason, streams.DeadLetterReasonBytes)).Msg("message dead-lettered")
		r.metrics.deadLettered.WithLabelValues(consumer).Inc()
		if gaveUp != nil {
			r.metrics.gaveUp.WithLabelValues(consumer).Inc()
		}
		wm.Metadata.Set(metaDeadLettered, "true")
		return nil, nil
	}
}

// Metadata the middleware passes to countOutcome.
const (
	metaDeadLettered = "dead_lettered"
	metaOutcome      = "outcome"
)

func (r *Router) countOutcome(h message.HandlerFunc) message.HandlerFunc {
	return func(wm *message.Message) ([]*message.Message, error) {
		start := time.Now()
		out, err := h(wm)
		consumer := wm.Metadata.Get(MetaConsumer)
		outcome := OutcomeAcked
		switch {
		case err != nil && errors.Is(err, context.Canceled):
			// Shutting down: the subscriber hands the message back.
			outcome = OutcomeNacked
		case err != nil:
			outcome = OutcomeNacked
			r.cfg.Log.Warn().Err(err).Str(telemetry.KeyConsumer, consumer).Str(telemetry.KeyStreamSeq, wm.Metadata.Get(MetaStreamSeq)).
				Dur("nack_delay_ms", r.cfg.NackDelay).Msg("handler failed; message will be redelivered")
		case wm.Metadata.Get(metaDeadLettered) != "":
			outcome = OutcomeDeadLettered
		case wm.Metadata.Get(metaOutcome) != "":
			outcome = wm.Metadata.Get(metaOutcome)
		}
		r.metrics.handled.WithLabelValues(consumer, outcome).Inc()
		r.metrics.duration.WithLabelValues(consumer).Observe(time.Since(start).Seconds())
		r.observeLag(wm, consumer)
		return out, err
	}
}

// observeLag sets facho_consumer_pending_messages and
// facho_consumer_lag_seconds from the handled message's metadata.
func (r *Router) observeLag(wm *message.Message, consumer string) {
	jm, ok := Raw(wm.Context())
	if !ok {
		return
	}
	md, err := jm.Metadata()
	if err != nil {
		return
	}
	r.metrics.pending.WithLabelValues(consumer).Set(float64(md.NumPending))
	lag := 0.0
	if md.NumPending > 0 {
		lag = max(time.Since(md.Timestamp).Seconds(), 0)
	}
	r.metrics.lag.WithLabelValues(consumer).Set(lag)
}
