package projection_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/jsrouter/jsroutertest"
	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// dbProxy forwards TCP to a real PostgreSQL and can cut it off: block
// closes every connection and refuses new ones, as a database that went
// down would.
type dbProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *dbProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dbProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.block()
		p.wg.Wait()
	})
	return p
}

func (p *dbProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // listener closed
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

func (p *dbProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

func (p *dbProxy) block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *dbProxy) unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// poolVia opens a pool on the test database through a proxy.
func poolVia(t *testing.T) (*pgxpool.Pool, *dbProxy) {
	t.Helper()
	url := pgtest.URL(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port))
	addr := proxy.ln.Addr().(*net.TCPAddr)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = "127.0.0.1", uint16(addr.Port)
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE words (seq bigint PRIMARY KEY, word text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return pool, proxy
}

// decodeRows reads "row:<word>" (insert it) and "poison" (an error
// Postgres raises for this message only, neither Permanent nor
// Unavailable).
func decodeRows(m jsrouter.Msg) (projection.Change, error) {
	s := string(m.Data)
	switch {
	case s == "poison":
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `DO $$ BEGIN RAISE EXCEPTION 'poison message'; END $$`)
			return err
		}}, nil
	case strings.HasPrefix(s, "row:"):
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO words VALUES ($1, $2)`, int64(m.Seq), strings.TrimPrefix(s, "row:"))
			return err
		}}, nil
	}
	return projection.Change{}, fmt.Errorf("%w: %q", streams.ErrMalformed, s)
}

func runProjection(t *testing.T, js jetstream.JetStream, pool *pgxpool.Pool, reg prometheus.Registerer) {
	t.Helper()
	r, err := jsrouter.New(js, jsrouter.Config{
		Source:           "test",
		SubscriberConfig: jsrouter.SubscriberConfig{NackDelay: 20 * time.Millisecond, FetchWait: 100 * time.Millisecond},
		MaxRetries:       2,
		RetryInitial:     time.Millisecond,
		RetryMax:         5 * time.Millisecond,
		OutageBackoffMax: 20 * time.Millisecond,
		HealthTimeout:    2 * time.Second,
		Health:           projection.Health(pool),
		Log:              zerolog.Nop(),
		Registry:         reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Handle(streams.StreamExec, streams.ConsumerProjectorExec, projection.Handler(pool, decodeRows))
	jsroutertest.Run(t, r)
}

func counter(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func publishAll(t *testing.T, js jetstream.JetStream, msgs ...string) {
	t.Helper()
	for _, s := range msgs {
		if _, err := js.Publish(context.Background(), streams.SubjectExec("olt-1", streams.PhaseStarted), []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
}

func dlqCount(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// A real PostgreSQL cut off mid-stream: the projection holds its message
// through the outage, far longer than the delivery bound, dead-letters
// nothing, and applies everything once the database is back.
func TestDatabaseOutageLosesNothing(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	pool, proxy := poolVia(t)
	ctx := context.Background()
	publishAll(t, env.JS, "row:one")
	reg := prometheus.NewRegistry()
	runProjection(t, env.JS, pool, reg)
	const consumer = streams.ConsumerProjectorExec
	jsroutertest.Eventually(t, "checkpoint 1", func() bool {
		c, err := projection.Checkpoint(ctx, pool, consumer)
		return err == nil && c == 1
	})

	proxy.block()
	publishAll(t, env.JS, "row:two", "row:three")
	bound := float64(3 * streams.MaxFailedDeliveries)
	jsroutertest.Eventually(t, "tries during the outage beyond the bound", func() bool {
		return counter(t, reg, "facho_consumer_outage_retries_total") > 2*bound
	})
	proxy.unblock()

	jsroutertest.Eventually(t, "checkpoint 3 after the outage", func() bool {
		c, err := projection.Checkpoint(ctx, pool, consumer)
		return err == nil && c == 3
	})
	if w := words(t, pool); len(w) != 3 || w[2] != "two" || w[3] != "three" {
		t.Fatalf("words = %v", w)
	}
	if n := dlqCount(t, env.JS); n != 0 {
		t.Fatalf("%d dead letters after an outage", n)
	}
	out := jsroutertest.Outcomes(t, reg, consumer)
	if out[jsrouter.OutcomeNacked] != 0 || out[jsrouter.OutcomeApplied] != 3 {
		t.Errorf("outcomes %v: the outage cost a delivery or a message", out)
	}
	t.Logf("outage: %.0f tries held, not counted (bound %d deliveries)", counter(t, reg, "facho_consumer_outage_retries_total"), streams.MaxFailedDeliveries)
}

// A message Postgres refuses for its own reasons, with the database
// healthy and the error neither permanent nor an outage, is dead-lettered
// after MaxFailedDeliveries deliveries; the next one is applied.
func TestPoisonMessageOnAHealthyDatabaseIsDeadLettered(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	pool := pgtest.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE words (seq bigint PRIMARY KEY, word text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	publishAll(t, env.JS, "row:one", "poison", "row:three")
	reg := prometheus.NewRegistry()
	runProjection(t, env.JS, pool, reg)
	jsroutertest.Eventually(t, "checkpoint 3", func() bool {
		c, err := projection.Checkpoint(ctx, pool, streams.ConsumerProjectorExec)
		return err == nil && c == 3
	})
	s, err := env.JS.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, dl, err := streams.Decode[streams.DeadLetter](raw.Data)
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("gave up after %d deliveries: ", streams.MaxFailedDeliveries)
	if dl.StreamSeq != 2 || !strings.HasPrefix(dl.Reason, prefix) || !strings.Contains(dl.Reason, "poison message") {
		t.Fatalf("dead letter %+v", dl)
	}
	if w := words(t, pool); len(w) != 2 || w[1] != "one" || w[3] != "three" {
		t.Fatalf("words = %v", w)
	}
	if n := dlqCount(t, env.JS); n != 1 {
		t.Fatalf("%d dead letters, want 1", n)
	}
}

func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		code string
		want bool
	}{
		{"08006", true}, {"57P01", true}, {"57014", false}, {"53300", true}, {"42P01", true}, {"3D000", true},
		{"25006", true}, {"23505", false}, {"40001", false}, {"P0001", false},
	} {
		if got := projection.Unavailable(fmt.Errorf("apply: %w", pgErr(tc.code))); got != tc.want {
			t.Errorf("Unavailable(%s) = %v, want %v", tc.code, got, tc.want)
		}
	}
	if projection.Unavailable(errors.New("dial tcp: connection refused")) {
		t.Error("a plain error is Unavailable (the ping decides for those)")
	}
}

func pgErr(code string) error { return &pgconn.PgError{Code: code} }
