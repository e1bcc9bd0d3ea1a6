package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/lease"
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
	queues   *Queues
	caughtUp bool
	dirty    bool
	// initialPending marks the first plan after the replay: its nodes are
	// restored, not added, and get one summary audit instead of one each.
	initialPending bool
	lastSeq        uint64 // last config stream sequence read

	// The persisted schedule (persist.go).
	kv         jetstream.KeyValue
	cancelKV   jetstream.KeyValue
	leaderKV   jetstream.KeyValue
	restored   restoredSchedule
	written    map[NodeKey]uint64 // hash of the entry last written per node
	dirtyNodes map[NodeKey]struct{}
	puts       map[NodeKey]pendingPut
	// early holds terminal events read before the plan was built.
	early []finish
	// batching makes dispatches asynchronous; pending are waiting for
	// their acks (see beginBatch).
	batching bool
	pending  []pendingDispatch
	// lastFlush is when the persisted schedule was last written.
	lastFlush time.Time
	// orphans are recent terminal events that matched no flight: a run
	// dispatched again after a takeover or restart (same id, dropped by
	// the stream as a duplicate) may have ended already.
	orphans map[string]finish
	// lost holds, per execution in flight, which attempt of it was lost
	// with its poller and when (see completeFlight); cleared when the
	// flight ends. Persisted with the flight's schedule entry
	// (NodeFlight.LostAttempt), so a restarted planner or the next leader
	// still retries the execution if no later attempt ends it.
	lost map[string]lostAttempt
	// nextAttempt holds, per node waiting for the retry of an execution
	// whose attempt was lost, the lowest attempt number the retry can run.
	nextAttempt map[NodeKey]int
	// takeover describes how this term began.
	takeover *takeover
	// failures counts consecutive failed executions per OLT (persisted:
	// failuresDirty are written at the next flush).
	failures      map[string]int
	failuresDirty map[string]bool
	// seenManual are the manual runs handled (a request read twice after a
	// reconnection is queued once); earlyManual wait for the plan.
	seenManual  map[string]time.Time
	earlyManual []streams.NodeRunRequested
	// pollers is the poller processes' slots per queue class (the
	// capacity the planner dispatches against: capacity.go).
	pollers *pollerView
	// readyPending: a slot was freed inside the batch; the batch's end
	// dispatches every free OLT within the room (dispatchAll). freed are
	// the finishes that freed them, for the finish-to-dispatch metric.
	readyPending bool
	freed        []finish
	// pollersDeadline: until then, a term that has not read the pollers'
	// slots yet dispatches nothing (capacity.go).
	pollersDeadline time.Time
	// known are the OLTs with an ONU known to their gets, knownChecked
	// when the others were last looked up (getfirst.go).
	known        map[string]bool
	knownChecked map[string]time.Time
	// onuKV and onuStream: the handles the ONU lookups read (bound once).
	onuKV     jetstream.KeyValue
	onuStream jetstream.Stream
	// unavailable holds the OLTs the availability service says are
	// unavailable (since when): their due nodes are skipped
	// (availability.go).
	unavailable map[string]time.Time
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
	leader, err := lease.Open(ctx, deps.JS, streams.BucketPlannerLeader, cfg.Instance)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("planner: %w", err)
	}
	return runReplica(ctx, cfg, deps, m, leader)
}

// runReplica is one planner replica: it stands by until it holds the
// leader lease, then plans (a fresh term: the configuration replayed, the
// persisted schedule restored, as after a restart) until ctx ends or the
// lease is lost, and stands by again.
func runReplica(ctx context.Context, cfg Config, deps Deps, m *metrics, leader *lease.Manager) error {
	log := deps.Log.With().Str("instance", cfg.Instance).Logger()
	poll := max(leader.TTL()/4, 100*time.Millisecond)
	previous := ""
	for {
		l, err := leader.Acquire(ctx, streams.LeaderKey, lease.Info{JobID: "planner"})
		var held *lease.HeldError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &held):
			if previous == "" {
				log.Info().Str("leader", held.Holder).Msg("standing by")
			}
			previous = held.Holder
			m.leader.Set(0)
			sleep(ctx, poll)
			continue
		case err != nil:
			log.Warn().Err(err).Msg("acquire leader lease")
			sleep(ctx, poll)
			continue
		}
		m.leader.Set(1)
		m.terms.Inc()
		log.Info().Uint64("lease_revision", l.Revision()).Str("previous", previous).Msg("leader lease acquired: planning")
		p := newPlanner(cfg, deps, m, log)
		p.takeover = &takeover{previous: previous, revision: l.Revision()}
		lctx, cancel := l.Context(ctx)
		err = p.run(lctx)
		cancel()
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.PublishTimeout)
		_ = l.Release(rctx)
		rcancel()
		m.leader.Set(0)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(context.Cause(lctx), lease.ErrLost) {
			return err
		}
		log.Warn().Err(l.Err()).Msg("leader lease lost: standing by")
		previous = ""
	}
}

// flushEvery bounds how often the persisted schedule is written.
const flushEvery = 100 * time.Millisecond

// orphanWindow is how long a terminal event that matched no flight is
// kept (the stream's duplicate window): a re-dispatch of its execution
// inside it is dropped by the stream, so the run must not be waited for.
const orphanWindow = 2 * time.Minute

// takeover is how a term began, for its PLANNER_TAKEOVER audit.
type takeover struct {
	previous string // the holder seen before, if any
	revision uint64
}

func newPlanner(cfg Config, deps Deps, m *metrics, log zerolog.Logger) *planner {
	p := &planner{
		cfg:           cfg,
		js:            deps.JS,
		log:           log,
		now:           deps.Now,
		m:             m,
		state:         newState(timeouts{discovery: cfg.DiscoveryTimeoutSeconds, poll: cfg.PollTimeoutSeconds, retries: cfg.ClassRetries.resolved()}),
		sched:         NewScheduler(cfg.FirstRunDelay, cfg.DelayedAfter),
		queues:        NewQueues(cfg.DelayedAfter),
		written:       map[NodeKey]uint64{},
		dirtyNodes:    map[NodeKey]struct{}{},
		puts:          map[NodeKey]pendingPut{},
		failures:      map[string]int{},
		failuresDirty: map[string]bool{},
		seenManual:    map[string]time.Time{},
		orphans:       map[string]finish{},
		lost:          map[string]lostAttempt{},
		nextAttempt:   map[NodeKey]int{},
		pollers:       newPollerView(),
		known:         map[string]bool{},
		knownChecked:  map[string]time.Time{},
		unavailable:   map[string]time.Time{},
	}
	if cfg.FirstRunSpread > 0 {
		p.sched.SpreadFirstRuns(cfg.FirstRunSpread)
	}
	return p
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (p *planner) run(ctx context.Context) error {
	kv, err := p.js.KeyValue(ctx, streams.BucketSchedule)
	if err != nil {
		return fmt.Errorf("planner: open kv %s: %w", streams.BucketSchedule, err)
	}
	p.kv = kv
	if p.cancelKV, err = p.js.KeyValue(ctx, streams.BucketCancel); err != nil {
		return fmt.Errorf("planner: open kv %s: %w", streams.BucketCancel, err)
	}
	if p.leaderKV, err = p.js.KeyValue(ctx, streams.BucketPlannerLeader); err != nil {
		return fmt.Errorf("planner: open kv %s: %w", streams.BucketPlannerLeader, err)
	}
	if p.restored, err = p.loadSchedule(ctx); err != nil {
		return fmt.Errorf("planner: %w", err)
	}
	p.sched.SetRestored(p.restored.nodes)
	// A get of an OLT with no ONU known waits for its discovery (getfirst.go).
	p.queues.SetHold(func(d DueNode, now time.Time) bool { return p.holdGet(ctx, d, now) })

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

	// Terminal execution events free their OLT's queue.
	finishes := make(chan finish, 256)
	// From a little before the oldest restored flight, so the end of a run
	// that happened while no planner ran is not missed.
	// (and at least the stream's duplicate window back, for runs the
	// previous planner dispatched without persisting it).
	execFrom := p.now().Add(-orphanWindow)
	if !p.restored.oldest.IsZero() && p.restored.oldest.Add(-time.Minute).Before(execFrom) {
		execFrom = p.restored.oldest.Add(-time.Minute)
	}
	stopExec, err := p.followExec(ctx, execFrom, finishes)
	if err != nil {
		return err
	}
	defer stopExec()
	manuals := make(chan streams.NodeRunRequested, 64)
	stopManual, err := p.followManual(ctx, p.now(), manuals)
	if err != nil {
		return err
	}
	defer stopManual()
	pollerUpdates := make(chan pollerUpdate, 64)
	p.pollersDeadline = p.now().Add(pollersWait)
	defer p.followPollers(ctx, pollerUpdates)()
	availFrom, err := p.loadAvailability(ctx)
	if err != nil {
		return err
	}
	avail := make(chan streams.OLTAvailability, 256)
	stopAvail, err := p.followAvailability(ctx, availFrom, avail)
	if err != nil {
		return err
	}
	defer stopAvail()

	ticker := time.NewTicker(p.cfg.Tick)
	defer ticker.Stop()
	p.log.Info().Uint64("replay_until", replayUntil).Int("retries_discovery", p.state.defaults.retries.Discovery).
		Int("retries_polling", p.state.defaults.retries.Polling).Int("retries_ceiling", p.state.defaults.retries.Retry).Msg("planner started")
	for {
		select {
		case <-ctx.Done():
			p.log.Info().Int("nodes", p.sched.Len()).Msg("planner stopped")
			return nil
		case msg := <-msgs:
			p.handle(ctx, msg, replayUntil)
			// React at once when the burst of changes is over; during the
			// replay the plan waits for the last event.
			if len(msgs) == 0 && p.dirty {
				p.syncOrCatchUp(ctx)
			}
		case f := <-finishes:
			if !p.caughtUp || p.initialPending {
				p.early = append(p.early, f)
				continue
			}
			// Every terminal event already read, in one batch of
			// dispatches.
			p.beginBatch()
			p.onFinish(ctx, f)
			for more := 0; more < 1000; more++ {
				select {
				case f := <-finishes:
					p.onFinish(ctx, f)
					continue
				default:
				}
				break
			}
			// The slots the ended flights held are free: the most urgent
			// node of their class on any free OLT takes them now.
			p.flushReady(ctx, p.now())
			p.endBatch(ctx)
		case u := <-pollerUpdates:
			p.pollers.apply(u)
		case ev := <-avail:
			p.onAvailability(ctx, ev)
		case req := <-manuals:
			if !p.caughtUp || p.initialPending {
				p.earlyManual = append(p.earlyManual, req)
				continue
			}
			p.onManual(ctx, req)
		case <-ticker.C:
			if p.dirty {
				p.syncOrCatchUp(ctx)
			}
			if p.caughtUp {
				now := p.now()
				p.checkStuck(ctx, now)
				p.queueDue(now)
				p.beginBatch()
				p.flushReady(ctx, now)
				p.endBatch(ctx)
				p.m.delayed.Set(float64(p.queues.Delayed(now)))
				p.publishReport(ctx, p.leaderKV, now)
				for id, f := range p.orphans {
					if now.Sub(f.Published) > orphanWindow {
						delete(p.orphans, id)
					}
				}
				for id, l := range p.lost {
					if now.Sub(l.At) > 24*time.Hour {
						delete(p.lost, id) // its flight went without completeFlight
					}
				}
				for id, at := range p.seenManual {
					if now.Sub(at) > 10*time.Minute {
						delete(p.seenManual, id) // well past the replay window
					}
				}
			}
		}
		// The persisted schedule is written at most every flushEvery, not
		// after each event: a burst of finishes (100 OLTs ending together)
		// must not wait behind KV writes. A term that takes over from a
		// stale entry re-dispatches under the same id, which the stream
		// drops, and knows the run's end from its terminal event.
		if p.caughtUp && !p.initialPending && p.now().Sub(p.lastFlush) >= flushEvery {
			p.flushSchedule(ctx)
			p.lastFlush = p.now()
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
func (p *planner) handle(ctx context.Context, msg jetstream.Msg, replayUntil uint64) {
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
		olt := ""
		if env.Type == streams.TypeOLTUpserted {
			olt = strings.TrimPrefix(msg.Subject(), "facho.config.olt.")
		}
		_, had := p.state.olts[olt]
		wasEnabled := p.state.oltEnabled(olt)
		known, err = p.state.apply(env)
		// Only an event published after this term began is a live
		// transition: the replay's last event (seq == replayUntil, which
		// also ends the replay) was audited by the term that read it
		// live, and auditing it again would notify it again.
		if err == nil && olt != "" && had && p.caughtUp && seq > replayUntil {
			p.oltTransition(ctx, olt, wasEnabled, p.state.oltEnabled(olt))
		}
		if err == nil && env.Type == streams.TypeOLTAutoEnabled {
			// Re-enabled by the availability service (which audits it):
			// its failure count starts over.
			id := strings.TrimPrefix(msg.Subject(), "facho.config.olt_disabled.")
			delete(p.failures, id)
			p.failuresDirty[id] = true
		}
		if err == nil && !known {
			result := "unknown"
			if env.Type == streams.TypeSilenceUpserted || env.Type == streams.TypeSilenceDeleted {
				result = "ignored" // silences of alerts: the alerter's
			}
			p.m.configEvents.WithLabelValues(result).Inc()
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
	if initial && p.takeover != nil {
		t := p.takeover
		msg := fmt.Sprintf("planner %s is the active planner (%d nodes, %d in flight restored)", p.cfg.Instance, p.sched.Len(), len(p.restored.flights))
		if t.previous != "" {
			msg = fmt.Sprintf("planner %s took over from %s (%d nodes, %d in flight restored)", p.cfg.Instance, t.previous, p.sched.Len(), len(p.restored.flights))
		}
		p.log.Info().Str("previous", t.previous).Msg(msg)
		p.publishAudit(ctx, streams.AuditEvent{Kind: streams.AuditTakeover, Level: streams.LevelWarning, Message: msg,
			Details: map[string]any{"instance": p.cfg.Instance, "previous": t.previous, "lease_revision": t.revision,
				"nodes": p.sched.Len(), "flights_restored": len(p.restored.flights)}},
			streams.MsgID("audit", "planner", streams.AuditTakeover, p.cfg.Instance, t.revision))
	}
	if initial {
		// The restored flights wait for their terminal events, which may
		// have been read already.
		p.restoreFlights(p.restored)
		p.sched.SetRestored(nil)
		p.restored = restoredSchedule{}
		early := p.early
		p.early = nil
		for _, f := range early {
			p.onFinish(ctx, f)
		}
		manual := p.earlyManual
		p.earlyManual = nil
		for _, req := range manual {
			p.onManual(ctx, req)
		}
	}
}
