package projection_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/jsrouter/jsroutertest"
	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// decodeWords reads test messages: "row:<text>" inserts text into words,
// "ignore" has nothing to apply, "bad" is malformed, "flaky" fails
// (transiently) until the test lets it through.
func decodeWords(flaky *flakyGate, committed *jsroutertest.Seqs) projection.Decoder {
	return func(m jsrouter.Msg) (projection.Change, error) {
		s := string(m.Data)
		switch {
		case s == "ignore":
			return projection.Change{}, nil
		case s == "bad":
			return projection.Change{}, fmt.Errorf("%w: not a word", streams.ErrMalformed)
		case s == "flaky":
			return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
				if !flaky.pass() {
					return errors.New("database down")
				}
				_, err := tx.Exec(ctx, `INSERT INTO words VALUES ($1, 'flaky')`, int64(m.Seq))
				return err
			}}, nil
		case strings.HasPrefix(s, "row:"):
			return projection.Change{
				Apply: func(ctx context.Context, tx pgx.Tx) error {
					_, err := tx.Exec(ctx, `INSERT INTO words VALUES ($1, $2)`, int64(m.Seq), strings.TrimPrefix(s, "row:"))
					return err
				},
				Committed: func(context.Context) { committed.Add(m.Seq) },
			}, nil
		}
		return projection.Change{}, fmt.Errorf("%w: unknown %q", streams.ErrMalformed, s)
	}
}

type flakyGate struct {
	mu    sync.Mutex
	tries int
}

// pass fails the first 6 tries: more than the router's in-place retries,
// so the message is NAKed and redelivered at least once.
func (f *flakyGate) pass() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries++
	return f.tries > 6
}

func startRouter(t *testing.T, js jetstream.JetStream, reg prometheus.Registerer, h jsrouter.Handler) (stop func()) {
	t.Helper()
	r := jsroutertest.New(t, js, reg)
	r.Handle(streams.StreamExec, streams.ConsumerProjectorExec, h)
	return jsroutertest.Run(t, r)
}

func words(t *testing.T, pool *pgxpool.Pool) map[int64]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT seq, word FROM words`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
		seq  int64
		word string
	}, error) {
		var v struct {
			seq  int64
			word string
		}
		return v, r.Scan(&v.seq, &v.word)
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for _, v := range got {
		out[v.seq] = v.word
	}
	return out
}

func TestHandler(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	pool := pgtest.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE words (seq bigint PRIMARY KEY, word text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const consumer = streams.ConsumerProjectorExec
	subject := streams.SubjectExec("olt-1", streams.PhaseStarted)
	msgs := []string{
		"row:one",    // 1 applied
		"bad",        // 2 malformed: dead letter, checkpoint moves past
		"ignore",     // 3 ignored, no transaction
		"row:a\x00b", // 4 Postgres refuses a NUL (22021): dead letter
		"flaky",      // 5 transient: retried until it passes, not overtaken
		"row:six",    // 6 applied
	}
	for _, s := range msgs {
		if _, err := env.JS.Publish(ctx, subject, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	var flaky flakyGate
	var committed jsroutertest.Seqs
	stop := startRouter(t, env.JS, reg, projection.Handler(pool, decodeWords(&flaky, &committed)))
	jsroutertest.Eventually(t, "checkpoint 6", func() bool {
		c, err := projection.Checkpoint(ctx, pool, consumer)
		return err == nil && c == 6
	})
	jsroutertest.Eventually(t, "6 outcomes", func() bool {
		return jsroutertest.Total(jsroutertest.Outcomes(t, reg, consumer)) >= 6
	})
	stop()

	got := jsroutertest.Outcomes(t, reg, consumer)
	want := map[string]int{jsrouter.OutcomeApplied: 3, jsrouter.OutcomeIgnored: 1, jsrouter.OutcomeDeadLettered: 2}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("outcome %s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if got[jsrouter.OutcomeNacked] == 0 {
		t.Errorf("the flaky message was never nacked: %v", got)
	}
	if w := words(t, pool); len(w) != 3 || w[1] != "one" || w[5] != "flaky" || w[6] != "six" {
		t.Errorf("words = %v", w)
	}
	if c := committed.Get(); len(c) != 2 || c[0] != 1 || c[1] != 6 {
		t.Errorf("Committed ran for %v, want [1 6]", c)
	}
	dlq, err := env.JS.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[uint64]string{}
	for seq := uint64(1); seq <= 2; seq++ {
		raw, err := dlq.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		_, dl, err := streams.Decode[streams.DeadLetter](raw.Data)
		if err != nil {
			t.Fatal(err)
		}
		reasons[dl.StreamSeq] = dl.Reason
	}
	if !strings.Contains(reasons[2], "not a word") || !strings.Contains(reasons[4], "22021") {
		t.Errorf("dead letter reasons %v", reasons)
	}

	// Everything again from the start (a new consumer, a replay): nothing
	// is applied twice and nothing is committed twice.
	if err := env.JS.DeleteConsumer(ctx, streams.StreamExec, consumer); err != nil {
		t.Fatal(err)
	}
	if err := streams.Provision(ctx, env.JS, streams.Options{Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	reg = prometheus.NewRegistry()
	stop = startRouter(t, env.JS, reg, projection.Handler(pool, decodeWords(&flaky, &committed)))
	jsroutertest.Eventually(t, "replay of 6", func() bool {
		return jsroutertest.Total(jsroutertest.Outcomes(t, reg, consumer)) >= 6
	})
	stop()
	got = jsroutertest.Outcomes(t, reg, consumer)
	// The malformed message is dead-lettered again (it is decoded before
	// the checkpoint is read); the refused one is behind the checkpoint now.
	want = map[string]int{jsrouter.OutcomeSkipped: 4, jsrouter.OutcomeIgnored: 1, jsrouter.OutcomeDeadLettered: 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("replay outcome %s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if c := committed.Get(); len(c) != 2 {
		t.Errorf("Committed ran again on replay: %v", c)
	}
}
