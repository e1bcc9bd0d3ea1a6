package projector

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/pgtest"
)

// The projector's screening lookup of executions is planned for its ids at
// every call. As a cached prepared statement, Postgres adopted a generic
// plan costed on the table as it was at the first calls (empty: a
// sequential scan) and kept it while the table grew, as long as nothing
// analyzed the table: every lookup then read the whole table.
func TestScreeningLookupPlannedForItsIDs(t *testing.T) {
	pool := pgtest.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `ALTER TABLE executions SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	lookup := func(ids []string) {
		t.Helper()
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := loadDispatches(ctx, tx, ids)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The first calls, on an empty table, with a group's worth of ids.
	var ids []string
	for i := range 40 {
		ids = append(ids, fmt.Sprintf("exec-%d", i))
	}
	for range 8 {
		lookup(ids)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, kind, node_id)
		SELECT 'exec-' || i, 'job', 'olt-' || (i % 3000), 'SUCCESS', 'discovery', 'n' FROM generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}
	seqScans := func() int64 {
		t.Helper()
		var n int64
		if err := conn.QueryRow(ctx, `SELECT pg_stat_force_next_flush()`).Scan(new(any)); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'executions'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := seqScans()
	for i := range 20 {
		lookup([]string{fmt.Sprintf("exec-%d", 100+i)})
	}
	if n := seqScans() - before; n != 0 {
		t.Errorf("%d of 20 lookups of one execution scanned the whole table", n)
	}
}
