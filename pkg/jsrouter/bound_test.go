package jsrouter_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/jsrouter/jsroutertest"
	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/streams"
)

// newRouter is jsroutertest.New with cfg's changes.
func newRouter(t *testing.T, js jetstream.JetStream, reg prometheus.Registerer, change func(*jsrouter.Config)) *jsrouter.Router {
	t.Helper()
	cfg := jsrouter.Config{
		Source:           "test",
		SubscriberConfig: jsrouter.SubscriberConfig{NackDelay: 20 * time.Millisecond, FetchWait: 100 * time.Millisecond},
		MaxRetries:       2,
		RetryInitial:     time.Millisecond,
		RetryMax:         5 * time.Millisecond,
		OutageBackoffMax: 10 * time.Millisecond,
		Log:              zerolog.Nop(),
		Registry:         reg,
	}
	if change != nil {
		change(&cfg)
	}
	r, err := jsrouter.New(js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// deadLetters returns the dead letters of consumer, oldest first.
func deadLetters(t *testing.T, js jetstream.JetStream) []streams.DeadLetter {
	t.Helper()
	ctx := context.Background()
	dlq, err := js.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dlq.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []streams.DeadLetter
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		raw, err := dlq.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		_, dl, err := streams.Decode[streams.DeadLetter](raw.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dl)
	}
	return out
}

// A message that fails a transient way while the dependency is healthy
// (a handler error for that message only) is dead-lettered after
// MaxFailedDeliveries deliveries with the last error; the next one is
// handled.
func TestPoisonTransientMessageIsDeadLetteredAfterNDeliveries(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	publish(t, env.JS, streams.SubjectExec("olt-1", streams.PhaseStarted), 3)
	var n tries
	var rec jsroutertest.Seqs
	var lastDelivery atomic.Uint64
	var healthChecks atomic.Int64
	r := newRouter(t, env.JS, nil, func(c *jsrouter.Config) {
		c.Health = func(context.Context, error) error { healthChecks.Add(1); return nil }
	})
	r.Handle(streams.StreamExec, streams.ConsumerProjectorExec, func(ctx context.Context, m jsrouter.Msg) error {
		if m.Seq == 2 {
			lastDelivery.Store(m.NumDelivered)
			return fmt.Errorf("insert row %d: check constraint violated", n.add(m.Seq))
		}
		rec.Add(m.Seq)
		return nil
	})
	jsroutertest.Run(t, r)
	eventually(t, "messages 1 and 3", func() bool { return len(rec.Get()) == 2 })
	dls := deadLetters(t, env.JS)
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1: %+v", len(dls), dls)
	}
	dl := dls[0]
	// 5 deliveries of 3 tries each (1 + MaxRetries in place).
	want := fmt.Sprintf("gave up after %d deliveries: insert row 15: check constraint violated", streams.MaxFailedDeliveries)
	if dl.StreamSeq != 2 || dl.Reason != want || dl.Deliveries != streams.MaxFailedDeliveries {
		t.Fatalf("dead letter %+v, want reason %q", dl, want)
	}
	if got := n.add(2) - 1; got != 3*streams.MaxFailedDeliveries || lastDelivery.Load() != streams.MaxFailedDeliveries {
		t.Fatalf("handled %d times over %d deliveries, want %d over %d", got, lastDelivery.Load(), 3*streams.MaxFailedDeliveries, streams.MaxFailedDeliveries)
	}
	if healthChecks.Load() != 3*streams.MaxFailedDeliveries {
		t.Errorf("%d health checks, want one per failure (%d)", healthChecks.Load(), 3*streams.MaxFailedDeliveries)
	}
}

// fakeDB is a dependency the test takes down and brings back.
type fakeDB struct {
	mu       sync.Mutex
	down     bool
	failures int // handler failures while down
}

func (f *fakeDB) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *fakeDB) exec() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		f.failures++
		return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	}
	return nil
}

func (f *fakeDB) ping(context.Context, error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errors.New("ping: connection refused")
	}
	return nil
}

func (f *fakeDB) failed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures
}

// During an outage (the health check fails) the router holds the message:
// far more failures than the bound, no redelivery, no dead letter; once the
// dependency is back the message is applied, then the next ones.
func TestOutageHoldsTheMessageWithoutCounting(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := &fakeDB{down: true}
	publish(t, env.JS, streams.SubjectExec("olt-1", streams.PhaseStarted), 3)
	var rec jsroutertest.Seqs
	var delivered sync.Map
	reg := prometheus.NewRegistry()
	r := newRouter(t, env.JS, reg, func(c *jsrouter.Config) { c.Health = db.ping })
	r.Handle(streams.StreamExec, streams.ConsumerProjectorExec, func(ctx context.Context, m jsrouter.Msg) error {
		if err := db.exec(); err != nil {
			return err
		}
		delivered.Store(m.Seq, m.NumDelivered)
		rec.Add(m.Seq)
		return nil
	})
	jsroutertest.Run(t, r)
	bound := 3 * streams.MaxFailedDeliveries
	eventually(t, "more failures than the bound", func() bool { return db.failed() > 2*bound })
	if got := rec.Get(); len(got) != 0 {
		t.Fatalf("handled %v during the outage", got)
	}
	db.setDown(false)
	eventually(t, "3 messages after recovery", func() bool { return len(rec.Get()) == 3 })
	if got := rec.Get(); got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("handled %v, want [1 2 3]", got)
	}
	if nd, _ := delivered.Load(uint64(1)); nd.(uint64) != 1 {
		t.Errorf("message 1 was delivered %d times: the outage counted", nd)
	}
	if dls := deadLetters(t, env.JS); len(dls) != 0 {
		t.Fatalf("dead letters after an outage: %+v", dls)
	}
	out := jsroutertest.Outcomes(t, reg, streams.ConsumerProjectorExec)
	if out[jsrouter.OutcomeNacked] != 0 || out[jsrouter.OutcomeDeadLettered] != 0 || out[jsrouter.OutcomeAcked] != 3 {
		t.Errorf("outcomes %v", out)
	}
}

// A message delivered more than MaxDeliveries times without ever ending
// (its consumer crashed each time) is dead-lettered before it is handled.
func TestMessageDeliveredTooOftenIsDeadLetteredUnhandled(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	publish(t, env.JS, streams.SubjectExec("olt-1", streams.PhaseStarted), 2)
	ctx := context.Background()
	cons, err := env.JS.Consumer(ctx, streams.StreamExec, streams.ConsumerProjectorExec)
	if err != nil {
		t.Fatal(err)
	}
	const maxDeliveries = 3
	// Three deliveries that "crash": taken and handed back unhandled.
	for i := 0; i < maxDeliveries; i++ {
		msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := msg.Nak(); err != nil {
			t.Fatal(err)
		}
	}
	var rec jsroutertest.Seqs
	r := newRouter(t, env.JS, nil, func(c *jsrouter.Config) { c.MaxDeliveries = maxDeliveries; c.MaxFailedDeliveries = 2 })
	r.Handle(streams.StreamExec, streams.ConsumerProjectorExec, func(ctx context.Context, m jsrouter.Msg) error {
		rec.Add(m.Seq)
		return nil
	})
	jsroutertest.Run(t, r)
	eventually(t, "message 2", func() bool { return len(rec.Get()) == 1 })
	if got := rec.Get(); got[0] != 2 {
		t.Fatalf("handled %v: message 1 should not have been handled", got)
	}
	dls := deadLetters(t, env.JS)
	if len(dls) != 1 || dls[0].StreamSeq != 1 || !strings.HasPrefix(dls[0].Reason, "gave up after 3 deliveries: never finished") {
		t.Fatalf("dead letters %+v", dls)
	}
}

// A malformed message close to the maximum payload is dead-lettered (the
// dead letter points at it instead of embedding it) and the consumer
// carries on with the next message.
func TestHugeMalformedMessageIsDeadLettered(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx := context.Background()
	huge := append([]byte(`{"id":"x","type":"varbind.batch","version":1,"data":{"olt_id":"olt-1","execution_id":"e9","varbinds":[`),
		bytes.Repeat([]byte{'\xff', 0, '"', 'a'}, 900*1024/4)...)
	if _, err := env.JS.Publish(ctx, streams.SubjectExec("olt-1", streams.PhaseStarted), huge); err != nil {
		t.Fatalf("publish %d bytes: %v", len(huge), err)
	}
	publish(t, env.JS, streams.SubjectExec("olt-1", streams.PhaseStarted), 1) // seq 2: "m1"
	var rec jsroutertest.Seqs
	r := newRouter(t, env.JS, nil, nil)
	r.Handle(streams.StreamExec, streams.ConsumerProjectorExec, func(ctx context.Context, m jsrouter.Msg) error {
		if _, err := streams.DecodeEnvelope(m.Data); err != nil {
			return fmt.Errorf("decode batch: %w", err)
		}
		rec.Add(m.Seq)
		return nil
	})
	jsroutertest.Run(t, r)
	// seq 2 is not an envelope either: both are dead-lettered, in order.
	eventually(t, "2 dead letters", func() bool { return len(deadLetters(t, env.JS)) == 2 })
	dl := deadLetters(t, env.JS)[0]
	sum := sha256.Sum256(huge)
	switch {
	case dl.StreamSeq != 1 || dl.Stream != streams.StreamExec || dl.Subject != streams.SubjectExec("olt-1", streams.PhaseStarted):
		t.Errorf("dead letter does not point at the original: %+v", dl)
	case !strings.Contains(dl.Reason, "decode batch: malformed event"):
		t.Errorf("reason %q", dl.Reason)
	case dl.PayloadSize != len(huge) || dl.PayloadSHA256 != hex.EncodeToString(sum[:]) || !dl.PayloadTruncated:
		t.Errorf("size %d sha %s truncated %v, want %d %x true", dl.PayloadSize, dl.PayloadSHA256, dl.PayloadTruncated, len(huge), sum)
	case len(dl.PayloadExcerpt) > 3*streams.DeadLetterExcerptBytes || !strings.HasPrefix(dl.PayloadExcerpt, `{"id":"x"`):
		t.Errorf("excerpt of %d bytes: %.80q", len(dl.PayloadExcerpt), dl.PayloadExcerpt)
	}
	// The original is still in its stream, where the dead letter says.
	st, err := env.JS.Stream(ctx, dl.Stream)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := st.GetMsg(ctx, dl.StreamSeq)
	if err != nil || !bytes.Equal(orig.Data, huge) {
		t.Fatalf("original at %s/%d: %v", dl.Stream, dl.StreamSeq, err)
	}
	if dls := deadLetters(t, env.JS); dls[1].StreamSeq != 2 {
		t.Errorf("second dead letter %+v", dls[1])
	}
	// And the consumer went on: a good message after them is handled.
	good, err := streams.Encode("test", time.Now(), streams.AuditEvent{Kind: streams.AuditTaskAdded})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.JS.Publish(ctx, streams.SubjectExec("olt-1", streams.PhaseStarted), good); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the next message", func() bool { return len(rec.Get()) == 1 })
	if got := rec.Get(); got[0] != 3 {
		t.Fatalf("handled %v, want [3]", got)
	}
}

// A router stopped while it holds a message through an outage hands the
// message back: the next router applies it once the dependency is back.
func TestStopDuringAnOutageHandsTheMessageBack(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := &fakeDB{down: true}
	publish(t, env.JS, streams.SubjectExec("olt-1", streams.PhaseStarted), 1)
	var rec jsroutertest.Seqs
	var delivered atomic.Uint64
	handler := func(ctx context.Context, m jsrouter.Msg) error {
		if err := db.exec(); err != nil {
			return err
		}
		delivered.Store(m.NumDelivered)
		rec.Add(m.Seq)
		return nil
	}
	r := newRouter(t, env.JS, nil, func(c *jsrouter.Config) { c.Health = db.ping; c.CloseTimeout = time.Minute })
	r.Handle(streams.StreamExec, streams.ConsumerProjectorExec, handler)
	stop := jsroutertest.Run(t, r)
	eventually(t, "failures during the outage", func() bool { return db.failed() > 5 })
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the router did not stop while holding a message")
	}
	db.setDown(false)
	r = newRouter(t, env.JS, nil, func(c *jsrouter.Config) { c.Health = db.ping })
	r.Handle(streams.StreamExec, streams.ConsumerProjectorExec, handler)
	jsroutertest.Run(t, r)
	eventually(t, "the message after the restart", func() bool { return len(rec.Get()) == 1 })
	if delivered.Load() != 2 {
		t.Errorf("applied on delivery %d, want 2", delivered.Load())
	}
	if dls := deadLetters(t, env.JS); len(dls) != 0 {
		t.Fatalf("dead letters: %+v", dls)
	}
}
