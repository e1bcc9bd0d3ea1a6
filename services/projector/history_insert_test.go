package projector

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/pgtest"
)

// TestHistoryInsertKeepsRowsAlreadyThere: the plain insert's fast path
// and its fallback. Rows new to the table go in as they are; when one of
// them is already there (a replay over a table that kept its rows) the
// transaction goes on, that row keeps its stored values, the others are
// written, and nothing is written twice.
func TestHistoryInsertKeepsRowsAlreadyThere(t *testing.T) {
	pool := pgtest.New(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	rows := func(seq uint64, onus ...int64) *historyRows {
		h := &historyRows{}
		for _, onu := range onus {
			h.push("olt-h", "exec-1", seq, at, ONUKey{PonIndex: 1, ONUID: onu}, "status", optText{}, optText{v: "online", set: true})
		}
		return h
	}
	insert := func(h *historyRows) {
		t.Helper()
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := h.insert(ctx, tx); err != nil {
				return err
			}
			// The transaction is still usable after the fallback.
			_, err := tx.Exec(ctx, `SELECT 1`)
			return err
		})
		if err != nil {
			t.Fatalf("insert: %v", err)
		}
	}
	insert(rows(7, 1, 2))
	if _, err := pool.Exec(ctx, `UPDATE onu_history SET new_value = 'kept' WHERE onu_id = 2`); err != nil {
		t.Fatal(err)
	}
	insert(rows(7, 2, 3, 4)) // onu 2 at seq 7 is there: fallback
	insert(rows(8, 2))       // a later change of onu 2: fast path
	got := map[[2]int64]string{}
	q, err := pool.Query(ctx, `SELECT onu_id, stream_seq, new_value FROM onu_history WHERE olt_id = 'olt-h'`)
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var onu, seq int64
		var v string
		if err := q.Scan(&onu, &seq, &v); err != nil {
			t.Fatal(err)
		}
		got[[2]int64{onu, seq}] = v
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[[2]int64]string{{1, 7}: "online", {2, 7}: "kept", {3, 7}: "online", {4, 7}: "online", {2, 8}: "online"}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("onu %d seq %d: %q, want %q", k[0], k[1], got[k], v)
		}
	}
}
