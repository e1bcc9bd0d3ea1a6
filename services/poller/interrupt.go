package poller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// Interrupted executions: every execution ends.
//
// A poller killed mid-walk publishes no terminal event; its lease expires
// after the TTL. Every poller turns that expiry into execution.interrupted
// for the attempt the lease was held for:
//
//   - Event-driven: the lease bucket keeps a marker when a key expires by
//     TTL (streams.LeaseBucketConfig, LimitMarkerTTL); lease.WatchExpiries
//     reports it, with the last record seen under the key.
//   - Start-up and periodic sweep (Config.InterruptSweepEvery): covers
//     expiries no poller saw (none alive then, or the watch was cut off; the
//     server keeps a marker only about one TTL). It scans the execution
//     stream of the last Config.InterruptLookback for attempts started
//     without an end.
//
// Both come down to checkOLT: read the OLT's lease first, then scan the
// OLT's execution events; a started attempt with no succeeded, failed or
// interrupted event whose lease is not held now (with its fencing token)
// was interrupted. Reading the lease before the events matters: a holder
// publishes its terminal event before releasing, so a lease seen released
// has its terminal event in the scan that follows.
//
// Every poller publishes the same event with the Nats-Msg-Id
// "<execution_id>:<attempt>:interrupted", so the stream keeps one; after
// the duplicate window the scan sees it and publishes nothing. A late
// terminal event of the dead attempt does not undo it (the projector keeps
// the first end of an attempt), and the NodeDue, redelivered after its
// AckWait, runs as the execution's next attempt.

// interruptSlack widens a scan's start for clock skew between the holder
// (AcquiredAt) and the server (stream timestamps).
const interruptSlack = time.Minute

// interrupts is the detector of one poller.
type interrupts struct {
	p     *poller
	kv    jetstream.KeyValue
	log   zerolog.Logger
	count prometheus.Counter
	// mu serialises checks: the watch and the sweep may look at the same
	// OLT at once, which is harmless (same message id) but noisy.
	mu sync.Mutex
}

// startInterrupts runs the expiry watch and the sweep until ctx ends; the
// returned stop waits for them.
func (p *poller) startInterrupts(ctx context.Context, reg prometheus.Registerer) (stop func(), err error) {
	kv, err := p.js.KeyValue(ctx, streams.BucketLeases)
	if err != nil {
		return nil, fmt.Errorf("poller: lease bucket for interrupt detection: %w", err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("poller: status of lease bucket: %w", err)
	}
	log := p.log.With().Str("component", "interrupts").Logger()
	if st.LimitMarkerTTL() <= 0 {
		// An older provisioning: expiries are found by the sweep only.
		log.Warn().Msg("lease bucket has no limit markers: interrupted executions are found by the periodic sweep only")
	}
	in := &interrupts{p: p, kv: kv, log: log,
		count: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_poller_executions_interrupted_total", Help: "execution.interrupted published by this poller (an attempt's lease expired without a terminal event); other pollers may publish the same one, which the stream drops.",
			ConstLabels: prometheus.Labels{"poller_id": p.cfg.PollerID},
		})}
	if err := reg.Register(in.count); err != nil {
		return nil, fmt.Errorf("register poller interrupt metrics: %w", err)
	}
	p.interrupts = in
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = lease.WatchExpiries(ctx, kv, p.cfg.TransientDelay, in.onExpiry)
	}()
	go func() {
		defer wg.Done()
		in.sweepLoop(ctx)
	}()
	return func() { cancel(); wg.Wait() }, nil
}

// onExpiry checks the OLT of an expired lease.
func (in *interrupts) onExpiry(ctx context.Context, e lease.Expiry) {
	since := e.At.Add(-in.p.cfg.InterruptLookback)
	if e.Record != nil && !e.Record.AcquiredAt.IsZero() {
		since = e.Record.AcquiredAt
	}
	log := in.log.With().Str(telemetry.KeyOLT, e.OLTID).Time("expired_at", e.At).Uint64("lease_revision", e.Token).Logger()
	if e.Record != nil {
		log = log.With().Str("holder", e.Record.Holder).Str(telemetry.KeyExecution, e.Record.Info.ExecutionID).Logger()
	}
	log.Info().Msg("lease expired")
	if !streams.ValidID(e.OLTID) {
		return
	}
	n, err := in.checkOLT(ctx, e.OLTID, since.Add(-interruptSlack), e.At)
	if err != nil && ctx.Err() == nil {
		// The sweep will look again.
		log.Warn().Err(err).Msg("check expired lease")
		return
	}
	if n == 0 {
		log.Debug().Msg("expired lease had no open attempt")
	}
}

// sweepLoop sweeps at start and then every Config.InterruptSweepEvery.
func (in *interrupts) sweepLoop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := in.sweep(ctx); err != nil && ctx.Err() == nil {
			in.log.Warn().Err(err).Msg("sweep for interrupted executions")
		} else if n > 0 {
			in.log.Info().Int("interrupted", n).Msg("sweep found executions whose lease expired")
		}
		t.Reset(in.p.cfg.InterruptSweepEvery)
	}
}

// sweep checks every OLT with an attempt started in the last
// InterruptLookback and not ended.
func (in *interrupts) sweep(ctx context.Context) (int, error) {
	since := time.Now().Add(-in.p.cfg.InterruptLookback)
	open, err := in.openAttempts(ctx, "*", since, ^uint64(0))
	if err != nil {
		return 0, err
	}
	type oltOpen struct {
		first  time.Time
		tokens []uint64
	}
	olts := map[string]*oltOpen{}
	for _, a := range open {
		o := olts[a.OLTID]
		if o == nil {
			o = &oltOpen{first: a.StartedAt}
			olts[a.OLTID] = o
		}
		if a.StartedAt.Before(o.first) {
			o.first = a.StartedAt
		}
		o.tokens = append(o.tokens, a.LeaseRevision)
	}
	total := 0
	var errs []error
	for olt, o := range olts {
		if !streams.ValidID(olt) {
			continue
		}
		// The usual case, an operation running now: its holder renews the
		// lease with the token of the only open attempt. Nothing to do,
		// and no need to scan the OLT again.
		if _, token, held, err := lease.Current(ctx, in.kv, olt); err == nil && held && allEqual(o.tokens, token) {
			continue
		}
		// Scan from the oldest open start of the OLT, within the window.
		from := o.first.Add(-interruptSlack)
		if from.Before(since) {
			from = since
		}
		n, err := in.checkOLT(ctx, olt, from, time.Time{})
		total += n
		if err != nil {
			if ctx.Err() != nil {
				return total, err
			}
			errs = append(errs, err) // the other OLTs are still checked
		}
	}
	return total, errors.Join(errs...)
}

func allEqual(tokens []uint64, token uint64) bool {
	for _, t := range tokens {
		if t != token {
			return false
		}
	}
	return true
}

// checkOLT publishes execution.interrupted for every attempt on oltID
// started since and not ended whose lease is not held now. at is when the
// lease was seen expired (zero: now). It returns how many it published.
func (in *interrupts) checkOLT(ctx context.Context, oltID string, since, at time.Time) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	// Only starts already in the stream before the lease is read are
	// judged: their holder had the lease then, so a lease not held with
	// their token has ended, released (after the terminal event, which the
	// scan then sees) or expired. A start after that read is left to the
	// next check.
	info, err := in.p.exec.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("check olt %s: %w", oltID, err)
	}
	startedUpTo := info.State.LastSeq
	_, token, held, err := lease.Current(ctx, in.kv, oltID)
	if err != nil {
		return 0, err
	}
	open, err := in.openAttempts(ctx, oltID, since, startedUpTo)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range open {
		if held && token == a.LeaseRevision {
			continue // its holder is alive and renewing
		}
		if err := in.publish(ctx, a, at); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// publish sends execution.interrupted for the started attempt a.
func (in *interrupts) publish(ctx context.Context, a streams.ExecutionStarted, at time.Time) error {
	now := time.Now().UTC()
	if at.IsZero() {
		at = now
	}
	ev := streams.ExecutionInterrupted{
		ExecutionID: a.ExecutionID, JobID: a.JobID, OLTID: a.OLTID, PollerID: a.PollerID,
		Attempt: a.Attempt, LeaseRevision: a.LeaseRevision, StartedAt: a.StartedAt, InterruptedAt: at.UTC(),
		DetectedBy: in.p.cfg.PollerID,
		Reason: fmt.Sprintf("lease of poller %s (revision %d) expired without a succeeded or failed event: the poller stopped mid-run",
			a.PollerID, a.LeaseRevision),
	}
	id := streams.MsgID(a.ExecutionID, a.Attempt, streams.PhaseInterrupted)
	subject := streams.SubjectExec(a.OLTID, streams.PhaseInterrupted)
	b, err := streams.EncodeWithID(id, in.p.cfg.Source, now, ev)
	if err != nil {
		return fmt.Errorf("encode execution interrupted %s: %w", id, err)
	}
	ack, err := in.p.js.Publish(ctx, subject, b, jetstream.WithMsgID(id))
	if err != nil {
		return fmt.Errorf("publish execution interrupted %s: %w", id, err)
	}
	if !ack.Duplicate {
		in.count.Inc()
	}
	in.log.Warn().Str(telemetry.KeyOLT, a.OLTID).Str(telemetry.KeyExecution, a.ExecutionID).Int("attempt", a.Attempt).
		Uint64("lease_revision", a.LeaseRevision).Str("holder", a.PollerID).Bool("duplicate", ack.Duplicate).
		Msg("execution interrupted: its lease expired without a terminal event")
	return nil
}

// attemptKey names one attempt of one execution.
type attemptKey struct {
	execution string
	attempt   int
}

// openAttempts scans the execution events of oltID ("*": every OLT) since
// a time and returns the attempts started (at a stream sequence up to
// startedUpTo) and not ended (no succeeded, failed or interrupted event of
// the same attempt), oldest first.
func (in *interrupts) openAttempts(ctx context.Context, oltID string, since time.Time, startedUpTo uint64) ([]streams.ExecutionStarted, error) {
	info, err := in.p.exec.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("scan executions of olt %s: %w", oltID, err)
	}
	lastSeq := info.State.LastSeq
	if lastSeq == 0 {
		return nil, nil
	}
	// One filter subject (every phase; note ignores the others): servers
	// before 2.10 take no more.
	filter := streams.SubjectsExec
	if oltID != "*" {
		filter = streams.SubjectExec(oltID, ">")
	}
	cons, err := in.p.js.OrderedConsumer(ctx, streams.StreamExec, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &since,
	})
	if err != nil {
		return nil, fmt.Errorf("scan executions of olt %s: %w", oltID, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = in.p.js.DeleteConsumer(dctx, streams.StreamExec, cons.CachedInfo().Name)
	}()
	started := map[attemptKey]streams.ExecutionStarted{}
	ended := map[attemptKey]bool{}
	for {
		batch, err := cons.FetchNoWait(512)
		if err != nil {
			return nil, fmt.Errorf("scan executions of olt %s: %w", oltID, err)
		}
		var seq uint64
		got := 0
		for msg := range batch.Messages() {
			got++
			if meta, err := msg.Metadata(); err == nil {
				seq = meta.Sequence.Stream
			}
			in.note(msg.Subject(), msg.Data(), seq <= startedUpTo, started, ended)
		}
		if err := batch.Error(); err != nil {
			return nil, fmt.Errorf("scan executions of olt %s: %w", oltID, err)
		}
		if seq >= lastSeq || got == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("scan executions of olt %s: %w", oltID, err)
		}
	}
	var open []streams.ExecutionStarted
	for k, s := range started {
		if !ended[k] {
			open = append(open, s)
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].StartedAt.Before(open[j].StartedAt) })
	return open, nil
}

// note records one execution event of a scan; undecodable ones are
// skipped (they are the projector's dead letters, not ours).
func (in *interrupts) note(subject string, data []byte, judge bool, started map[attemptKey]streams.ExecutionStarted, ended map[attemptKey]bool) {
	switch {
	case strings.HasSuffix(subject, "."+streams.PhaseStarted):
		if !judge {
			return
		}
		if _, e, err := streams.Decode[streams.ExecutionStarted](data); err == nil && e.ExecutionID != "" && e.OLTID != "" {
			started[attemptKey{e.ExecutionID, e.Attempt}] = e
		}
	case strings.HasSuffix(subject, "."+streams.PhaseSucceeded):
		if _, e, err := streams.Decode[streams.ExecutionSucceeded](data); err == nil {
			ended[attemptKey{e.ExecutionID, e.Attempt}] = true
		}
	case strings.HasSuffix(subject, "."+streams.PhaseFailed):
		if _, e, err := streams.Decode[streams.ExecutionFailed](data); err == nil {
			ended[attemptKey{e.ExecutionID, e.Attempt}] = true
		}
	case strings.HasSuffix(subject, "."+streams.PhaseInterrupted):
		if _, e, err := streams.Decode[streams.ExecutionInterrupted](data); err == nil {
			ended[attemptKey{e.ExecutionID, e.Attempt}] = true
		}
	}
}
