package replay_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/streams"
)

// A rebuild's statements on the shadow are planned for their parameters
// and the shadow as it is, never with a cached generic plan: the shadow
// starts empty at each rebuild and grows unanalyzed, and a generic plan
// costed early (or on a pooled connection that ran the statement in an
// earlier rebuild, against a new, empty shadow) kept a seq scan that
// checks each row against a parameter array one element at a time (the
// quotas' `execution_id = ANY($1)`: 2-7 s a run of 10,000 ids instead
// of milliseconds). The batch form below looks its run's ids up several
// times per transaction, as Postgres's plan cache would switch to a
// generic plan after 5 executions, and asks the session's prepared
// statements whether it did; the second rebuild runs on the connections
// the first one used.
func TestRebuildPlansShadowStatementsAfresh(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Exec(ctx, `CREATE TABLE items (id text PRIMARY KEY, seq bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := 0; i < n; i++ {
		if _, err := env.JS.PublishAsync(streams.SubjectAudit("test"), []byte(fmt.Sprintf("item-%05d", i))); err != nil {
			t.Fatal(err)
		}
	}
	<-env.JS.PublishAsyncComplete()
	const lookup = `SELECT count(*) FROM items WHERE id = ANY($1)`
	var (
		mu      sync.Mutex
		generic int64 // executions of lookup with a generic plan, at most, per session
	)
	insert := func(ctx context.Context, tx pgx.Tx, ids []string, seqs []int64) error {
		_, err := tx.Exec(ctx, `INSERT INTO items (id, seq) SELECT * FROM unnest($1::text[], $2::int8[])
			ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq`, ids, seqs)
		return err
	}
	model := projection.ReadModel{
		Name: "items",
		Sources: []projection.Source{{Stream: streams.StreamAudit, Consumer: "items-test", Batch: 200,
			Decode: func(m jsrouter.Msg) (projection.Change, error) {
				return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
					return insert(ctx, tx, []string{string(m.Data)}, []int64{int64(m.Seq)})
				}}, nil
			},
			ApplyBatch: func(ctx context.Context, tx pgx.Tx, msgs []jsrouter.Msg) (projection.BatchResult, error) {
				ids, seqs := make([]string, len(msgs)), make([]int64, len(msgs))
				for i, m := range msgs {
					ids[i], seqs[i] = string(m.Data), int64(m.Seq)
				}
				for range 8 {
					var found int64
					if err := tx.QueryRow(ctx, lookup, ids).Scan(&found); err != nil {
						return projection.BatchResult{}, err
					}
				}
				if err := insert(ctx, tx, ids, seqs); err != nil {
					return projection.BatchResult{}, err
				}
				var g int64
				if err := tx.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0) FROM pg_prepared_statements WHERE statement = $1`, lookup).Scan(&g); err != nil {
					return projection.BatchResult{}, err
				}
				mu.Lock()
				generic = max(generic, g)
				mu.Unlock()
				return projection.BatchResult{Applied: len(msgs)}, nil
			}}},
		Tables: []projection.Table{{Name: "items", Key: []string{"id"}}},
	}
	for round, want := range []string{"swapped", "identical"} {
		rep, err := replay.Rebuild(ctx, env.JS, db, model, replay.RebuildOptions{Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if got := map[bool]string{true: "swapped", false: "identical"}[rep.Swapped]; got != want || rep.Swapped == rep.Identical || rep.Tables[0].ShadowRows != n {
			t.Fatalf("rebuild %d: %s", round+1, rep)
		}
	}
	if generic > 0 {
		t.Errorf("the shadow's lookup ran %d times with a generic plan (a plan costed on the shadow as it was once, kept while it grows)", generic)
	}
}
