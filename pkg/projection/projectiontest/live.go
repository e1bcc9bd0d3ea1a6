package projectiontest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/replay"
)

// RebuildEqualsLive checks model against what the live consumers left in
// its tables (they must have caught up):
//
//   - a dry-run rebuild finds every live table identical, row for row, and
//     none empty but those of mayBeEmpty;
//   - independently of the rebuild's own comparison: the live rows are
//     copied aside (Snapshot), the live tables emptied, a rebuild swapped
//     in, and the swapped-in rows compared with the copy (Diff).
func RebuildEqualsLive(t testing.TB, js jetstream.JetStream, db *pgxpool.Pool, model projection.ReadModel, mayBeEmpty ...string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	rep, err := replay.Rebuild(ctx, js, db, model, replay.RebuildOptions{DryRun: true, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: dry run in %s (%.0f msg/s): %s", model.Name, time.Since(start).Round(time.Millisecond), float64(rep.Messages)/time.Since(start).Seconds(), rep.String())
	if !rep.Identical {
		t.Errorf("%s: rebuild differs from live:\n%s", model.Name, rep)
	}
	for _, tr := range rep.Tables {
		if tr.LiveRows == 0 && !slices.Contains(mayBeEmpty, tr.Name) {
			t.Errorf("%s: live table %s empty", model.Name, tr.Name)
		}
	}
	snap := "live_" + model.Name
	Snapshot(t, db, snap, model.Tables)
	for _, tb := range model.Tables {
		if _, err := db.Exec(ctx, `DELETE FROM `+pgx.Identifier{tb.Name}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = replay.Rebuild(ctx, js, db, model, replay.RebuildOptions{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Swapped {
		t.Fatalf("%s: rebuild into emptied tables not swapped: %s", model.Name, rep)
	}
	for table, n := range Diff(t, db, snap, model.Tables) {
		if n != 0 {
			t.Errorf("%s: %d rows differ between the rebuild and the live consumers", table, n)
		}
	}
}
