package auditor

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/pgtest"
)

// writeExecutions' COPY in binary format (copyRow) stores what pgx's
// encoding of the same values stores: the rows, NULLs, empty and
// non-ASCII strings, timestamps before 2000 and before 1970 with
// nanoseconds, extreme numbers; a row written twice in a run (deleted by
// its id, then by its ctid once read again) is one row with the last
// values.
func TestWriteExecutionsAsPgx(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	i32 := func(v int32) *int32 { return &v }
	i64 := func(v int64) *int64 { return &v }
	ts := func(t time.Time) *time.Time { return &t }
	rows := []*qexecRow{
		{id: "e1", olt: "olt-1", task: "discovery", kind: "walk", name: "Discovery", interval: i32(300),
			scheduled: ts(time.Date(2026, 11, 23, 10, 0, 1, 123456789, time.UTC)), start: ts(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)),
			outcome: outcomeSuccess, attempt: 2, duration: i64(1500)},
		{id: "e2", olt: "olt-1", task: "j", outcome: outcomePending},
		{id: "e3 ñ ✓", olt: "", task: "", kind: "", name: "nombre \t\n\\ 'x'", interval: i32(-2147483648),
			scheduled: ts(time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("x", -3*3600))), start: ts(time.Date(1969, 7, 20, 20, 17, 40, 500, time.UTC)),
			outcome: outcomeFailed, attempt: -1, duration: i64(-9223372036854775808)},
		{id: "e4", olt: "olt-2", task: "j", scheduled: ts(time.Date(2262, 4, 11, 23, 47, 16, 854775807, time.UTC)), outcome: outcomeRunning,
			attempt: 2147483647, duration: i64(9223372036854775807)},
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE want (LIKE quota_executions INCLUDING ALL)`); err != nil {
			return err
		}
		r := &quotaRun{tx: tx, rows: map[string]*qexecRow{}}
		for _, q := range rows {
			if _, err := tx.Exec(ctx, `INSERT INTO want (execution_id, olt_id, task_type, job_kind, job_name, interval_seconds, scheduled_at, period_start,
				outcome, attempt, duration_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
				q.id, q.olt, q.task, q.kind, q.name, q.interval, q.scheduled, q.start, q.outcome, q.attempt, q.duration); err != nil {
				return err
			}
			c := *q
			c.dirty = true
			r.rows[q.id] = &c
		}
		// e1 and e2 written, then written again (by id), then read and
		// written a third time (by ctid).
		last := *r.rows["e1"]
		r.rows["e1"].outcome, r.rows["e2"].attempt = outcomeRunning, 7
		if err := r.writeExecutions(ctx); err != nil {
			return err
		}
		r.rows["e1"].outcome, r.rows["e1"].dirty, r.rows["e2"].attempt, r.rows["e2"].dirty = outcomeFailed, true, 0, true
		if err := r.writeExecutions(ctx); err != nil {
			return err
		}
		again, err := (&auditor{}).newQuotaRun(ctx, tx, "c", []string{"e1"}, nil)
		if err != nil {
			return err
		}
		if got := again.rows["e1"]; got == nil || !got.tid.Valid || got.outcome != outcomeFailed {
			t.Fatalf("e1 read back: %+v", got)
		}
		last.dirty = true
		last.tid, last.stored = again.rows["e1"].tid, true
		again.rows["e1"] = &last
		if err := again.writeExecutions(ctx); err != nil {
			return err
		}
		var n, diff int
		cols := `execution_id, olt_id, task_type, job_kind, job_name, interval_seconds, scheduled_at, period_start, outcome, attempt, duration_ms`
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM quota_executions),
			(SELECT count(*) FROM (SELECT `+cols+` FROM quota_executions EXCEPT SELECT `+cols+` FROM want) a) +
			(SELECT count(*) FROM (SELECT `+cols+` FROM want EXCEPT SELECT `+cols+` FROM quota_executions) b)`).Scan(&n, &diff); err != nil {
			return err
		}
		if n != len(rows) || diff != 0 {
			t.Errorf("%d rows copied, %d differ from pgx's", n, diff)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
