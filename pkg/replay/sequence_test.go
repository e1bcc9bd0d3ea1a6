package replay_test

import (
	"context"
	"fmt"
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

// A rebuild draws no value from the live sequences of the columns it does
// not swap in (Table.Generated) nor of its scratch tables: the shadow has
// sequences of its own. The swap takes the rows' ids from the live
// sequence, once each.
func TestRebuildLeavesLiveSequences(t *testing.T) {
	for _, uniqueOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("ShadowUniqueOnly=%v", uniqueOnly), func(t *testing.T) { testRebuildLeavesLiveSequences(t, uniqueOnly) })
	}
}

// With ShadowUniqueOnly, the shadow leaves the Generated column empty:
// no default drawn, no index over it (the primary key), and the swap
// still takes the ids from the live sequence.
func testRebuildLeavesLiveSequences(t *testing.T, uniqueOnly bool) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Exec(ctx, `CREATE TABLE notes (id bigserial PRIMARY KEY, word text NOT NULL UNIQUE, seq bigint NOT NULL);
		CREATE INDEX notes_seq ON notes (seq);
		CREATE TABLE notes_outbox (id bigserial PRIMARY KEY, seq bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	words := []string{"a", "b", "c", "d", "e"}
	for _, w := range words {
		if _, err := env.JS.Publish(ctx, streams.SubjectAudit("test"), []byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	var shadowIDIndexes, shadowIDs int64 = -1, -1
	dec := func(m jsrouter.Msg) (projection.Change, error) {
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO notes (word, seq) VALUES ($1, $2)`, string(m.Data), int64(m.Seq)); err != nil {
				return err
			}
			// search_path puts the shadow first: what the rebuild's notes
			// look like.
			if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
				WHERE i.indrelid = 'notes'::regclass AND a.attname = 'id'), (SELECT count(id) FROM notes)`).Scan(&shadowIDIndexes, &shadowIDs); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO notes_outbox (seq) VALUES ($1)`, int64(m.Seq))
			return err
		}}, nil
	}
	model := projection.ReadModel{
		Name:    "notes",
		Sources: []projection.Source{{Stream: streams.StreamAudit, Consumer: "notes-test", Decode: dec}},
		Tables:  []projection.Table{{Name: "notes", Key: []string{"word"}, Ignore: []string{"id"}, Generated: []string{"id"}, ShadowUniqueOnly: uniqueOnly}},
		Scratch: []string{"notes_outbox"},
	}
	rep, err := replay.Rebuild(ctx, env.JS, db, model, replay.RebuildOptions{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Swapped || rep.Tables[0].ShadowRows != int64(len(words)) {
		t.Fatalf("rebuild: %+v", rep)
	}
	if uniqueOnly && (shadowIDIndexes != 0 || shadowIDs != 0) {
		t.Errorf("shadow with ShadowUniqueOnly: %d indexes over id, %d ids filled; want none", shadowIDIndexes, shadowIDs)
	}
	if !uniqueOnly && (shadowIDIndexes != 1 || shadowIDs != int64(len(words))) {
		t.Errorf("shadow: %d indexes over id, %d ids filled; want its primary key and every id", shadowIDIndexes, shadowIDs)
	}
	var ids, outbox int64
	var outboxCalled bool
	if err := db.QueryRow(ctx, `SELECT (SELECT last_value FROM notes_id_seq), (SELECT last_value FROM notes_outbox_id_seq), (SELECT is_called FROM notes_outbox_id_seq)`).
		Scan(&ids, &outbox, &outboxCalled); err != nil {
		t.Fatal(err)
	}
	if ids != int64(len(words)) || outboxCalled {
		t.Errorf("live sequences after the rebuild: notes at %d (want %d: the swap's rows only), outbox at %d, called %v (want untouched)", ids, len(words), outbox, outboxCalled)
	}
	var max int64
	if err := db.QueryRow(ctx, `SELECT max(id) FROM notes`).Scan(&max); err != nil || max != int64(len(words)) {
		t.Errorf("live ids up to %d (%v), want %d", max, err, len(words))
	}
}
