package availability

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"

	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// Deps are the service's collaborators.
type Deps struct {
	JS       jetstream.JetStream
	Box      *secret.Box // opens the sealed communities
	Log      zerolog.Logger
	Registry prometheus.Registerer
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Run probes the OLTs and publishes their availability while this
// replica holds the leader lease, until ctx ends; then it returns nil.
func Run(ctx context.Context, cfg Config, deps Deps) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("availability config: %w", err)
	}
	if deps.JS == nil || deps.Box == nil {
		return errors.New("availability: JetStream and the secret box are required")
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
	leader, err := lease.Open(ctx, deps.JS, streams.BucketAvailabilityLeader, cfg.Instance)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("availability: %w", err)
	}
	// The OLT leases the pollers hold for their walks: a probe holds one
	// too (probe.go), so it never overlaps a walk.
	oltLeases, err := lease.Open(ctx, deps.JS, streams.BucketLeases, cfg.Instance)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("availability: %w", err)
	}
	log := deps.Log.With().Str("instance", cfg.Instance).Logger()
	prober := &leasedProber{leases: oltLeases, timeout: cfg.ProbeTimeout, retries: cfg.ProbeRetries,
		releaseTimeout: cfg.PublishTimeout, now: deps.Now, log: log}
	poll := max(leader.TTL()/4, 100*time.Millisecond)
	standing := false
	for {
		l, err := leader.Acquire(ctx, streams.AvailabilityLeaderKey, lease.Info{JobID: "availability"})
		var held *lease.HeldError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &held):
			if !standing {
				log.Info().Str("leader", held.Holder).Msg("standing by")
				standing = true
			}
			m.leader.Set(0)
			sleep(ctx, poll)
			continue
		case err != nil:
			log.Warn().Err(err).Msg("acquire leader lease")
			sleep(ctx, poll)
			continue
		}
		standing = false
		m.leader.Set(1)
		log.Info().Uint64("lease_revision", l.Revision()).Msg("leader lease acquired: probing")
		lctx, cancel := l.Context(ctx)
		s := &service{cfg: cfg, deps: deps, log: log, m: m, olts: map[string]*olt{}, prober: prober}
		err = s.term(lctx)
		cancel()
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.PublishTimeout)
		_ = l.Release(rctx)
		rcancel()
		m.leader.Set(0)
		s.forget()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(context.Cause(lctx), lease.ErrLost) {
			return err
		}
		log.Warn().Err(l.Err()).Msg("leader lease lost: standing by")
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// olt is what the service knows of one configured OLT.
type olt struct {
	id           string
	cfg          streams.OLTUpserted
	autoDisabled bool
	disabledExec string // the execution of the auto-disable
	enableSent   bool   // olt.auto_enabled published, not read back yet
	tr           Tracker
	inFlight     bool
	lastObserved time.Time
}

// probed: an OLT a person enabled is probed, also while auto-disabled
// (the recovery probes); one a person disabled is not.
func (o *olt) probed() bool { return o.cfg.Enabled }

// service is one term of the leader, owned by its loop goroutine.
type service struct {
	cfg  Config
	deps Deps
	log  zerolog.Logger
	m    *metrics
	olts map[string]*olt
	last map[string]streams.OLTAvailability // published states at the start
	// prober sends the probes under the OLTs' leases.
	prober *leasedProber
	// leaseFailing: the last probe found the lease bucket unanswering
	// (logged once until a lease is acquired again).
	leaseFailing bool
}

type probeJob struct {
	oltID string
	t     target
}

// term replays what it needs, then probes and publishes until ctx ends.
func (s *service) term(ctx context.Context) error {
	last, err := s.loadLast(ctx)
	if err != nil {
		return err
	}
	s.last = last

	cfgMsgs := make(chan jetstream.Msg, 256)
	stopCfg, cfgPending, err := s.follow(ctx, streams.StreamConfig, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.SubjectOLT("*"), streams.SubjectOLTDisabled("*")},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}, cfgMsgs)
	if err != nil {
		return err
	}
	defer stopCfg()
	caughtUp := cfgPending == 0

	execMsgs := make(chan jetstream.Msg, 256)
	stopExec, _, err := s.follow(ctx, streams.StreamExec, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.SubjectExec("*", streams.PhaseFailed), streams.SubjectExec("*", streams.PhaseSucceeded)},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	}, execMsgs)
	if err != nil {
		return err
	}
	defer stopExec()

	jobs := make(chan probeJob, s.cfg.Workers)
	results := make(chan probeResult, s.cfg.Workers)
	wctx, stopWorkers := context.WithCancel(ctx)
	done := make(chan struct{})
	for range s.cfg.Workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-wctx.Done():
					return
				case j := <-jobs:
					r := s.prober.run(wctx, j)
					select {
					case results <- r:
					case <-wctx.Done():
						return
					}
				}
			}
		}()
	}
	defer func() {
		stopWorkers()
		for range s.cfg.Workers {
			<-done
		}
	}()

	ticker := time.NewTicker(s.cfg.Tick)
	defer ticker.Stop()
	s.log.Info().Int("olts_restored", len(last)).Msg("availability started")
	for {
		select {
		case <-ctx.Done():
			return nil
		case msg := <-cfgMsgs:
			s.applyConfig(msg)
			if !caughtUp {
				if meta, err := msg.Metadata(); err == nil && meta.NumPending == 0 {
					caughtUp = true
					s.log.Info().Int("olts", len(s.olts)).Msg("configuration replayed: probing")
				}
			}
		case msg := <-execMsgs:
			if caughtUp {
				s.applyOutcome(msg)
			}
		case r := <-results:
			s.applyProbe(r)
		case <-ticker.C:
			if !caughtUp {
				continue
			}
			now := s.deps.Now()
			s.dispatch(ctx, now, jobs)
			s.publishChanges(ctx, now)
			s.recover(ctx, now)
			s.gauges()
		}
	}
}

// follow reads stream with an ordered consumer and hands each message to
// out; it returns how many messages were pending when it started.
func (s *service) follow(ctx context.Context, stream string, cfg jetstream.OrderedConsumerConfig, out chan<- jetstream.Msg) (stop func(), pending uint64, err error) {
	cons, err := s.deps.JS.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("availability: ordered consumer on %s: %w", stream, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, 0, fmt.Errorf("availability: consume %s: %w", stream, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		it.Stop()
		return nil, 0, fmt.Errorf("availability: consumer info on %s: %w", stream, err)
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
				s.log.Warn().Err(err).Str("stream", stream).Msg("read stream")
				sleep(ctx, 200*time.Millisecond)
				continue
			}
			select {
			case out <- msg:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { it.Stop(); <-done }, info.NumPending + uint64(info.NumAckPending), nil
}

// loadStall bounds the wait for the next message while the last states
// are read.
const loadStall = 30 * time.Second

// loadLast reads the last availability event of every OLT: a restarted
// or new leader resumes from them and never publishes a state again.
func (s *service) loadLast(ctx context.Context) (map[string]streams.OLTAvailability, error) {
	out := map[string]streams.OLTAvailability{}
	msgs := make(chan jetstream.Msg, 256)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, pending, err := s.follow(lctx, streams.StreamOLT, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.SubjectsOLTAvailability},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	}, msgs)
	if err != nil {
		return nil, err
	}
	defer stop()
	stall := time.NewTimer(loadStall)
	defer stall.Stop()
	for pending > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-stall.C:
			return nil, fmt.Errorf("availability: reading the last states of %s: %d messages still pending after %s without one", streams.StreamOLT, pending, loadStall)
		case msg := <-msgs:
			stall.Reset(loadStall)
			meta, err := msg.Metadata()
			if err != nil {
				return nil, fmt.Errorf("availability: metadata of %s: %w", msg.Subject(), err)
			}
			pending = meta.NumPending
			_, ev, err := streams.Decode[streams.OLTAvailability](msg.Data())
			if err != nil || !streams.ValidAvailability(ev.State) || streams.SubjectOLTAvailability(ev.OLTID) != msg.Subject() {
				s.log.Warn().Err(err).Str(telemetry.KeySubject, msg.Subject()).Msg("skip malformed availability event")
				continue
			}
			out[ev.OLTID] = ev
		}
	}
	return out, nil
}

// applyConfig folds one configuration event (OLTs and their
// auto-disables); a malformed one is logged and skipped (the projector
// dead-letters it).
func (s *service) applyConfig(msg jetstream.Msg) {
	env, err := streams.DecodeEnvelope(msg.Data())
	if err == nil {
		err = streams.CheckSubject(msg.Subject(), env)
	}
	if err != nil {
		s.log.Warn().Err(err).Str(telemetry.KeySubject, msg.Subject()).Msg("skip malformed config event")
		return
	}
	switch env.Type {
	case streams.TypeOLTUpserted:
		var e streams.OLTUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			s.log.Warn().Err(err).Str(telemetry.KeySubject, msg.Subject()).Msg("skip malformed olt.upserted")
			return
		}
		o, ok := s.olts[e.ID]
		if !ok {
			o = &olt{id: e.ID}
			if ev, ok := s.last[e.ID]; ok {
				o.tr.Restore(ev)
			}
			s.olts[e.ID] = o
		}
		wasProbed := ok && o.probed()
		moved := ok && (o.cfg.IP != e.IP || o.cfg.Port != e.Port || o.cfg.CommunityEnc != e.CommunityEnc)
		o.cfg = e
		o.autoDisabled, o.enableSent = false, false // an olt.upserted ends an auto-disable
		if o.probed() && (!wasProbed || moved) {
			o.tr.NextProbe = time.Time{} // a new, re-enabled or moved OLT is probed at once
			if !ok && o.tr.Published == streams.AvailabilityAvailable {
				// Known available when this term started (a restart, a
				// fail-over): its probes are spread over the interval by
				// its id, not all sent at once, so a new term does not
				// burst into OLTs in the middle of their walks.
				o.tr.NextProbe = time.Now().Add(spreadOffset(e.ID, s.cfg.ProbeInterval))
			}
		}
	case streams.TypeOLTDeleted:
		var e streams.OLTDeleted
		if err := streams.DecodeData(env, &e); err != nil {
			return
		}
		delete(s.olts, e.ID)
		s.m.available.DeleteLabelValues(e.ID)
	case streams.TypeOLTAutoDisabled:
		var e streams.OLTAutoDisabled
		if err := streams.DecodeData(env, &e); err != nil {
			return
		}
		if o, ok := s.olts[e.ID]; ok {
			o.autoDisabled, o.disabledExec, o.enableSent = true, e.ExecutionID, false
			o.tr.Answers = 0 // the recovery counts the probes after the disable
			o.tr.NextProbe = time.Time{}
		}
	case streams.TypeOLTAutoEnabled:
		var e streams.OLTAutoEnabled
		if err := streams.DecodeData(env, &e); err != nil {
			return
		}
		if o, ok := s.olts[e.ID]; ok && o.disabledExec == e.DisabledExecutionID {
			o.autoDisabled, o.enableSent = false, false
		}
	}
}

// applyOutcome folds an execution's outcome: an attempt the OLT did not
// answer makes it unreachable at once; a success that read something
// proves it answers.
func (s *service) applyOutcome(msg jetstream.Msg) {
	env, err := streams.DecodeEnvelope(msg.Data())
	if err != nil {
		s.m.observed.WithLabelValues("ignored").Inc()
		return
	}
	switch env.Type {
	case streams.TypeExecutionFailed:
		var e streams.ExecutionFailed
		if err := streams.DecodeData(env, &e); err != nil || !NoAnswer(e.Error) {
			s.m.observed.WithLabelValues("ignored").Inc()
			return
		}
		o := s.observable(e.OLTID, e.FinishedAt)
		if o == nil {
			s.m.observed.WithLabelValues("ignored").Inc()
			return
		}
		s.m.observed.WithLabelValues("no_answer").Inc()
		o.tr.NoAnswer(s.cfg.timings(), e.FinishedAt, e.Error, streams.AvailabilitySourceExecution, e.ExecutionID)
	case streams.TypeExecutionSucceeded:
		var e streams.ExecutionSucceeded
		if err := streams.DecodeData(env, &e); err != nil || e.Varbinds == 0 {
			// A run that read nothing proves nothing (a wrong community
			// gets no answer; an empty table is not an answer either).
			s.m.observed.WithLabelValues("ignored").Inc()
			return
		}
		o := s.observable(e.OLTID, e.FinishedAt)
		if o == nil {
			s.m.observed.WithLabelValues("ignored").Inc()
			return
		}
		s.m.observed.WithLabelValues("answered").Inc()
		o.tr.Answer(s.cfg.timings(), e.FinishedAt, streams.AvailabilitySourceExecution, e.ExecutionID)
		if o.autoDisabled {
			o.tr.NextProbe = e.FinishedAt.Add(s.cfg.Recheck)
		}
	default:
		s.m.observed.WithLabelValues("ignored").Inc()
	}
}

// observable is the probed OLT an observation at at may change: not one
// older than the OLT's last observation.
func (s *service) observable(id string, at time.Time) *olt {
	o, ok := s.olts[id]
	if !ok || !o.probed() || at.Before(o.lastObserved) {
		return nil
	}
	o.lastObserved = at
	return o
}

func (s *service) applyProbe(r probeResult) {
	o, ok := s.olts[r.oltID]
	if !ok {
		return
	}
	o.inFlight = false
	if s.leaseFailing && r.skipped != SkipLeaseError {
		s.leaseFailing = false
		s.log.Info().Msg("OLT lease bucket answers again: probing")
	}
	if r.skipped != "" {
		// No evidence either way: the state stays, the OLT is tried
		// again a Recheck later (a walk's outcome may come first).
		s.m.skipped.WithLabelValues(r.skipped).Inc()
		o.tr.Skipped(s.cfg.timings(), r.start)
		switch {
		case r.skipped == SkipLeaseError && !s.leaseFailing:
			s.leaseFailing = true
			s.log.Warn().Str(telemetry.KeyOLT, o.id).Str("error", r.err).
				Msg("OLT lease bucket unreachable: probes are skipped, states stay as they are until it answers")
		default:
			s.log.Debug().Str(telemetry.KeyOLT, o.id).Str("reason", r.skipped).Str("error", r.err).Msg("probe skipped")
		}
		return
	}
	s.m.probeTime.Observe(r.duration.Seconds())
	if !o.probed() || r.start.Before(o.lastObserved) {
		return
	}
	o.lastObserved = r.start
	tm := s.cfg.timings()
	if r.answered {
		s.m.probes.WithLabelValues("answered").Inc()
		o.tr.Answer(tm, r.start, streams.AvailabilitySourceProbe, "")
		if o.autoDisabled {
			o.tr.NextProbe = r.start.Add(s.cfg.Recheck) // the recovery probes
		}
		return
	}
	s.m.probes.WithLabelValues("no_answer").Inc()
	o.tr.NoAnswer(tm, r.start, r.err, streams.AvailabilitySourceProbe, "")
	s.log.Debug().Str(telemetry.KeyOLT, o.id).Str("error", r.err).Msg("probe unanswered")
}

// dispatch moves unreachable OLTs on to unavailable and hands the due
// probes to the workers (at most one in flight per OLT; when every worker
// is busy the rest wait for the next tick).
func (s *service) dispatch(ctx context.Context, now time.Time, jobs chan<- probeJob) {
	ids := make([]string, 0, len(s.olts))
	for id := range s.olts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if o := s.olts[id]; o.probed() {
			o.tr.Tick(s.cfg.timings(), now)
		}
	}
	for _, id := range ids {
		o := s.olts[id]
		if !o.probed() || o.inFlight || !o.tr.Due(now) {
			continue
		}
		community, err := s.deps.Box.Open(o.cfg.CommunityEnc)
		if err != nil {
			// A community sealed with a key this service does not have:
			// it cannot probe, and says so (not the community).
			o.tr.NoAnswer(s.cfg.timings(), now, "cannot open the sealed community: "+err.Error(), streams.AvailabilitySourceProbe, "")
			continue
		}
		select {
		case jobs <- probeJob{oltID: id, t: target{host: o.cfg.IP, port: o.cfg.Port, community: community}}:
			o.inFlight = true
		case <-ctx.Done():
			return
		default:
			return // every worker busy
		}
	}
}

// publishChanges publishes every OLT whose state is not the published one.
func (s *service) publishChanges(ctx context.Context, now time.Time) {
	for id, o := range s.olts {
		if o.tr.State == "" || o.tr.State == o.tr.Published || !o.probed() {
			continue
		}
		ev := o.tr.Event(id, now)
		if err := s.publish(ctx, streams.SubjectOLTAvailability(id), MsgID(ev), ev); err != nil {
			s.m.publishErrs.Inc()
			s.log.Warn().Err(err).Str(telemetry.KeyOLT, id).Msg("publish availability; retried at the next tick")
			continue
		}
		audit := auditOf(ev)
		if err := s.publish(ctx, streams.SubjectAudit(streams.AuditCategoryAvailability),
			streams.MsgID("audit", "availability", audit.Kind, id, ev.Since.UnixNano()), audit); err != nil {
			s.m.publishErrs.Inc()
			s.log.Warn().Err(err).Str(telemetry.KeyOLT, id).Msg("publish availability audit; retried at the next tick")
			continue
		}
		o.tr.Published = ev.State
		s.m.changes.WithLabelValues(ev.State).Inc()
		s.log.Info().Str(telemetry.KeyOLT, id).Str("state", ev.State).Str("previous", ev.Previous).
			Str("source", ev.Source).Str("error", ev.LastError).Msg("OLT availability changed")
	}
}

func auditOf(ev streams.OLTAvailability) streams.AuditEvent {
	a := streams.AuditEvent{OLTID: ev.OLTID, Details: map[string]any{
		"state": ev.State, "previous": ev.Previous, "since": ev.Since.Format(time.RFC3339Nano), "source": ev.Source,
	}}
	if ev.ExecutionID != "" {
		a.Details["execution_id"] = ev.ExecutionID
	}
	if ev.LastError != "" {
		a.Details["last_error"] = ev.LastError
		a.Details["failed_checks"] = ev.FailedChecks
	}
	switch ev.State {
	case streams.AvailabilityUnreachable:
		a.Kind, a.Level = streams.AuditOLTUnreachable, streams.LevelWarning
		a.Message = fmt.Sprintf("OLT %s unreachable: %s", ev.OLTID, ev.LastError)
	case streams.AvailabilityUnavailable:
		a.Kind, a.Level = streams.AuditOLTUnavailable, streams.LevelError
		a.Message = fmt.Sprintf("OLT %s unavailable (no answer since %s): no work is dispatched to it", ev.OLTID, ev.Since.Format(time.RFC3339))
	default:
		a.Kind, a.Level = streams.AuditOLTAvailable, streams.LevelInfo
		a.Message = fmt.Sprintf("OLT %s available: it answers again", ev.OLTID)
		if ev.Previous == "" {
			a.Message = fmt.Sprintf("OLT %s available", ev.OLTID)
		}
	}
	return a
}

// recover re-enables the auto-disabled OLTs that answered enough
// consecutive probes: olt.auto_enabled (once per auto-disable: its id
// derives from the disable's execution) and an OLT_ENABLED audit event.
func (s *service) recover(ctx context.Context, now time.Time) {
	if s.cfg.RecoverProbes < 0 {
		return
	}
	for id, o := range s.olts {
		if !o.autoDisabled || o.enableSent || !o.probed() || o.tr.Answers < s.cfg.RecoverProbes {
			continue
		}
		reason := fmt.Sprintf("answered %d consecutive probes after its auto-disable", o.tr.Answers)
		ev := streams.OLTAutoEnabled{ID: id, Reason: reason, Probes: o.tr.Answers, DisabledExecutionID: o.disabledExec, EnabledAt: now.UTC()}
		if err := s.publish(ctx, streams.SubjectOLTDisabled(id), streams.MsgID("auto-enable", id, o.disabledExec), ev); err != nil {
			s.m.publishErrs.Inc()
			s.log.Warn().Err(err).Str(telemetry.KeyOLT, id).Msg("publish auto-enable; retried at the next tick")
			continue
		}
		audit := streams.AuditEvent{OLTID: id, Kind: streams.AuditOLTEnabled, Level: streams.LevelInfo,
			Message: fmt.Sprintf("OLT %s enabled again: %s", id, reason),
			Details: map[string]any{"reason": reason, "probes": o.tr.Answers, "automatic": true, "disabled_execution_id": o.disabledExec}}
		if err := s.publish(ctx, streams.SubjectAudit(streams.AuditCategoryAvailability),
			streams.MsgID("audit", "availability", streams.AuditOLTEnabled, id, o.disabledExec), audit); err != nil {
			s.m.publishErrs.Inc()
			s.log.Warn().Err(err).Str(telemetry.KeyOLT, id).Msg("publish OLT_ENABLED audit; retried at the next tick")
			continue
		}
		o.enableSent = true
		s.m.autoEnabled.Inc()
		s.log.Warn().Str(telemetry.KeyOLT, id).Str("reason", reason).Msg("auto-disabled OLT enabled again")
	}
}

func (s *service) publish(ctx context.Context, subject, id string, ev streams.Event) error {
	b, err := streams.EncodeWithID(id, s.cfg.Source, s.deps.Now(), ev)
	if err != nil {
		return fmt.Errorf("encode %s: %w", ev.EventType(), err)
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PublishTimeout)
	defer cancel()
	if _, err := s.deps.JS.Publish(pctx, subject, b, jetstream.WithMsgID(id)); err != nil {
		return fmt.Errorf("publish %s on %s: %w", ev.EventType(), subject, err)
	}
	return nil
}

func (s *service) gauges() {
	counts := map[string]int{streams.AvailabilityAvailable: 0, streams.AvailabilityUnreachable: 0, streams.AvailabilityUnavailable: 0, "unknown": 0}
	for id, o := range s.olts {
		if !o.probed() {
			s.m.available.DeleteLabelValues(id)
			continue
		}
		st := o.tr.Published
		if st == "" {
			counts["unknown"]++
			continue
		}
		counts[st]++
		v := 0.0
		if st == streams.AvailabilityAvailable {
			v = 1
		}
		s.m.available.WithLabelValues(id).Set(v)
	}
	for st, n := range counts {
		s.m.olts.WithLabelValues(st).Set(float64(n))
	}
}

// forget drops the per-OLT gauges when the term ends: another replica
// reports them.
func (s *service) forget() {
	s.m.available.Reset()
	s.m.olts.Reset()
}

// spreadOffset is id's stable offset in [0, interval).
func spreadOffset(id string, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return time.Duration(h.Sum64() % uint64(interval))
}
