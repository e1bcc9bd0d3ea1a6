package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// wordsModel is a read model of test words on the audit stream: "w:<word>"
// upserts a row keyed by word with the message's sequence, "bad" is
// malformed, "nul" is refused by Postgres (a NUL byte), "skip" has nothing
// to apply. Its scratch table counts the rows it would publish.
func wordsModel() projection.ReadModel {
	dec := func(m jsrouter.Msg) (projection.Change, error) {
		s := string(m.Data)
		switch {
		case s == "bad":
			return projection.Change{}, fmt.Errorf("%w: bad", streams.ErrMalformed)
		case s == "skip":
			return projection.Change{}, nil
		case s == "nul":
			return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO words (word, seq) VALUES ($1, $2)`, "a\x00b", int64(m.Seq))
				return err
			}}, nil
		case strings.HasPrefix(s, "w:"):
			return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `INSERT INTO words (word, seq) VALUES ($1, $2) ON CONFLICT (word) DO UPDATE SET seq = EXCLUDED.seq`,
					s[2:], int64(m.Seq)); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO words_outbox (seq) VALUES ($1)`, int64(m.Seq))
				return err
			}}, nil
		}
		return projection.Change{}, errors.New("unknown")
	}
	return projection.ReadModel{
		Name:    "words",
		Sources: []projection.Source{{Stream: streams.StreamAudit, Consumer: "words-test", Decode: dec}},
		Tables:  []projection.Table{{Name: "words", Key: []string{"word"}}},
		Scratch: []string{"words_outbox"},
	}
}

func TestRebuildWords(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Exec(ctx, `CREATE TABLE words (word text PRIMARY KEY, seq bigint NOT NULL);
		CREATE TABLE words_outbox (seq bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	msgs := []string{"w:one", "bad", "w:two", "skip", "nul", "w:one", "w:three"}
	for _, m := range msgs {
		if _, err := env.JS.Publish(ctx, streams.SubjectAudit("test"), []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	// Live: "one" is stale, "three" missing, "ghost" extra; checkpoint 5.
	if _, err := db.Exec(ctx, `INSERT INTO words VALUES ('one', 1), ('two', 3), ('ghost', 9)`); err != nil {
		t.Fatal(err)
	}
	if err := projection.Reset(ctx, db, "words-test", 5); err != nil {
		t.Fatal(err)
	}
	model := wordsModel()
	rebuild := func(o replay.RebuildOptions) replay.Report {
		t.Helper()
		o.Batch, o.Log = 2, zerolog.Nop()
		rep, err := replay.Rebuild(ctx, env.JS, db, model, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(rep.String())
		return rep
	}
	// A second rebuild of the same model while one runs fails at once.
	lock, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_lock(hashtext('facho.rebuild.words'))`); err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Rebuild(ctx, env.JS, db, model, replay.RebuildOptions{Log: zerolog.Nop()}); err == nil || !strings.Contains(err.Error(), "another rebuild") {
		t.Errorf("concurrent rebuild: %v", err)
	}
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_unlock(hashtext('facho.rebuild.words'))`); err != nil {
		t.Fatal(err)
	}
	lock.Release()
	rep := rebuild(replay.RebuildOptions{DryRun: true})
	// Rebuilt up to the live checkpoint (5), not the stream's end: rows
	// one=1, two=3; live differs by ghost only.
	tr := rep.Tables[0]
	if rep.Swapped || rep.Sources[0].RebuiltTo != 5 || tr.Differing != 1 || tr.Examples[0] != (replay.RowDiff{Key: "word=ghost", Where: "live only"}) {
		t.Fatalf("dry run: %+v", rep)
	}
	if s := rep.Sources[0]; s.Applied != 2 || s.Malformed != 1 || s.Ignored != 1 || s.Refused != 1 {
		t.Errorf("counts %+v", s)
	}
	// The live consumer moves on to 7 meanwhile (one=6, three=7).
	if _, err := db.Exec(ctx, `INSERT INTO words VALUES ('three', 7) ; UPDATE words SET seq = 6 WHERE word = 'one'`); err != nil {
		t.Fatal(err)
	}
	if err := projection.Reset(ctx, db, "words-test", 7); err != nil {
		t.Fatal(err)
	}
	rep = rebuild(replay.RebuildOptions{})
	if !rep.Swapped || rep.Sources[0].RebuiltTo != 7 {
		t.Fatalf("swap: %+v", rep)
	}
	var got []string
	rows, _ := db.Query(ctx, `SELECT word || '=' || seq FROM words ORDER BY word`)
	got, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(got, " ") != "one=6 three=7 two=3" {
		t.Errorf("live after swap %v %v", got, err)
	}
	var outbox, schemas int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM words_outbox), (SELECT count(*) FROM pg_namespace WHERE nspname = 'rebuild_words')`).Scan(&outbox, &schemas); err != nil {
		t.Fatal(err)
	}
	if outbox != 0 || schemas != 0 {
		t.Errorf("live outbox %d rows (the rebuild wrote it), shadow schemas left %d", outbox, schemas)
	}
	if rep := rebuild(replay.RebuildOptions{}); !rep.Identical {
		t.Errorf("second rebuild: %+v", rep)
	}

	// History lost to retention: reported, not swapped without Partial.
	s, err := env.JS.Stream(ctx, streams.StreamAudit)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSequence(4)); err != nil {
		t.Fatal(err)
	}
	rep = rebuild(replay.RebuildOptions{})
	if rep.Swapped || len(rep.Incomplete) != 1 || !strings.Contains(rep.Incomplete[0], "1..3 expired") || rep.Tables[0].Differing != 1 {
		t.Fatalf("incomplete history: %+v", rep)
	}
	if rep = rebuild(replay.RebuildOptions{Partial: true}); !rep.Swapped {
		t.Fatalf("partial swap: %+v", rep)
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM words`).Scan(&n); err != nil || n != 2 {
		t.Errorf("after a partial swap: %d words, want 2 (two's event expired)", n)
	}
}
