package auditor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// The quotas' batch form for a rebuild (projection.Source.ApplyBatch) of
// the schedule and execution consumers. Message by message, each event
// runs its quota_executions statement, recomputes its tracker (four
// statements), moves the watermark and, for the execution events, the
// OLT's failure streak. The batch form runs the same statements, in the
// same order, pipelined (one round trip for many), and recomputes each
// tracker the run touched once, when it is flushed, instead of after each
// event; the watermark moves once, to the latest event time.
//
// That leaves exactly what message by message leaves because a tracker
// is recomputed from its hour's executions, the previous hour's
// (whether the node ran then), the interruptions and its checked_at: a
// recompute after the run equals the one after the tracker's last event
// as long as nothing in between changed those without touching the
// tracker. Between two events of these consumers only a NodeDue can: it
// moves its execution into an hour (and out of another one, when it was
// redelivered with another time), which the hour after each also reads.
// A NodeDue that would change a tracker pending a recompute (touched, not
// recomputed since) has that tracker recomputed first, after the
// statements queued before it. Interruptions come from other consumers.

// quotaKey is one quota_tracker row (period_start as Unix seconds).
type quotaKey struct {
	olt, task string
	start     int64
}

func keyOf(olt, task string, start time.Time) quotaKey {
	return quotaKey{olt, task, start.Unix()}
}

func (k quotaKey) next() quotaKey { return quotaKey{k.olt, k.task, k.start + 3600} }

// qexecKey is where a quota_executions row counts: its olt, task and hour
// (start nil: no NodeDue yet, it counts nowhere).
type qexecKey struct {
	olt, task string
	start     *time.Time
}

// quotaRun applies a run of one consumer's events.
type quotaRun struct {
	a        *auditor
	tx       pgx.Tx
	consumer string
	rows     map[string]*qexecKey // quota_executions by execution_id; nil: no row
	dirty    map[quotaKey]bool
	order    []quotaKey // dirty, in the order first touched
	b        *pgx.Batch
	notes    []notification
	mark     time.Time
	marked   bool
}

func (a *auditor) newQuotaRun(ctx context.Context, tx pgx.Tx, consumer string, ids []string) (*quotaRun, error) {
	r := &quotaRun{a: a, tx: tx, consumer: consumer, rows: map[string]*qexecKey{}, dirty: map[quotaKey]bool{}, b: &pgx.Batch{}}
	if len(ids) == 0 {
		return r, nil
	}
	rows, err := tx.Query(ctx, `SELECT execution_id, olt_id, task_type, period_start FROM quota_executions WHERE execution_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read %d quota executions: %w", len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		k := &qexecKey{}
		if err := rows.Scan(&id, &k.olt, &k.task, &k.start); err != nil {
			return nil, fmt.Errorf("read quota executions: %w", err)
		}
		r.rows[id] = k
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read quota executions: %w", err)
	}
	return r, nil
}

// touch marks k to be recomputed at the next flush.
func (r *quotaRun) touch(k quotaKey) {
	if !r.dirty[k] {
		r.dirty[k] = true
		r.order = append(r.order, k)
	}
}

// flush runs the queued statements, then recomputes the touched trackers
// in only (nil: all of them).
func (r *quotaRun) flush(ctx context.Context, only map[quotaKey]bool) error {
	if r.b.Len() > 0 {
		b := r.b
		r.b = &pgx.Batch{}
		if err := r.tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("quota statements: %w", err)
		}
	}
	rest := r.order[:0]
	for _, k := range r.order {
		if only != nil && !only[k] {
			rest = append(rest, k)
			continue
		}
		if _, err := recompute(ctx, r.tx, k.olt, k.task, time.Unix(k.start, 0).UTC(), r.a.cfg.Quota.Threshold, nil); err != nil {
			return err
		}
		delete(r.dirty, k)
	}
	r.order = rest
	return nil
}

// watermark notes an applied event's time.
func (r *quotaRun) watermark(at time.Time) {
	if !r.marked || at.After(r.mark) {
		r.mark, r.marked = at, true
	}
}

// nodeDue queues a NodeDue's statement (a flush first when it changes a
// tracker pending a recompute) and touches its tracker, as
// scheduleDecoder's Apply recomputes it.
func (r *quotaRun) nodeDue(ctx context.Context, nd streams.NodeDue) error {
	start := period(nd.ScheduledAt)
	touched := keyOf(nd.OLTID, nd.JobID, start)
	row := r.rows[nd.ExecutionID]
	after := qexecKey{nd.OLTID, nd.JobID, &start}
	if row != nil {
		after = qexecKey{row.olt, row.task, &start} // the row keeps its olt_id and task_type
	}
	// The trackers whose inputs the statement changes: the hour the row
	// counts in after it and the one after (which asks whether the node
	// ran the hour before); when it moves, also the hour it leaves and the
	// one after that. A row staying in its hour changes only that hour's.
	ak := keyOf(after.olt, after.task, start)
	changed := []quotaKey{ak}
	switch {
	case row == nil || row.start == nil:
		changed = append(changed, ak.next())
	case !row.start.Equal(start):
		old := keyOf(row.olt, row.task, *row.start)
		changed = append(changed, ak.next(), old, old.next())
	}
	// Those pending a recompute are recomputed now, before it (the others
	// stay pending: nothing changed their inputs).
	var flush map[quotaKey]bool
	for _, k := range changed {
		if k != touched && r.dirty[k] {
			if flush == nil {
				flush = map[quotaKey]bool{}
			}
			flush[k] = true
		}
	}
	if flush != nil {
		if err := r.flush(ctx, flush); err != nil {
			return err
		}
	}
	r.b.Queue(nodeDueSQL, nodeDueArgs(nd)...)
	r.rows[nd.ExecutionID] = &after
	r.touch(touched)
	return nil
}

// exec queues an execution event's statements and touches the tracker its
// execution counts in, as execQuota's Apply recomputes it.
func (r *quotaRun) exec(q execQuotaEvent, at time.Time) {
	r.b.Queue(q.sql(), q.args()...)
	row := r.rows[q.execID]
	if row == nil {
		row = &qexecKey{olt: q.olt, task: q.job}
		r.rows[q.execID] = row
	}
	if row.start != nil {
		r.touch(keyOf(row.olt, row.task, *row.start))
	}
	switch q.streak {
	case -1:
		r.b.Queue(streakResetSQL, q.olt, q.execID, at)
	case 1:
		r.b.Queue(streakFailSQL, q.olt, q.execID, sanitizeString(q.errText), at).QueryRow(func(row pgx.Row) error {
			var n int
			if err := row.Scan(&n); err != nil {
				return fmt.Errorf("failure streak of %s: %w", q.olt, err)
			}
			if n == r.a.cfg.Notify.FailureStreak {
				r.notes = append(r.notes, streakNotification(q.olt, q.execID, q.errText, n, at))
			}
			return nil
		})
	}
}

// finish flushes, moves the watermark and writes the notifications (to
// the rebuild's scratch copy).
func (r *quotaRun) finish(ctx context.Context) error {
	if err := r.flush(ctx, nil); err != nil {
		return err
	}
	if r.marked {
		if err := watermark(ctx, r.tx, r.consumer, r.mark); err != nil {
			return err
		}
	}
	for _, n := range r.notes {
		if _, err := r.a.enqueue(ctx, r.tx, n); err != nil {
			return err
		}
	}
	return nil
}

// quotaEvent is one decoded message of a run.
type quotaEvent struct {
	env  streams.Envelope
	nd   *streams.NodeDue
	exec *execQuotaEvent
}

// decodeQuotaRun decodes msgs with parse (the live decoder's parsing),
// checks each subject against the decoded event as SubjectChecked does
// before it, and counts the malformed ones.
func decodeQuotaRun(msgs []jsrouter.Msg, parse func(streams.Envelope) (quotaEvent, func(string) (string, bool), error)) ([]quotaEvent, []string, projection.BatchResult, error) {
	var res projection.BatchResult
	evs := make([]quotaEvent, 0, len(msgs))
	var ids []string
	for _, m := range msgs {
		env, err := streams.DecodeEnvelope(m.Data)
		if err != nil {
			res.Malformed++ // DecodeEnvelope's errors are all ErrMalformed
			continue
		}
		ev, field, err := parse(env)
		if err != nil {
			res.Malformed++ // the live decoders dead-letter any parse error
			continue
		}
		// field nil (an event the quotas do not decode): the subject's
		// fields are parsed from the data.
		err = streams.CheckSubjectWith(m.Subject, env, field)
		if err != nil {
			if !errors.Is(err, streams.ErrMalformed) {
				return nil, nil, res, fmt.Errorf("decode %s seq %d: %w", m.Stream, m.Seq, err)
			}
			res.Malformed++
			continue
		}
		ev.env = env
		evs = append(evs, ev)
		switch {
		case ev.nd != nil:
			ids = append(ids, ev.nd.ExecutionID)
		case ev.exec != nil:
			ids = append(ids, ev.exec.execID)
		}
	}
	res.Applied = len(evs)
	return evs, ids, res, nil
}

// scheduleBatch is the batch form of the auditor-schedule consumer
// (scheduleDecoder).
func (a *auditor) scheduleBatch(consumer string) projection.BatchApplier {
	return func(ctx context.Context, tx pgx.Tx, msgs []jsrouter.Msg) (projection.BatchResult, error) {
		evs, ids, res, err := decodeQuotaRun(msgs, func(env streams.Envelope) (quotaEvent, func(string) (string, bool), error) {
			nd, ok, err := parseNodeDue(env)
			if err != nil || !ok {
				return quotaEvent{}, nil, err
			}
			// facho.schedule.due.{olt_id}.{class}
			return quotaEvent{nd: &nd}, func(name string) (string, bool) {
				switch name {
				case "olt_id":
					return nd.OLTID, true
				case "class":
					return nd.Class, true
				}
				return "", false
			}, nil
		})
		if err != nil || len(evs) == 0 {
			return res, err
		}
		r, err := a.newQuotaRun(ctx, tx, consumer, ids)
		if err != nil {
			return res, err
		}
		for _, ev := range evs {
			if ev.nd != nil {
				if err := r.nodeDue(ctx, *ev.nd); err != nil {
					return res, err
				}
			}
			r.watermark(ev.env.Time)
		}
		return res, r.finish(ctx)
	}
}

// execQuotaBatch is the batch form of the auditor-quota-exec consumer
// (execQuota).
func (a *auditor) execQuotaBatch(consumer string) projection.BatchApplier {
	return func(ctx context.Context, tx pgx.Tx, msgs []jsrouter.Msg) (projection.BatchResult, error) {
		evs, ids, res, err := decodeQuotaRun(msgs, func(env streams.Envelope) (quotaEvent, func(string) (string, bool), error) {
			q, ok, err := parseExecQuota(env)
			if err != nil || !ok {
				return quotaEvent{}, nil, err
			}
			// facho.exec.{olt_id}.<phase>
			return quotaEvent{exec: &q}, func(name string) (string, bool) { return q.olt, name == "olt_id" }, nil
		})
		if err != nil || len(evs) == 0 {
			return res, err
		}
		r, err := a.newQuotaRun(ctx, tx, consumer, ids)
		if err != nil {
			return res, err
		}
		for _, ev := range evs {
			if ev.exec != nil {
				r.exec(*ev.exec, ev.env.Time)
			}
			r.watermark(ev.env.Time)
		}
		return res, r.finish(ctx)
	}
}
