package replay_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
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

// wordsFold folds wordsModel's messages in memory: each word's last
// sequence. Its first write copies the words without a NUL byte (and,
// when there is one, a word no message made: what a write that committed
// before another was refused leaves), its second those with one, which
// Postgres refuses.
type wordsFold struct {
	words  map[string]int64
	writes *atomic.Int32 // writes that committed
}

type foldedWord struct {
	word string
	seq  int64
}

func (f *wordsFold) Folds(source int) bool { return source == 0 }

func (f *wordsFold) Decode(_ int, msgs []jsrouter.Msg) (any, projection.BatchResult, error) {
	var res projection.BatchResult
	var out []foldedWord
	for _, m := range msgs {
		switch s := string(m.Data); {
		case s == "bad":
			res.Malformed++
		case s == "skip":
			res.Ignored++
		case s == "nul":
			res.Applied++
			out = append(out, foldedWord{"a\x00b", int64(m.Seq)})
		case strings.HasPrefix(s, "w:"):
			res.Applied++
			out = append(out, foldedWord{s[2:], int64(m.Seq)})
		default:
			return nil, res, fmt.Errorf("unknown %q", s)
		}
	}
	return out, res, nil
}

func (f *wordsFold) Fold(_ int, decoded any) error {
	for _, w := range decoded.([]foldedWord) {
		f.words[w.word] = w.seq
	}
	return nil
}

func (f *wordsFold) Rows() int { return len(f.words) }

func (f *wordsFold) Writes() []func(ctx context.Context, tx pgx.Tx) error {
	copyWords := func(nul bool) func(ctx context.Context, tx pgx.Tx) error {
		return func(ctx context.Context, tx pgx.Tx) error {
			var rows [][]any
			refused := false
			for w, seq := range f.words {
				if strings.Contains(w, "\x00") == nul {
					rows = append(rows, []any{w, seq})
				}
				refused = refused || strings.Contains(w, "\x00")
			}
			if !nul && refused {
				rows = append(rows, []any{"phantom", int64(99)})
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"words"}, []string{"word", "seq"}, pgx.CopyFromRows(rows)); err != nil {
				return err
			}
			f.writes.Add(1)
			return nil
		}
	}
	return []func(ctx context.Context, tx pgx.Tx) error{copyWords(false), copyWords(true)}
}

// A model's Fold leaves what its sources applied message by message leave;
// when Postgres refuses what the fold wrote, the rebuild empties the shadow
// and applies the folded sources message by message (the refused message
// counted as such).
func TestRebuildFold(t *testing.T) {
	for _, c := range []struct {
		name    string
		msgs    []string
		writes  int32 // fold writes that commit
		applied uint64
		refused uint64
		want    string
	}{
		{"folded", []string{"w:one", "bad", "w:two", "skip", "w:one", "w:three"}, 2, 4, 0, "one=5 three=6 two=3"},
		{"refused", []string{"w:one", "bad", "w:two", "skip", "nul", "w:one", "w:three"}, 1, 4, 1, "one=6 three=7 two=3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
			db := pgtest.New(t)
			ctx := context.Background()
			if _, err := db.Exec(ctx, `CREATE TABLE words (word text PRIMARY KEY, seq bigint NOT NULL);
				CREATE TABLE words_outbox (seq bigint NOT NULL)`); err != nil {
				t.Fatal(err)
			}
			for _, m := range c.msgs {
				if _, err := env.JS.Publish(ctx, streams.SubjectAudit("test"), []byte(m)); err != nil {
					t.Fatal(err)
				}
			}
			var writes atomic.Int32
			model := wordsModel()
			model.Fold = func() projection.Folder { return &wordsFold{words: map[string]int64{}, writes: &writes} }
			rep, err := replay.Rebuild(ctx, env.JS, db, model, replay.RebuildOptions{Batch: 2, Log: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(rep.String())
			if s := rep.Sources[0]; !rep.Swapped || s.Applied != c.applied || s.Malformed != 1 || s.Ignored != 1 || s.Refused != c.refused {
				t.Errorf("report %+v", rep)
			}
			if n := writes.Load(); n != c.writes {
				t.Errorf("%d fold writes committed, want %d", n, c.writes)
			}
			rows, _ := db.Query(ctx, `SELECT word || '=' || seq FROM words ORDER BY word`)
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil || strings.Join(got, " ") != c.want {
				t.Errorf("live after swap %v %v, want %s", got, err, c.want)
			}
		})
	}
}
