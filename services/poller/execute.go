package poller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/deadletter"
	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// errNodeTimeout is the cancellation cause of a node that ran past its
// TimeoutSeconds.
var errNodeTimeout = errors.New("node timeout")

// errPublish marks a failure to publish a varbind batch.
var errPublish = errors.New("publish varbind batch")

// finalPublishTimeout bounds publishing the terminal event and releasing
// the lease, which happen even when the work was cancelled.
const finalPublishTimeout = 10 * time.Second

// handle runs one NodeDue message to its end: dead letter, skipped as
// stale, lease busy, or an execution (started, batches, succeeded/failed).
func (p *poller) handle(work context.Context, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		p.log.Error().Err(err).Str(telemetry.KeySubject, msg.Subject()).Msg("node due without metadata")
		_ = msg.Term()
		return
	}
	log := p.log.With().Uint64(telemetry.KeyStreamSeq, meta.Sequence.Stream).Logger()
	// DecodeOn: a NodeDue only on facho.schedule.due.<its olt_id>.
	_, node, err := streams.DecodeOn[streams.NodeDue](msg.Subject(), msg.Data())
	if err == nil && !streams.ValidID(node.OLTID) {
		// The id becomes a subject token and a KV key.
		err = fmt.Errorf("%w: node.due: olt_id %q is not a valid id", streams.ErrMalformed, node.OLTID)
	}
	if err != nil {
		p.deadLetter(work, msg, err, log)
		return
	}
	log = log.With().Str(telemetry.KeyOLT, node.OLTID).Str(telemetry.KeyJob, node.JobID).Str(telemetry.KeyExecution, node.ExecutionID).Logger()

	// Checked before the lease and on every delivery, so a NodeDue queued
	// through a poller outage, or kept waiting on a busy OLT, past its
	// node's next run is not replayed.
	if now := time.Now(); isStale(node, now) {
		p.skip(work, msg, node, now, staleReason(node), log)
		return
	}
	l, err := p.acquire(work, node)
	if errors.Is(err, lease.ErrHeld) {
		p.metrics.leaseBusy.Inc()
		if meta.NumDelivered >= streams.PollerMaxDeliveries || (p.maxDeliver[meta.Consumer] > 0 && meta.NumDelivered >= uint64(p.maxDeliver[meta.Consumer])) {
			// The last delivery: rather than a dead letter (later), end
			// the execution as skipped, which the planner reads as the
			// end of the OLT's flight.
			p.skip(work, msg, node, time.Now(), busyReason(meta.NumDelivered), log)
			return
		}
		// Waiting for the OLT, not failing: put it back for later (the
		// planner dispatches one node per OLT at a time, so this is the
		// safety net for manual runs and fail-over overlaps).
		log.Debug().Err(err).Msg("olt busy")
		p.later(work, msg, meta.NumDelivered, p.cfg.LeaseBusyDelay, "olt busy", log)
		return
	}
	if err != nil {
		log.Warn().Err(err).Msg("acquire lease")
		p.later(work, msg, meta.NumDelivered, p.cfg.TransientDelay, "acquire lease: "+err.Error(), log)
		return
	}
	// The planner may have cancelled the execution (task or OLT disabled):
	// checked under the lease, so a cancellation put from now on reaches the
	// running operation through the watcher.
	ictx, interrupt := context.WithCancelCause(work)
	defer interrupt(nil)
	cancelled, err := p.cancels.register(work, node.ExecutionID, interrupt)
	defer p.cancels.unregister(node.ExecutionID)
	if err != nil || cancelled != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(work), finalPublishTimeout)
		if rerr := l.Release(rctx); rerr != nil && !errors.Is(rerr, lease.ErrLost) {
			log.Warn().Err(rerr).Msg("release lease")
		}
		cancel()
		if err != nil {
			log.Warn().Err(err).Msg("check cancellation")
			nak(msg, p.cfg.TransientDelay, log)
			return
		}
		p.abort(work, msg, node, cancelled.Reason, log)
		return
	}
	work = ictx
	p.metrics.inFlight.Inc()
	defer p.metrics.inFlight.Dec()
	stopBeat := heartbeat(msg, p.cfg.ProgressInterval, log)
	defer stopBeat()

	ex := &execution{p: p, node: node, lease: l, log: log, kind: node.Kind}
	slot := p.stats.begin(node) // BUSY under the lease (stats.go)
	redeliver, delay := ex.run(work, meta.Timestamp)
	if !redeliver && len(node.Chain) > 0 {
		redeliver, delay = p.runChain(work, node, ex, meta.Timestamp, log)
	}
	p.stats.end(slot, ex.result)

	rctx, cancel := context.WithTimeout(context.WithoutCancel(work), finalPublishTimeout)
	defer cancel()
	if err := l.Release(rctx); err != nil && !errors.Is(err, lease.ErrLost) {
		// The key expires after the TTL anyway.
		log.Warn().Err(err).Msg("release lease")
	}
	stopBeat()
	if redeliver {
		p.later(work, msg, meta.NumDelivered, delay, "the attempt asked for another delivery", log)
		return
	}
	if err := msg.DoubleAck(rctx); err != nil {
		log.Warn().Err(err).Msg("ack node due")
	}
}

// later puts a NodeDue back for delay, unless this is its
// streams.PollerMaxDeliveries-th delivery: then it is dead-lettered ("gave
// up after N deliveries: why") instead, so no NodeDue is redelivered
// without bound and each ends somewhere visible.
func (p *poller) later(work context.Context, msg jetstream.Msg, delivered uint64, delay time.Duration, why string, log zerolog.Logger) {
	if delivered < streams.PollerMaxDeliveries {
		nak(msg, delay, log)
		return
	}
	p.deadLetter(work, msg, gaveUpError{deliveries: delivered, why: why}, log)
}

// gaveUpError ends a NodeDue still not done on its last delivery.
type gaveUpError struct {
	deliveries uint64
	why        string
}

func (e gaveUpError) Error() string {
	return fmt.Sprintf("gave up after %d deliveries: %s", e.deliveries, e.why)
}

// deadLetter moves an undecodable NodeDue, or one given up on, to
// facho.dlq.poller.
func (p *poller) deadLetter(ctx context.Context, msg jetstream.Msg, cause error, log zerolog.Logger) {
	var gaveUp gaveUpError
	if !errors.Is(cause, streams.ErrMalformed) && !errors.As(cause, &gaveUp) {
		log.Warn().Err(cause).Msg("decode node due")
		nak(msg, p.cfg.TransientDelay, log)
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalPublishTimeout)
	defer cancel()
	if err := deadletter.Publish(dctx, p.js, streams.ConsumerPoller, p.cfg.Source, msg, cause.Error()); err != nil {
		log.Error().Err(err).Msg("dead letter node due")
		nak(msg, p.cfg.TransientDelay, log)
		return
	}
	p.metrics.deadLetters.Inc()
	log.Warn().Err(cause).Msg("node due sent to dead letters")
}

func nak(msg jetstream.Msg, delay time.Duration, log zerolog.Logger) {
	if err := msg.NakWithDelay(delay); err != nil {
		log.Warn().Err(err).Msg("nak node due")
	}
}

// heartbeat marks msg in progress every interval until the returned stop
// is called (idempotent), so a long operation is not redelivered.
func heartbeat(msg jetstream.Msg, every time.Duration, log zerolog.Logger) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					log.Debug().Err(err).Msg("in progress")
				}
			}
		}
	}()
	var stopped bool
	return func() {
		if !stopped {
			stopped = true
			close(done)
			<-finished
		}
	}
}

// execution is one attempt of one NodeDue under the OLT's lease.
type execution struct {
	p       *poller
	node    streams.NodeDue
	lease   *lease.Lease
	log     zerolog.Logger
	kind    string
	attempt int
	started time.Time
	// community is kept only to scrub it from error texts.
	community string
	// result is "success" or the failure cause once a terminal event is
	// published ("" before): the poller stats count it.
	result string
	// pduRetries counts the SNMP requests of the attempt sent again.
	pduRetries *pduRetries
	// get is what a get read and could not read (getbatch.go).
	get *getResult
	// awaitONUs: a chained get right after a discovery of its composite
	// that found rows waits up to this for the OLT's first known ONUs
	// (Config.ChainONUWait) instead of failing no_onus_known at once.
	awaitONUs time.Duration

	// rows buffers the varbinds read until they are published grouped
	// by row (rows.go).
	rows     *rowBuffer
	enc      *batchEncoder // of the varbind batches, made at the first
	batches  int
	varbinds int
	// values counts the varbinds read with a value (not an exception
	// such as noSuchInstance): verdict.go judges an attempt without any.
	values int
	// metered is how many of varbinds the read counter has (it is added
	// to at each flush and when the work ends, not per varbind).
	metered int
	// outcome is how run ended.
	outcome outcome
	// bounds checks what is buffered against the node's bounds and
	// budget counts the bytes received (bounds.go); rowBytes are the
	// bytes buffered (published at rowBufferBytes).
	bounds   *execBounds
	budget   *byteBudget
	rowBytes int
}

type outcome int

const (
	outcomeNone outcome = iota
	outcomeSuccess
	outcomeFailed
	outcomeInterrupted
)

// run performs the attempt and says whether the NodeDue goes back to the
// queue (and after how long) instead of being acknowledged.
func (ex *execution) run(work context.Context, deliveredAt time.Time) (redeliver bool, delay time.Duration) {
	p, node := ex.p, ex.node
	pctx, cancel := context.WithTimeout(context.WithoutCancel(work), finalPublishTimeout)
	defer cancel()

	attempt, err := attemptNumber(pctx, p.js, p.exec, node, deliveredAt)
	if err != nil {
		ex.log.Warn().Err(err).Msg("count attempts")
		return true, p.cfg.TransientDelay
	}
	ex.attempt = attempt
	ex.log = ex.log.With().Int("attempt", attempt).Uint64("lease_revision", ex.lease.Revision()).Logger()
	ex.started = time.Now().UTC()
	if err := ex.publish(pctx, streams.SubjectExec(node.OLTID, streams.PhaseStarted), streams.PhaseStarted, streams.ExecutionStarted{
		ExecutionID: node.ExecutionID, JobID: node.JobID, OLTID: node.OLTID, PollerID: p.cfg.PollerID,
		Attempt: attempt, LeaseRevision: ex.lease.Revision(), StartedAt: ex.started,
	}); err != nil {
		ex.log.Warn().Err(err).Msg("publish execution started")
		return true, p.cfg.TransientDelay
	}
	ex.log.Info().Str("kind", node.Kind).Msg("execution started")

	cause, opErr := ex.work(work)
	ex.meter()
	if n := ex.truncated(); n > 0 {
		p.metrics.valuesTruncated.Add(float64(n))
	}
	finished := time.Now().UTC()
	dur := finished.Sub(ex.started)
	p.metrics.duration.WithLabelValues(node.Kind).Observe(dur.Seconds())

	// Publish the outcome even when work was cancelled (shutdown).
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(work), finalPublishTimeout)
	defer fcancel()
	if opErr == nil {
		ex.auditGetFailures(fctx) // per-ONU failures of a get: a coordinator log
		err := ex.publish(fctx, streams.SubjectExec(node.OLTID, streams.PhaseSucceeded), streams.PhaseSucceeded, ex.withGetResult(streams.ExecutionSucceeded{
			ExecutionID: node.ExecutionID, JobID: node.JobID, OLTID: node.OLTID, PollerID: p.cfg.PollerID,
			Attempt: attempt, LeaseRevision: ex.lease.Revision(), StartedAt: ex.started, FinishedAt: finished,
			DurationMS: dur.Milliseconds(), Varbinds: ex.varbinds, Batches: ex.batches, Kind: node.Kind,
		}))
		if err != nil {
			ex.log.Warn().Err(err).Msg("publish execution succeeded")
			return true, p.cfg.TransientDelay
		}
		p.metrics.executions.WithLabelValues(resultSuccess).Inc()
		ex.result = resultSuccess
		ex.outcome = outcomeSuccess
		ex.log.Info().Int("varbinds", ex.varbinds).Int("batches", ex.batches).Int("pdu_retries", ex.pduRetries.count()).Int("values_truncated", ex.truncated()).
			Dur("duration_ms", dur).Msg("execution succeeded")
		return false, 0
	}

	if cause == CauseInterrupted {
		err := ex.publish(fctx, streams.SubjectExec(node.OLTID, streams.PhaseInterrupted), streams.PhaseInterrupted, streams.ExecutionInterrupted{
			ExecutionID: node.ExecutionID, OLTID: node.OLTID, JobID: node.JobID, Attempt: attempt, Reason: opErr.Error(),
			PollerID: p.cfg.PollerID, LeaseRevision: ex.lease.Revision(), StartedAt: ex.started, InterruptedAt: finished,
			DetectedBy: p.cfg.PollerID, Cancelled: true,
		})
		if err != nil {
			ex.log.Warn().Err(err).Msg("publish execution interrupted")
			return true, p.cfg.TransientDelay
		}
		p.metrics.executions.WithLabelValues(string(cause)).Inc()
		ex.result = string(cause)
		ex.outcome = outcomeInterrupted
		ex.log.Warn().Str("reason", opErr.Error()).Dur("duration_ms", dur).Msg("execution interrupted by the planner")
		return false, 0
	}

	decision := p.retry.Decide(Outcome{Node: node, Attempt: attempt, Cause: cause, Err: opErr})
	text := ex.sanitize(opErr.Error())
	err = ex.publish(fctx, streams.SubjectExec(node.OLTID, streams.PhaseFailed), streams.PhaseFailed, streams.ExecutionFailed{
		ExecutionID: node.ExecutionID, JobID: node.JobID, OLTID: node.OLTID, PollerID: p.cfg.PollerID,
		Attempt: attempt, LeaseRevision: ex.lease.Revision(), StartedAt: ex.started, FinishedAt: finished,
		DurationMS: dur.Milliseconds(), Error: text, Retryable: decision.Retryable, Redelivered: decision.Redeliver,
		Cause: string(cause), Kind: node.Kind,
	})
	if err != nil {
		ex.log.Warn().Err(err).Msg("publish execution failed")
		return true, p.cfg.TransientDelay
	}
	p.metrics.executions.WithLabelValues(string(cause)).Inc()
	ex.result = string(cause)
	ex.outcome = outcomeFailed
	ex.log.Warn().Str("cause", string(cause)).Str("error", text).Int("pdu_retries", ex.pduRetries.count()).Int("values_truncated", ex.truncated()).Bool("retryable", decision.Retryable).
		Bool("redeliver", decision.Redeliver).Msg("execution failed")
	return decision.Redeliver, decision.Delay
}

// work runs the SNMP operation under the node's timeout and the lease, and
// classifies a failure.
func (ex *execution) work(work context.Context) (FailureCause, error) {
	p, node := ex.p, ex.node
	switch node.Kind {
	case streams.KindDiscovery, streams.KindWalk, streams.KindBulkWalk, streams.KindGet, streams.KindHealth:
	default:
		return CauseConfig, fmt.Errorf("unknown job kind %q", node.Kind)
	}
	community, err := p.box.Open(node.Target.CommunityEnc)
	if err != nil {
		// secret.Box errors never contain the plaintext.
		return CauseConfig, fmt.Errorf("open community of olt %s: %w", node.OLTID, err)
	}
	ex.community = community
	timeout := p.cfg.Classes.timeoutOf(node.Class, node.Kind)
	if node.TimeoutSeconds > 0 {
		timeout = time.Duration(node.TimeoutSeconds) * time.Second
	}
	tctx, cancelT := context.WithTimeoutCause(work, timeout, fmt.Errorf("%w after %s", errNodeTimeout, timeout))
	defer cancelT()
	ctx, cancelL := ex.lease.Context(tctx)
	defer cancelL()

	ex.pduRetries = newPDURetries(p.cfg.PDURetryBudget, p.metrics.pduRetries)
	lim, from := p.boundsOf(node)
	ex.bounds = newExecBounds(lim, from, node)
	ex.budget = &byteBudget{limit: lim.BytesPerExecution, from: from}
	op := snmpOp{cfg: p.cfg, target: node.Target, community: community, retries: ex.pduRetries, budget: ex.budget}.tuned(node)
	switch node.Kind {
	case streams.KindGet:
		err = ex.getONUs(ctx, op) // getbatch.go: every discovered ONU
	case streams.KindHealth:
		// health.go: one decoded reading, no varbind batches.
		if err = ex.health(ctx, op); err == nil && ex.lease.Err() != nil {
			err = ex.lease.Err()
		}
		if err == nil {
			return "", nil
		}
		cause, cerr := ex.classify(work, ctx, tctx, err)
		return cause, cerr
	default:
		err = op.run(ctx, node.Kind, node.OIDs, func(vb streams.Varbind) error { return ex.add(ctx, vb) })
	}
	if err == nil {
		// Read nothing worth a success (verdict.go): a failure, and a
		// discovery judged so publishes no Last batch.
		err = ex.verdict()
	}
	if err == nil {
		// Only a walk reads whole tables, so only its final batch can say
		// "a row absent from this execution is absent from the OLT". A
		// get reads an explicit list of OIDs: its batches carry no Last.
		err = ex.flush(ctx, node.Kind != streams.KindGet)
	}
	if err == nil && ex.lease.Err() != nil {
		// Never report success for work a newer holder may have redone.
		err = ex.lease.Err()
	}
	if err == nil {
		return "", nil
	}
	cause, err := ex.classify(work, ctx, tctx, err)
	if cause == CauseBoundExceeded {
		p.metrics.boundsExceeded.WithLabelValues(boundName(err)).Inc()
	}
	if (cause == CauseSNMP || cause == CauseTimeout || cause == CauseOIDNotIncreasing || cause == CauseBoundExceeded) && ex.rows != nil && ex.rows.len() > 0 {
		// What a failed walk read is still a reading, published (never
		// as Last) as it was batch by batch before the poller buffered
		// rows; not after a lost lease, an interruption or a shutdown.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(work), finalPublishTimeout)
		if ferr := ex.flush(fctx, false); ferr != nil {
			ex.log.Warn().Err(ferr).Msg("publish the varbinds read before the failure")
		}
		cancel()
	}
	return cause, err
}

// classify names the cause of a failed operation.
func (ex *execution) classify(work, ctx, tctx context.Context, err error) (FailureCause, error) {
	node := ex.node
	switch {
	case errors.Is(err, lease.ErrLost) || errors.Is(context.Cause(ctx), lease.ErrLost):
		if lerr := ex.lease.Err(); lerr != nil {
			return CauseLeaseLost, lerr // "lease lost: ..."
		}
		return CauseLeaseLost, err
	case interruption(work) != nil:
		return CauseInterrupted, interruption(work)
	case errors.Is(err, errShutdown) || errors.Is(context.Cause(work), errShutdown):
		return CauseShutdown, errShutdown
	case errors.Is(err, errNodeTimeout) || errors.Is(context.Cause(tctx), errNodeTimeout):
		return CauseTimeout, context.Cause(tctx)
	case errors.Is(err, errPublish):
		return CausePublish, err
	default:
		if cause, ok := readCause(err); ok {
			return cause, err
		}
		if isTimeout(err) {
			return CauseSNMP, fmt.Errorf("olt %s did not answer (timeout): %w", node.OLTID, err)
		}
		return CauseSNMP, err
	}
}

// add buffers one varbind (see rows.go). The buffer is published when the
// operation ends (flush), grouped by row; when it holds
// Config.RowBufferVarbinds varbinds it is published early, so memory stays
// bounded on a huge table (correct, only less grouped: an ONU's columns
// read after that come in later batches).
func (ex *execution) add(ctx context.Context, vb streams.Varbind) error {
	if ex.rows == nil {
		ex.rows = newRowBuffer(ex.node.OIDs)
	}
	pos, index := ex.rows.column(vb.OID)
	if ex.bounds != nil {
		// Checked before the varbind is buffered: nothing past a bound
		// is published (bounds.go).
		if err := ex.bounds.admit(ex.varbinds, pos, index); err != nil {
			return err
		}
		vb.Value = ex.bounds.capValue(vb.Type, vb.Value)
	}
	ex.rows.put(pos, index, vb)
	return ex.added(ctx, vb.Type, len(vb.OID)+len(vb.Value))
}

// added counts a varbind buffered and publishes the buffer when it holds
// Config.RowBufferVarbinds varbinds or rowBufferBytes bytes.
func (ex *execution) added(ctx context.Context, typ string, size int) error {
	ex.varbinds++
	if isValue(typ) {
		ex.values++
	}
	ex.rowBytes += size
	if ex.rows.len() >= ex.p.cfg.RowBufferVarbinds || ex.rowBytes >= rowBufferBytes {
		return ex.flush(ctx, false)
	}
	return nil
}

// addRow buffers the value of column col (a position in the node's OIDs)
// at row index key: what add does for a varbind whose OID names them,
// without matching the OID (a get knows what it asked).
func (ex *execution) addRow(ctx context.Context, col int, key, typ, value string) error {
	if ex.rows == nil {
		ex.rows = newRowBuffer(ex.node.OIDs)
	}
	if ex.bounds != nil {
		if err := ex.bounds.admit(ex.varbinds, col, key); err != nil {
			return err
		}
		value = ex.bounds.capValue(typ, value)
	}
	ex.rows.addRow(col, key, typ, value)
	return ex.added(ctx, typ, len(key)+len(value))
}

// truncated is how many values were cut to the value_bytes bound.
func (ex *execution) truncated() int {
	if ex.bounds == nil {
		return 0
	}
	return ex.bounds.truncated
}

// meter adds the varbinds read since the last call to the read counter.
func (ex *execution) meter() {
	if n := ex.varbinds - ex.metered; n > 0 {
		ex.p.metrics.varbinds.Add(float64(n))
		ex.metered = ex.varbinds
	}
}

// varbindJSONSize is the size of vb in a batch: values are hex, decimal or
// dotted, so JSON escapes nothing.
func varbindJSONSize(vb streams.Varbind) int {
	return len(vb.OID) + len(vb.Type) + len(vb.Value) + len(`{"oid":"","type":"","value":""},`)
}

// flush publishes the buffered varbinds grouped by row, in VarbindBatches
// of at most BatchSize varbinds and maxBatchBytes of JSON, unless the
// lease is gone: a stale holder must not add batches. last marks the
// final batch of a walk that read every column to its end; it is
// published even without varbinds, so the projector learns that the table
// is empty. It is only ever called once the walk succeeded, so a failed or
// aborted execution never publishes a Last batch.
func (ex *execution) flush(ctx context.Context, last bool) error {
	ex.meter()
	ex.rowBytes = 0
	var parts []batchPart
	if ex.rows != nil {
		parts = ex.rows.drain(ex.p.cfg.BatchSize, ex.p.maxBatchBytes)
	}
	if len(parts) == 0 && last {
		parts = []batchPart{{}}
	}
	for i, part := range parts {
		if err := ex.publishBatch(ctx, part, last && i == len(parts)-1); err != nil {
			return err
		}
	}
	return nil
}

// publishBatch publishes one VarbindBatch.
func (ex *execution) publishBatch(ctx context.Context, part batchPart, last bool) error {
	if err := ex.lease.Err(); err != nil {
		return err
	}
	node := ex.node
	n := ex.batches + 1
	err := ex.publishVarbinds(ctx, n, streams.VarbindBatch{
		ExecutionID: node.ExecutionID, JobID: node.JobID, OLTID: node.OLTID, BrandID: node.BrandID,
		IndexScheme: node.IndexScheme, Index: node.Index, LeaseRevision: ex.lease.Revision(), Batch: n, Columns: node.OIDs,
		CollectedAt: time.Now().UTC(), Varbinds: part.varbinds, Rows: part.rows, Last: last, JobKind: node.Kind,
	})
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("%w %d: %w", errPublish, n, err)
	}
	ex.batches = n
	ex.p.metrics.batches.Inc()
	return nil
}

// publish sends one event with the id "<execution_id>:<attempt>:<part>",
// which a retry of the same publish recomputes, so the stream drops
// duplicates.
func (ex *execution) publish(ctx context.Context, subject string, part any, ev streams.Event) error {
	id := streams.MsgID(ex.node.ExecutionID, ex.attempt, part)
	b, err := streams.EncodeWithID(id, ex.p.cfg.Source, time.Now(), ev)
	if err != nil {
		return err
	}
	if _, err := ex.p.js.Publish(ctx, subject, b, jetstream.WithMsgID(id)); err != nil {
		return fmt.Errorf("publish %s on %s: %w", ev.EventType(), subject, err)
	}
	return nil
}

// sanitize removes the community from an error text, belt and braces: no
// error we build contains it, but gosnmp's texts are not ours. See
// scrubCommunity: only the places a community can appear are scrubbed.
func (ex *execution) sanitize(s string) string {
	return scrubCommunity(s, ex.community)
}

// interruption is the planner's cancellation of a running execution, if
// that is why ctx ended.
func interruption(ctx context.Context) *interruptedError {
	var ie *interruptedError
	if errors.As(context.Cause(ctx), &ie) {
		return ie
	}
	return nil
}

// busyRetries are the waits before trying a busy lease again, for a NodeDue
// the planner dispatched: it does so when the OLT's previous node ended,
// and that node's holder releases the lease right after its terminal
// event, so the OLT frees within milliseconds; a NAK would cost
// LeaseBusyDelay (1 s).
var busyRetries = [...]time.Duration{2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}

// acquire takes the OLT's lease, waiting briefly for a planner-dispatched
// node whose OLT's previous holder is about to release it.
func (p *poller) acquire(work context.Context, node streams.NodeDue) (*lease.Lease, error) {
	info := lease.Info{ExecutionID: node.ExecutionID, JobID: node.JobID}
	l, err := p.leases.Acquire(work, node.OLTID, info)
	if node.DispatchedAt.IsZero() {
		return l, err
	}
	for _, d := range busyRetries {
		if !errors.Is(err, lease.ErrHeld) {
			return l, err
		}
		sleep(work, d)
		if work.Err() != nil {
			return nil, err
		}
		l, err = p.leases.Acquire(work, node.OLTID, info)
	}
	return l, err
}

// publishVarbinds publishes batch n of the execution as publish would,
// encoded by a batchEncoder (encode.go).
func (ex *execution) publishVarbinds(ctx context.Context, n int, b streams.VarbindBatch) error {
	if ex.enc == nil {
		enc, err := newBatchEncoder(ex.node)
		if err != nil {
			return fmt.Errorf("encode %s: %w", b.EventType(), err)
		}
		ex.enc = enc
	}
	id := streams.MsgID(ex.node.ExecutionID, ex.attempt, n)
	subject := streams.SubjectVarbinds(ex.node.OLTID)
	// The client copies the message before Publish returns, so the
	// encoder's buffer is reused for the next batch.
	data := ex.enc.encode(id, ex.p.cfg.Source, time.Now(), b)
	// Each try is bounded on its own: with ctx's deadline alone (the node
	// timeout, minutes) a PubAck lost while nats-server restarts would hold
	// the execution, and its OLT's lease, that long. A try again is safe:
	// the msg id makes the stream drop a copy.
	for try := 1; ; try++ {
		pctx, cancel := context.WithTimeout(ctx, batchPublishTimeout)
		_, err := ex.p.js.Publish(pctx, subject, data, jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || try == batchPublishTries {
			return fmt.Errorf("publish %s on %s (try %d): %w", b.EventType(), subject, try, err)
		}
		ex.log.Warn().Err(err).Int("batch", n).Int("try", try).Msg("publish varbind batch failed; trying again")
	}
}

// batchPublishTimeout bounds one try of a varbind batch's publish, and
// batchPublishTries the tries.
const (
	batchPublishTimeout = 5 * time.Second
	batchPublishTries   = 3
)
