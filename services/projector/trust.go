package projector

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// What the projector applies, whoever published it. A service's own NATS
// key lets it publish on its subjects, nothing more: the projector checks
// that what it applies could have come from the work the planner gave out.
//
//   - A varbind batch, and an execution's started, succeeded, failed or
//     interrupted event, is applied only for an execution the planner
//     dispatched: an executions row written from a NodeDue (its kind is
//     set; the chained executions of a composite NodeDue included) of the
//     same OLT. When there is none and the schedule projection has caught
//     up with its stream (scheduleCaughtUp), there never was one: the
//     message is dead-lettered. Otherwise the message is held
//     (as during a database outage, not counted against its delivery
//     bound) until the schedule projection has caught up.
//   - A varbind batch of an older lease than the execution's current
//     attempt (a stale poller) is dead-lettered; and so is one of the
//     attempt that ended (SUCCESS or FAILED) stored by the stream more
//     than ReplayGrace after the execution's row took that end (a batch
//     re-published after the stream's duplicate window: a poller
//     publishes its batches before the execution's end). Both times are
//     servers' clocks (the stream's, the database's), never a poller's;
//     the row's time is when the end was projected, or later, so a lagging
//     projection only widens the grace.
//   - An execution event with a negative count or duration, and a batch
//     carrying a value outside physics (rxphysics.go), is dead-lettered.
//   - A reading older than an ONU's current state does not move that state
//     back (mergeMessage).
//
// A refused message is dead-lettered with the reason and changes nothing
// in Postgres; its dead letter is marked refused, so the dead-letter
// projection does not fail the execution it names (it may name one it
// does not belong to).

// ReplayGrace is how long after its execution ended a varbind batch may
// still be published: the streams' duplicate window. A copy published
// within it is dropped by the stream; one published after it is refused.
const ReplayGrace = 2 * time.Minute

// RefusedPrefix starts the reason of every message the projector refuses
// by these rules (the dead-letter projection recognises them by it).
const RefusedPrefix = "refused: "

// Refusal kinds (the reason label of facho_projector_refused_total).
const (
	RefuseNotDispatched = "not_dispatched"
	RefuseOtherOLT      = "other_olt"
	RefuseStaleAttempt  = "stale_attempt"
	RefuseAfterEnd      = "published_after_end"
	RefuseImpossible    = "impossible_value"
	RefuseConfigRule    = "config_rule"
)

// refusal is a message the projector will not apply, and why.
type refusal struct {
	kind   string
	reason string
}

func (r *refusal) Error() string { return RefusedPrefix + r.reason }

// Is makes a refusal a streams.ErrMalformed: the consumers dead-letter it.
func (r *refusal) Is(target error) bool { return target == streams.ErrMalformed }

func refuse(kind, format string, args ...any) *refusal {
	return &refusal{kind: kind, reason: fmt.Sprintf(format, args...)}
}

// refusalKind returns err's refusal kind, "" when it is none.
func refusalKind(err error) string {
	var r *refusal
	if errors.As(err, &r) {
		return r.kind
	}
	return ""
}

// errScheduleBehind: no executions row says the execution was dispatched,
// and the schedule projection has not caught up with its stream yet: the
// message is held (projectorHealth reports it as an outage).
var errScheduleBehind = errors.New("the schedule projection is behind: whether the execution was dispatched is not known yet")

// dispatch is what the executions read model says of an execution.
type dispatch struct {
	found      bool
	dispatched bool // a NodeDue (or the composite NodeDue it is chained in) wrote the row
	olt        string
	status     string
	rev        int64
	updated    time.Time // when the row last changed (the database's clock)
}

// loadDispatches reads the executions rows of ids.
func loadDispatches(ctx context.Context, tx pgx.Tx, ids []string) (map[string]dispatch, error) {
	out := make(map[string]dispatch, len(ids))
	rows, err := tx.Query(ctx, `SELECT id, olt_id, kind <> '' OR node_id <> '', status, lease_revision, updated_at FROM executions WHERE id = ANY($1)`, planEachTime, ids)
	if err != nil {
		return nil, fmt.Errorf("read the executions of %d messages: %w", len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		d := dispatch{found: true}
		if err := rows.Scan(&id, &d.olt, &d.dispatched, &d.status, &d.rev, &d.updated); err != nil {
			return nil, fmt.Errorf("read the executions of %d messages: %w", len(ids), err)
		}
		out[id] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the executions of %d messages: %w", len(ids), err)
	}
	return out, nil
}

// maxBarriers bounds the schedule barriers remembered (an execution id
// each); past it they are forgotten, and taken again later (a later
// barrier only waits longer).
const maxBarriers = 10_000

// barriers remembers, for each execution not known as dispatched, the
// schedule stream's last sequence when it was first checked: its NodeDue,
// if any, is at or below it (published before anything of the execution).
type barriers struct {
	mu sync.Mutex
	m  map[string]uint64
}

// scheduleCaughtUp reports whether the schedule projection has applied
// every NodeDue that could have dispatched ids: its consumer is idle
// (nothing pending or unacknowledged: a NodeDue is acked after its
// commit), or its ack floor reached each id's barrier. A busy stream never
// idles, so the barrier is what ends a wait under load.
func (p *projector) scheduleCaughtUp(ctx context.Context, ids []string) (bool, error) {
	cons, err := p.js.Consumer(ctx, streams.StreamSchedule, streams.ConsumerProjectorSchedule)
	if err != nil {
		return false, fmt.Errorf("bind consumer %s: %w", streams.ConsumerProjectorSchedule, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("consumer %s info: %w", streams.ConsumerProjectorSchedule, err)
	}
	b := &p.barriers
	if info.NumPending == 0 && info.NumAckPending == 0 {
		b.forget(ids)
		return true, nil
	}
	b.mu.Lock()
	missing := false
	for _, id := range ids {
		if _, ok := b.m[id]; !ok {
			missing = true
		}
	}
	b.mu.Unlock()
	var last uint64
	if missing {
		// Read after the consumer's info: a NodeDue stored since is above
		// both, and the barrier only waits for more.
		stream, err := p.js.Stream(ctx, streams.StreamSchedule)
		if err != nil {
			return false, fmt.Errorf("bind stream %s: %w", streams.StreamSchedule, err)
		}
		sinfo, err := stream.Info(ctx)
		if err != nil {
			return false, fmt.Errorf("stream %s info: %w", streams.StreamSchedule, err)
		}
		last = sinfo.State.LastSeq
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= maxBarriers {
		b.m = map[string]uint64{}
	}
	caught := true
	for _, id := range ids {
		at, ok := b.m[id]
		if !ok {
			at = last
			b.m[id] = at
		}
		caught = caught && info.AckFloor.Stream >= at
	}
	if caught {
		for _, id := range ids {
			delete(b.m, id)
		}
	}
	return caught, nil
}

func (b *barriers) forget(ids []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		delete(b.m, id)
	}
}

// dispatched returns the rows of ids, checking that each was dispatched:
// an id without a dispatched row is read again once the schedule
// projection is known to have caught up, and is missing from the result
// if it still has none. errScheduleBehind: not known yet.
func (p *projector) dispatched(ctx context.Context, tx pgx.Tx, ids []string) (map[string]dispatch, error) {
	rows, err := loadDispatches(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, id := range ids {
		if !rows[id].dispatched {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) == 0 || p.cfg.acceptUndispatched {
		return rows, nil
	}
	// The NodeDue of a genuine execution was published before anything of
	// the execution: once the schedule projection has caught up (checked
	// after the first read), reading again finds it.
	caught, err := p.scheduleCaughtUp(ctx, unknown)
	if err != nil {
		return nil, err
	}
	if !caught {
		p.metrics.scheduleWaits.Inc()
		return nil, errScheduleBehind
	}
	again, err := loadDispatches(ctx, tx, unknown)
	if err != nil {
		return nil, err
	}
	for _, id := range unknown {
		if d := again[id]; d.dispatched {
			rows[id] = d
		} else {
			delete(rows, id)
		}
	}
	return rows, nil
}

// checkBatch says why a varbind batch must not be applied (nil: it may),
// given its execution's row (ok false: not dispatched).
func checkBatch(m vbMsg, d dispatch, ok bool) *refusal {
	b := m.Batch
	switch {
	case !ok:
		return refuse(RefuseNotDispatched, "varbind batch %d of execution %s: the planner never dispatched that execution", b.Batch, b.ExecutionID)
	case d.olt != b.OLTID:
		return refuse(RefuseOtherOLT, "varbind batch %d of execution %s names OLT %s; the execution is of OLT %s", b.Batch, b.ExecutionID, b.OLTID, d.olt)
	case int64(b.LeaseRevision) < d.rev:
		return refuse(RefuseStaleAttempt, "varbind batch %d of execution %s: lease revision %d is older than the current attempt's %d", b.Batch, b.ExecutionID, b.LeaseRevision, d.rev)
	case int64(b.LeaseRevision) == d.rev && (d.status == StatusSuccess || d.status == StatusFailed) && !m.PublishedAt.IsZero() &&
		m.PublishedAt.After(d.updated.Add(ReplayGrace)):
		return refuse(RefuseAfterEnd, "varbind batch %d of execution %s was published %s after the execution ended %s (recorded %s): a replay",
			b.Batch, b.ExecutionID, m.PublishedAt.Sub(d.updated).Round(time.Second), d.status, d.updated.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkExecValues refuses an execution event with impossible values:
// negative counts, durations, attempts or lease revisions.
func checkExecValues(typ string, ev execEvent) error {
	neg := func(name string, v int64) error {
		if v < 0 {
			return refuse(RefuseImpossible, "%s of execution %s: %s %d is negative", typ, ev.ID, name, v)
		}
		return nil
	}
	dur := int64(0)
	if ev.DurationMS != nil {
		dur = *ev.DurationMS
	}
	onus, failedONUs, failedVarbinds := 0, 0, 0
	if ev.GetResult != nil {
		onus, failedONUs, failedVarbinds = ev.GetResult.ONUs, ev.GetResult.FailedONUs, ev.GetResult.FailedVarbinds
	}
	if err := errors.Join(neg("attempt", int64(ev.Attempt)), neg("duration_ms", dur), neg("varbinds", int64(ev.Varbinds)),
		neg("onus", int64(onus)), neg("failed_onus", int64(failedONUs)), neg("failed_varbinds", int64(failedVarbinds))); err != nil {
		var r *refusal
		errors.As(err, &r) // the first
		return r
	}
	if ev.LeaseRevision > math.MaxInt64 {
		return refuse(RefuseImpossible, "%s of execution %s: lease revision %d is out of range", typ, ev.ID, ev.LeaseRevision)
	}
	return nil
}

// ranByPoller reports whether an execution event is a poller's account of
// a run (started, succeeded, failed, interrupted): those need a dispatched
// execution. A skip or an abort says nothing ran (the planner publishes
// some for executions it never dispatched).
func ranByPoller(status string) bool {
	return status != StatusSkipped && status != StatusAborted
}

// projectorHealth is projection.Health, but for a message held until the
// schedule projection catches up: not this message's failure, so held
// without counting against its delivery bound.
func projectorHealth(db *pgxpool.Pool) func(ctx context.Context, cause error) error {
	h := projection.Health(db)
	return func(ctx context.Context, cause error) error {
		if errors.Is(cause, errScheduleBehind) {
			return cause
		}
		return h(ctx, cause)
	}
}

// screen splits msgs into those that may be applied and those refused
// (by stream sequence), reading their executions in tx.
func (p *projector) screen(ctx context.Context, tx pgx.Tx, msgs []vbMsg) ([]vbMsg, map[uint64]*refusal, error) {
	ids := make([]string, 0, len(msgs))
	seen := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if !seen[m.Batch.ExecutionID] {
			seen[m.Batch.ExecutionID] = true
			ids = append(ids, m.Batch.ExecutionID)
		}
	}
	rows, err := p.dispatched(ctx, tx, ids)
	if err != nil {
		return nil, nil, err
	}
	var refused map[uint64]*refusal
	keep := msgs[:0:0]
	for _, m := range msgs {
		d, ok := rows[m.Batch.ExecutionID]
		if p.cfg.acceptUndispatched && !d.dispatched {
			// Tests without a NodeDue: the other checks need a row.
			if !d.found {
				keep = append(keep, m)
				continue
			}
			ok = true
		}
		if r := checkBatch(m, d, ok); r != nil {
			if refused == nil {
				refused = map[uint64]*refusal{}
			}
			refused[m.Seq] = r
			p.log.Warn().Str("execution_id", m.Batch.ExecutionID).Str("olt_id", m.Batch.OLTID).Uint64("stream_seq", m.Seq).
				Str("reason", r.kind).Msg("varbind batch refused")
			continue
		}
		keep = append(keep, m)
	}
	return keep, refused, nil
}

// checkExecDispatched refuses a poller's account of a run (ranByPoller)
// of an execution the planner never dispatched, or dispatched for another
// OLT; errScheduleBehind holds it until that is known.
func (p *projector) checkExecDispatched(ctx context.Context, tx pgx.Tx, ev execEvent) error {
	if !ranByPoller(ev.Status) || p.js == nil {
		// A rebuild (no JetStream) replays what the live consumer
		// applied: the NodeDue it checked may have expired since.
		return nil
	}
	rows, err := p.dispatched(ctx, tx, []string{ev.ID})
	if err != nil {
		return err
	}
	d, ok := rows[ev.ID]
	var r *refusal
	switch {
	case p.cfg.acceptUndispatched && !d.dispatched:
	case !ok:
		r = refuse(RefuseNotDispatched, "execution %s (%s): the planner never dispatched that execution", ev.ID, ev.Status)
	case d.olt != ev.OLTID:
		r = refuse(RefuseOtherOLT, "execution %s (%s) names OLT %s; the execution is of OLT %s", ev.ID, ev.Status, ev.OLTID, d.olt)
	}
	if r == nil {
		return nil
	}
	p.metrics.refused.WithLabelValues(r.kind).Inc()
	p.log.Warn().Str("execution_id", ev.ID).Str("olt_id", ev.OLTID).Str("status", ev.Status).Str("reason", r.kind).Msg("execution event refused")
	return r
}
