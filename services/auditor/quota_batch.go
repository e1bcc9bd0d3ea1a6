package auditor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// The quotas' batch form for a rebuild (projection.Source.ApplyBatch) of
// the schedule and execution consumers. Message by message, each event
// runs its quota_executions statement, recomputes its tracker (four
// statements), moves the watermark and, for the execution events, the
// OLT's failure streak. The batch form applies the same rules in memory,
// in the same order (the quota_executions and failure_streaks rows the
// run touches are read once), writes each changed row once, and
// recomputes each tracker the run touched once, when it is flushed,
// instead of after each event; the watermark moves once, to the latest
// event time.
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

// qexecRow is a quota_executions row in memory (start nil: no NodeDue
// yet, it counts in no tracker); stored: the table has it (read, or
// written by the run); tid: where the run read it (invalid once the run
// wrote it).
type qexecRow struct {
	tid                       pgtype.TID
	id, olt, task, kind, name string
	interval                  *int32
	scheduled, start          *time.Time
	outcome                   string
	attempt                   int32
	duration                  *int64
	dirty, stored             bool
}

// streakRow is a failure_streaks row in memory.
type streakRow struct {
	n                 int32
	lastExec, lastErr string
	at                time.Time
	dirty             bool
}

// quotaRun applies a run of one consumer's events.
type quotaRun struct {
	a        *auditor
	tx       pgx.Tx
	consumer string
	rows     map[string]*qexecRow  // quota_executions by execution_id
	streaks  map[string]*streakRow // failure_streaks by olt_id; nil: no row
	dirty    map[quotaKey]bool
	order    []quotaKey // dirty, in the order first touched
	notes    []notification
	mark     time.Time
	marked   bool
}

func (a *auditor) newQuotaRun(ctx context.Context, tx pgx.Tx, consumer string, ids, olts []string) (*quotaRun, error) {
	r := &quotaRun{a: a, tx: tx, consumer: consumer, rows: map[string]*qexecRow{}, streaks: map[string]*streakRow{}, dirty: map[quotaKey]bool{}}
	var b pgx.Batch
	b.Queue(`SELECT ctid, execution_id, olt_id, task_type, job_kind, job_name, interval_seconds, scheduled_at, period_start, outcome, attempt, duration_ms
		FROM quota_executions WHERE execution_id = ANY($1)`, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			q := &qexecRow{stored: true}
			if err := rows.Scan(&q.tid, &q.id, &q.olt, &q.task, &q.kind, &q.name, &q.interval, &q.scheduled, &q.start, &q.outcome, &q.attempt, &q.duration); err != nil {
				return err
			}
			r.rows[q.id] = q
		}
		return rows.Err()
	})
	b.Queue(`SELECT olt_id, consecutive_failures, last_execution_id, last_error, updated_at FROM failure_streaks WHERE olt_id = ANY($1)`, olts).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var olt string
			f := &streakRow{}
			if err := rows.Scan(&olt, &f.n, &f.lastExec, &f.lastErr, &f.at); err != nil {
				return err
			}
			r.streaks[olt] = f
		}
		return rows.Err()
	})
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, fmt.Errorf("read %d quota executions: %w", len(ids), err)
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

// flush writes the changed rows, then recomputes the touched trackers in
// only (nil: all of them).
func (r *quotaRun) flush(ctx context.Context, only map[quotaKey]bool) error {
	if err := r.writeExecutions(ctx); err != nil {
		return err
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

// writeExecutions writes the changed quota_executions rows: those in the
// table are deleted, then all are copied in. An upsert of them (INSERT
// ... ON CONFLICT DO UPDATE from parameter arrays) leaves the same rows
// at a higher cost to Postgres, which is on the same cores: a conflict
// check per row, and each update's index entries try a bottom-up
// deletion that cannot free anything (the old versions are the run's
// own); COPY also skips the arrays' unnesting. 10,000 rows of 60,000 in
// psql: 90-150 ms upserted, 45-110 ms deleted and inserted; the quotas'
// rebuild of 150,000 events: 0.93-1.03 s of Postgres CPU, 0.80-0.89 s.
// A row read at the run's start is deleted by its ctid (no scan of the
// table for the ids), one the run wrote before by its id; the rows are
// copied in COPY's binary format, written here (copyRow) instead of by
// pgx's per-value encoding. An execution_id another worker's run
// inserted meanwhile (an execution whose events name two OLTs, which the
// partition by OLT takes not to happen) fails the copy with a unique
// violation, and the rebuild applies that run message by message.
func (r *quotaRun) writeExecutions(ctx context.Context) error {
	var (
		tids []pgtype.TID
		ids  []string
		n    int
	)
	// PGCOPY header: signature, flags, no extension.
	buf := append([]byte("PGCOPY\n\xff\r\n\x00"), 0, 0, 0, 0, 0, 0, 0, 0)
	for _, q := range r.rows {
		if !q.dirty {
			continue
		}
		switch {
		case q.tid.Valid:
			tids = append(tids, q.tid)
		case q.stored:
			ids = append(ids, q.id)
		}
		q.dirty, q.stored, q.tid = false, true, pgtype.TID{}
		buf = q.copyRow(buf)
		n++
	}
	if n == 0 {
		return nil
	}
	buf = binary.BigEndian.AppendUint16(buf, 0xffff) // trailer
	if len(tids) > 0 {
		if _, err := r.tx.Exec(ctx, `DELETE FROM quota_executions WHERE ctid = ANY($1)`, tids); err != nil {
			return fmt.Errorf("replace %d quota executions: %w", len(tids), err)
		}
	}
	if len(ids) > 0 {
		if _, err := r.tx.Exec(ctx, `DELETE FROM quota_executions WHERE execution_id = ANY($1)`, ids); err != nil {
			return fmt.Errorf("replace %d quota executions: %w", len(ids), err)
		}
	}
	// updated_at: its default, now(), as the upserts set it.
	_, err := r.tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(buf), `COPY quota_executions (execution_id, olt_id, task_type, job_kind,
		job_name, interval_seconds, scheduled_at, period_start, outcome, attempt, duration_ms) FROM STDIN (FORMAT binary)`)
	if err != nil {
		return fmt.Errorf("write %d quota executions: %w", n, err)
	}
	return nil
}

// copyRow appends q as a row of writeExecutions' COPY, in binary format:
// per column its length (-1: NULL) and its value as the type's binary
// receive function reads it, as pgx would encode it.
func (q *qexecRow) copyRow(b []byte) []byte {
	text := func(b []byte, s string) []byte {
		return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
	}
	null := func(b []byte) []byte { return binary.BigEndian.AppendUint32(b, 0xffffffff) }
	// timestamptz: microseconds since 2000-01-01 UTC, as pgx computes them.
	stamp := func(b []byte, t *time.Time) []byte {
		if t == nil {
			return null(b)
		}
		us := t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - 946_684_800*1_000_000
		return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(b, 8), uint64(us))
	}
	b = binary.BigEndian.AppendUint16(b, 11)
	b = text(text(text(text(text(b, q.id), q.olt), q.task), q.kind), q.name)
	if q.interval == nil {
		b = null(b)
	} else {
		b = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, 4), uint32(*q.interval))
	}
	b = text(stamp(stamp(b, q.scheduled), q.start), q.outcome)
	b = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, 4), uint32(q.attempt))
	if q.duration == nil {
		return null(b)
	}
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(b, 8), uint64(*q.duration))
}

// writeStreaks upserts the changed failure_streaks rows.
func (r *quotaRun) writeStreaks(ctx context.Context) error {
	var (
		olts, execs, errs []string
		ns                []int32
		ats               []time.Time
	)
	for olt, f := range r.streaks {
		if f == nil || !f.dirty {
			continue
		}
		olts, execs, errs, ns, ats = append(olts, olt), append(execs, f.lastExec), append(errs, f.lastErr), append(ns, f.n), append(ats, f.at)
	}
	if len(olts) == 0 {
		return nil
	}
	_, err := r.tx.Exec(ctx, `INSERT INTO failure_streaks (olt_id, consecutive_failures, last_execution_id, last_error, updated_at)
		SELECT * FROM unnest($1::text[], $2::int4[], $3::text[], $4::text[], $5::timestamptz[])
		ON CONFLICT (olt_id) DO UPDATE SET consecutive_failures = EXCLUDED.consecutive_failures, last_execution_id = EXCLUDED.last_execution_id,
			last_error = EXCLUDED.last_error, updated_at = EXCLUDED.updated_at`, olts, ns, execs, errs, ats)
	if err != nil {
		return fmt.Errorf("write %d failure streaks: %w", len(olts), err)
	}
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
func (r *quotaRun) nodeDue(ctx context.Context, nd *dueQuota) error {
	start := period(nd.scheduled)
	touched := keyOf(nd.olt, nd.job, start)
	row := r.rows[nd.execID]
	olt, task := nd.olt, nd.job
	if row != nil {
		olt, task = row.olt, row.task // the row keeps its olt_id and task_type
	}
	// The trackers whose inputs the statement changes: the hour the row
	// counts in after it and the one after (which asks whether the node
	// ran the hour before); when it moves, also the hour it leaves and the
	// one after that. A row staying in its hour changes only that hour's.
	ak := keyOf(olt, task, start)
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
	// nodeDueSQL in memory.
	if row == nil {
		row = &qexecRow{id: nd.execID, olt: nd.olt, task: nd.job, outcome: outcomePending}
		r.rows[nd.execID] = row
	}
	interval, scheduled := int32(nd.interval), nd.scheduled
	row.kind, row.name, row.interval, row.scheduled, row.start, row.dirty = nd.kind, nd.name, &interval, &scheduled, &start, true
	r.touch(touched)
	return nil
}

// exec applies an execution event (its quota_executions statement and
// the failure streak's, in memory) and touches the tracker its execution
// counts in, as execQuota's Apply recomputes it.
func (r *quotaRun) exec(q execQuotaEvent, at time.Time) {
	row := r.rows[q.execID]
	switch {
	case row == nil:
		row = &qexecRow{id: q.execID, olt: q.olt, task: q.job, outcome: q.outcome, attempt: int32(q.attempt), duration: q.duration, dirty: true}
		r.rows[q.execID] = row
	case q.replaces(row.outcome, row.attempt):
		row.outcome, row.attempt, row.dirty = q.outcome, max(row.attempt, int32(q.attempt)), true
		if q.duration != nil {
			row.duration = q.duration
		}
	}
	if row.start != nil {
		r.touch(keyOf(row.olt, row.task, *row.start))
	}
	f := r.streaks[q.olt]
	switch {
	case q.streak == -1 && f != nil: // streakResetSQL
		f.n, f.lastExec, f.lastErr, f.at, f.dirty = 0, q.execID, "", at, true
	case q.streak == 1: // streakFailSQL
		if f == nil {
			f = &streakRow{n: 1}
			r.streaks[q.olt] = f
		} else if f.lastExec != q.execID {
			f.n++
		}
		f.lastExec, f.lastErr, f.at, f.dirty = q.execID, sanitizeString(q.errText), at, true
		if int(f.n) == r.a.cfg.Notify.FailureStreak {
			r.notes = append(r.notes, streakNotification(q.olt, q.execID, q.errText, int(f.n), at))
		}
	}
}

// replaces is the event's condition (cond) on the stored outcome and
// attempt (TestReplacesIsCond).
func (q execQuotaEvent) replaces(outcome string, attempt int32) bool {
	a := int32(q.attempt)
	final := outcome == outcomeSuccess || outcome == outcomeAborted
	pending := outcome == outcomePending || outcome == outcomeRunning
	switch q.outcome {
	case outcomeRunning:
		return !final && (attempt < a || (attempt == a && outcome == outcomePending))
	case outcomeSuccess:
		return !final
	case outcomeFailed:
		return !final && attempt <= a
	case outcomeSkipped:
		return pending && (a == 0 || attempt <= a) || (outcome == outcomeFailed || outcome == outcomeInterrupted) && attempt < a
	case outcomeInterrupted:
		return !final && (attempt < a || (attempt == a && pending))
	case outcomeAborted:
		return pending || outcome == outcomeFailed || outcome == outcomeInterrupted
	}
	return false
}

// finish flushes, moves the watermark and writes the notifications (to
// the rebuild's scratch copy).
func (r *quotaRun) finish(ctx context.Context) error {
	if err := r.flush(ctx, nil); err != nil {
		return err
	}
	if err := r.writeStreaks(ctx); err != nil {
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

// quotaEvent is one decoded message of a run: its envelope's time (the
// watermark) and what the quotas read of it (neither due nor exec: a
// message that only moves the watermark).
type quotaEvent struct {
	at   time.Time
	due  *dueQuota
	exec *execQuotaEvent
}

// dueQuota is what the quotas read of a NodeDue (nodeDueSQL's columns).
type dueQuota struct {
	execID, olt, job, kind, name string
	interval                     int
	scheduled                    time.Time
}

func dueQuotaOf(nd *streams.NodeDue) *dueQuota {
	return &dueQuota{execID: nd.ExecutionID, olt: nd.OLTID, job: nd.JobID, kind: nd.Kind, name: nd.JobName,
		interval: nd.IntervalSeconds, scheduled: nd.ScheduledAt}
}

// quotaDecodeChunk is the least run decodeQuotaRun splits over the cores.
const quotaDecodeChunk = 1000

// decodeQuotaRun decodes msgs with parse (the live decoder's parsing),
// checks each subject against the decoded event as SubjectChecked does
// before it, and counts the malformed ones. fast, when set, decodes a
// message in one pass with its subject checked; false sends it down the
// general path. A long run is decoded in chunks on every core at once
// (decoding is most of the run's CPU, and the quota sources are applied
// one run at a time), the results kept in stream order.
func decodeQuotaRun(msgs []jsrouter.Msg, parse func(streams.Envelope) (quotaEvent, func(string) (string, bool), error),
	fast func(*projection.Decoders, jsrouter.Msg) (quotaEvent, bool)) ([]quotaEvent, []string, projection.BatchResult, error) {
	n := min(runtime.GOMAXPROCS(0), len(msgs)/quotaDecodeChunk)
	if n < 2 {
		return decodeQuotaChunk(msgs, parse, fast)
	}
	type part struct {
		evs []quotaEvent
		ids []string
		res projection.BatchResult
		err error
	}
	parts := make([]part, n)
	var wg sync.WaitGroup
	size := (len(msgs) + n - 1) / n
	for i := range parts {
		chunk := msgs[min(i*size, len(msgs)):min((i+1)*size, len(msgs))]
		wg.Go(func() {
			p := &parts[i]
			p.evs, p.ids, p.res, p.err = decodeQuotaChunk(chunk, parse, fast)
		})
	}
	wg.Wait()
	var (
		evs = make([]quotaEvent, 0, len(msgs))
		ids []string
		res projection.BatchResult
	)
	for _, p := range parts {
		res.Applied += p.res.Applied
		res.Malformed += p.res.Malformed
		if p.err != nil {
			return nil, nil, res, p.err
		}
		evs, ids = append(evs, p.evs...), append(ids, p.ids...)
	}
	return evs, ids, res, nil
}

// decodeQuotaChunk is decodeQuotaRun of one chunk, on one core.
func decodeQuotaChunk(msgs []jsrouter.Msg, parse func(streams.Envelope) (quotaEvent, func(string) (string, bool), error),
	fast func(*projection.Decoders, jsrouter.Msg) (quotaEvent, bool)) ([]quotaEvent, []string, projection.BatchResult, error) {
	var res projection.BatchResult
	evs := make([]quotaEvent, 0, len(msgs))
	var ids []string
	dec := projection.NewDecoders()
	for _, m := range msgs {
		ev, ok := quotaEvent{}, false
		if fast != nil {
			ev, ok = fast(dec, m)
		}
		if !ok {
			env, err := streams.DecodeEnvelope(m.Data)
			if err != nil {
				res.Malformed++ // DecodeEnvelope's errors are all ErrMalformed
				continue
			}
			var field func(string) (string, bool)
			ev, field, err = parse(env)
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
			ev.at = env.Time
		}
		evs = append(evs, ev)
		switch {
		case ev.due != nil:
			ids = append(ids, ev.due.execID)
		case ev.exec != nil:
			ids = append(ids, ev.exec.execID)
		}
	}
	res.Applied = len(evs)
	return evs, ids, res, nil
}

// nodeDueOn is scheduleBatch's parse in one pass (projection.DecodeOn):
// ok only for a NodeDue the general path takes as it is (the same
// payload, its subject checked); anything else goes down that path,
// which decides as the live decoder does (it checks no version, for one).
// The NodeDue is decoded into the memory of the one before it
// (DecodeOnReused): most of it (the target, the OIDs and their decoders)
// the quotas never read, and it is the same event after event.
func nodeDueOn(d *projection.Decoders, m jsrouter.Msg) (quotaEvent, bool) {
	env, nd, err := projection.DecodeOnReused[streams.NodeDue](d, m.Subject, m.Data)
	if err != nil || nd.ScheduledAt.IsZero() { // parseNodeDue's own refusal
		return quotaEvent{}, false
	}
	return quotaEvent{at: env.Time, due: dueQuotaOf(nd)}, true
}

// execQuotaOn is execQuotaBatch's parse in one pass (projection.DecodeOn,
// as the type the subject's phase names): ok only for an event the
// general path takes as it is (the same payload, its subject checked);
// anything else goes down that path, which decides as the live decoder
// does.
func execQuotaOn(d *projection.Decoders, m jsrouter.Msg) (quotaEvent, bool) {
	var (
		env streams.Envelope
		q   execQuotaEvent
		err error
	)
	switch m.Subject[strings.LastIndexByte(m.Subject, '.')+1:] {
	case streams.PhaseStarted:
		env, q, err = execQuotaOnAs(d, m, startedQuota)
	case streams.PhaseSucceeded:
		env, q, err = execQuotaOnAs(d, m, succeededQuota)
	case streams.PhaseFailed:
		env, q, err = execQuotaOnAs(d, m, failedQuota)
	case streams.PhaseSkipped:
		env, q, err = execQuotaOnAs(d, m, skippedQuota)
	case streams.PhaseInterrupted:
		env, q, err = execQuotaOnAs(d, m, interruptedQuota)
	case streams.PhaseAborted:
		env, q, err = execQuotaOnAs(d, m, abortedQuota)
	default:
		return quotaEvent{}, false
	}
	if err != nil || q.check(env.Type) != nil {
		return quotaEvent{}, false
	}
	return quotaEvent{at: env.Time, exec: &q}, true
}

// execQuotaOnAs decodes m as T into the memory of the T before it
// (DecodeOnReused): of keeps only strings and numbers.
func execQuotaOnAs[T streams.Event](d *projection.Decoders, m jsrouter.Msg, of func(T) execQuotaEvent) (streams.Envelope, execQuotaEvent, error) {
	env, ev, err := projection.DecodeOnReused[T](d, m.Subject, m.Data)
	if err != nil {
		return env, execQuotaEvent{}, err
	}
	return env, of(*ev), nil
}

// nodeDueSubjectFields answers streams.CheckSubjectWith for nd: the
// fields its subject names (facho.schedule.due.{olt_id}.{class}).
func nodeDueSubjectFields(nd *streams.NodeDue) func(string) (string, bool) {
	return func(name string) (string, bool) {
		switch name {
		case "olt_id":
			return nd.OLTID, true
		case "class":
			return nd.Class, true
		}
		return "", false
	}
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
			return quotaEvent{due: dueQuotaOf(&nd)}, nodeDueSubjectFields(&nd), nil
		}, nodeDueOn)
		if err != nil || len(evs) == 0 {
			return res, err
		}
		r, err := a.newQuotaRun(ctx, tx, consumer, ids, nil)
		if err != nil {
			return res, err
		}
		for _, ev := range evs {
			if ev.due != nil {
				if err := r.nodeDue(ctx, ev.due); err != nil {
					return res, err
				}
			}
			r.watermark(ev.at)
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
		}, execQuotaOn)
		if err != nil || len(evs) == 0 {
			return res, err
		}
		var olts []string
		for _, ev := range evs {
			if ev.exec != nil && ev.exec.streak != 0 {
				olts = append(olts, ev.exec.olt)
			}
		}
		r, err := a.newQuotaRun(ctx, tx, consumer, ids, olts)
		if err != nil {
			return res, err
		}
		for _, ev := range evs {
			if ev.exec != nil {
				r.exec(*ev.exec, ev.at)
			}
			r.watermark(ev.at)
		}
		return res, r.finish(ctx)
	}
}
