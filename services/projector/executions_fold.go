package projector

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
)

// The executions read model's Fold (projection.ReadModel.Fold): a
// rebuild's first pass folds the NodeDue (source 0) and the lifecycle
// events (source 1) of every execution in memory, by the rules the batch
// form applies (applyNodeDueBatch, execState.apply), and writes each table
// once with COPY into the empty shadow. Per batch, the set-based form
// reads back and rewrites every execution it touches: most of a rebuild's
// Postgres time went there. The dead letters (source 2) follow batch by
// batch on top, as they do after the other sources without a fold.

// execFoldSources is how many leading sources of the executions model
// the fold takes: the schedule and the lifecycle streams.
const execFoldSources = 2

type execFold struct {
	p  *projector
	st *execState
}

func (p *projector) newExecFold() projection.Folder {
	return &execFold{p: p, st: &execState{rows: map[string]*memExec{}, attempts: map[attemptKey]*memAttempt{}, deadLetters: map[string]int{}}}
}

func (f *execFold) Folds(source int) bool { return source < execFoldSources }

func (f *execFold) Decode(source int, msgs []jsrouter.Msg) (any, projection.BatchResult, error) {
	if source == 0 {
		return decodeDues(msgs)
	}
	return decodeExecs(msgs)
}

func (f *execFold) Fold(source int, decoded any) error {
	switch d := decoded.(type) {
	case []due:
		for _, n := range d {
			f.st.due(n)
		}
		return nil
	case []execEvent:
		// The shadow's execution_dead_letters is empty: its source comes
		// after this one, as the batch form finds it.
		return f.p.applyExecs(f.st, d)
	}
	return fmt.Errorf("executions fold: source %d decoded as %T", source, decoded)
}

func (f *execFold) Rows() int { return len(f.st.rows) + len(f.st.attempts) }

// due is decodeNodeDue's upsert in memory: a new execution is PENDING with
// the event's job and OLT; scheduled_at is the first one set; the queue
// fields are the last event's.
func (st *execState) due(n due) {
	r := st.rows[n.id]
	if r == nil {
		r = &memExec{JobID: n.job, OLTID: n.olt, Status: StatusPending, ScheduledAt: n.sched}
		st.rows[n.id] = r
	} else if r.ScheduledAt == nil {
		r.ScheduledAt = n.sched
	}
	r.NodeID, r.Kind, r.Priority, r.DelaySeconds, r.dirty = n.node, n.kind, n.prio, n.delay, true
}

// Writes copy the folded rows into the empty shadow tables, one COPY per
// table, at once; updated_at takes its default, now(), as the upserts
// set it.
func (f *execFold) Writes() []func(ctx context.Context, tx pgx.Tx) error {
	return []func(ctx context.Context, tx pgx.Tx) error{f.writeExecutions, f.writeAttempts}
}

func (f *execFold) writeExecutions(ctx context.Context, tx pgx.Tx) error {
	rows := make([][]any, 0, len(f.st.rows))
	for id, r := range f.st.rows {
		// The integer columns as the batch form's int4 arrays pass them.
		rows = append(rows, []any{id, r.JobID, r.OLTID, r.Status, int32(r.Attempt), r.PollerID, r.ScheduledAt, r.StartedAt, r.FinishedAt,
			r.DurationMS, int32(r.Varbinds), r.Error, r.LeaseRevision, r.NodeID, r.Kind, int32(r.Priority), r.DelaySeconds, int32(r.DeadLettered),
			int32(r.ONUs), int32(r.FailedONUs), int32(r.FailedVarbinds), r.ONUFailures, r.Cause})
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"executions"}, []string{"id", "job_id", "olt_id", "status", "attempt", "poller_id",
		"scheduled_at", "started_at", "finished_at", "duration_ms", "varbinds", "error", "lease_revision", "node_id", "kind", "priority",
		"delay_seconds", "dead_lettered_batches", "onus", "failed_onus", "failed_varbinds", "onu_failures", "cause"}, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy %d executions: %w", len(rows), err)
	}
	return nil
}

func (f *execFold) writeAttempts(ctx context.Context, tx pgx.Tx) error {
	rows := make([][]any, 0, len(f.st.attempts))
	for k, a := range f.st.attempts {
		rows = append(rows, []any{k.ID, int32(k.Attempt), a.PollerID, a.Status, a.StartedAt, a.FinishedAt, a.Error, a.LeaseRevision, a.DurationMS})
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"execution_attempts"}, []string{"execution_id", "attempt", "poller_id", "status",
		"started_at", "finished_at", "error", "lease_revision", "duration_ms"}, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy %d execution attempts: %w", len(rows), err)
	}
	return nil
}
