package planner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// Deps are the planner's collaborators.
type Deps struct {
	JS       jetstream.JetStream
	Log      zerolog.Logger
	Registry prometheus.Registerer
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// planner is the state of one Run, owned by its loop goroutine.
type planner struct {
	cfg      Config
	js       jetstream.JetStream
	log      zerolog.Logger
	now      func() time.Time
	m        *metrics
	state    *state
	sched    *Scheduler
	caughtUp bool
	dirty    bool
	// initialPending marks the first plan after the replay: its nodes are
	// restored, not added, and get one summary audit instead of one each.
	initialPending bool
	lastSeq        uint64 // last config stream sequence read
}

// Run replays the configuration stream, then follows it and emits NodeDue
// events until ctx is cancelled; then it returns nil.
func Run(ctx context.Context, cfg Config, deps Deps) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("planner config: %w", err)
	}
	if deps.JS == nil {
		return errors.New("planner: no JetStream")
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	m, err := newMetrics(deps.Registry)
	if err != nil {
		return err
	}
	p := &planner{
		cfg:   cfg,
		js:    deps.JS,
		log:   deps.Log,
		now:   deps.Now,
		m:     m,
		state: newState(timeouts{discovery: cfg.DiscoveryTimeoutSeconds, poll: cfg.PollTimeoutSeconds}),
		sched: NewScheduler(cfg.FirstRunDelay, cfg.DelayedAfter),
	}
	err = p.run(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil // stopped while starting: a clean stop, not a failure
	}
	return err
}

func (p *planner) run(ctx context.Context) error {
	stream, err := p.js.Stream(ctx, streams.StreamConfig)
	if err != nil {
		return fmt.Errorf("planner: open stream %s: %w", streams.StreamConfig, err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("planner: info of stream %s: %w", streams.StreamConfig, err)
	}
	// Everything up to here is the replay; the plan is built once it is in.
	replayUntil := info.State.LastSeq
	p.caughtUp = replayUntil == 0
	if p.caughtUp {
		p.syncPlan(ctx, true)
	}

	// An ordered consumer: ephemeral, replays the whole stream, recreates
	// itself after gaps; the config stream is the planner's only memory.
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.SubjectsConfig},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("planner: ordered consumer on %s: %w", streams.StreamConfig, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("planner: consume %s: %w", streams.StreamConfig, err)
	}
	msgs := make(chan jetstream.Msg, 256)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		p.read(ctx, it, msgs)
	}()
	defer func() {
		it.Stop()
		<-readerDone
	}()

	ticker := time.NewTicker(p.cfg.Tick)
	defer ticker.Stop()
	p.log.Info().Uint64("replay_until", replayUntil).Msg("planner started")
	for {
		select {
		case <-ctx.Done():
			p.log.Info().Int("nodes", p.sched.Len()).Msg("planner stopped")
			return nil
		case msg := <-msgs:
			p.handle(msg, replayUntil)
			// React at once when the burst of changes is over; during the
			// replay the plan waits for the last event.
			if len(msgs) == 0 && p.dirty {
				p.syncOrCatchUp(ctx)
			}
		case <-ticker.C:
			if p.dirty {
				p.syncOrCatchUp(ctx)
			}
			if p.caughtUp {
				p.emitDue(ctx)
			}
		}
	}
}

// read forwards config messages to the loop until the iterator stops.
func (p *planner) read(ctx context.Context, it jetstream.MessagesContext, out chan<- jetstream.Msg) {
	for {
		msg, err := it.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || ctx.Err() != nil {
				return
			}
			p.log.Warn().Err(err).Msg("read config stream")
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		select {
		case out <- msg:
		case <-ctx.Done():
			return
		}
	}
}

// handle applies one config event. A malformed one (a brand without an
// index scheme too), or one on a subject not its own, is counted, logged
// and skipped: the ordered consumer cannot Term, and the projector's
// durable consumer dead-letters the same message.
func (p *planner) handle(msg jetstream.Msg, replayUntil uint64) {
	meta, err := msg.Metadata()
	if err != nil {
		p.log.Warn().Err(err).Str(telemetry.KeySubject, msg.Subject()).Msg("config message without metadata")
		return
	}
	seq := meta.Sequence.Stream
	p.lastSeq = seq
	if !p.caughtUp && (seq >= replayUntil || meta.NumPending == 0) {
		p.caughtUp = true
		p.dirty = true
		p.initialPending = true
	}
	env, err := streams.DecodeEnvelope(msg.Data())
	if err == nil {
		// An event on a subject not its own (a brand.upserted on an OLT's
		// subject, an id that is not the subject's) is not applied.
		if err := streams.CheckSubject(msg.Subject(), env); err != nil {
			p.m.configEvents.WithLabelValues("wrong_subject").Inc()
			p.log.Warn().Err(err).Uint64(telemetry.KeyStreamSeq, seq).Str(telemetry.KeySubject, msg.Subject()).Msg("skip config event on a subject not its own")
			return
		}
		var known bool
		known, err = p.state.apply(env)
		if err == nil && !known {
			p.m.configEvents.WithLabelValues("unknown").Inc()
			p.log.Debug().Str("type", env.Type).Uint64(telemetry.KeyStreamSeq, seq).Msg("config event type not planned on")
			return
		}
	}
	if err != nil {
		p.m.configEvents.WithLabelValues("malformed").Inc()
		p.log.Warn().Err(err).Uint64(telemetry.KeyStreamSeq, seq).Str(telemetry.KeySubject, msg.Subject()).Msg("skip malformed config event")
		return
	}
	p.m.configEvents.WithLabelValues("applied").Inc()
	p.dirty = true
}

func (p *planner) syncOrCatchUp(ctx context.Context) {
	if !p.caughtUp {
		return
	}
	initial := p.initialPending
	p.initialPending = false
	p.syncPlan(ctx, initial)
}
