package integrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// memSink is a database stand-in: the rows and the last sequence change
// together. crashAfter makes Apply commit an event and then report a crash
// (the ack never happens), once.
type memSink struct {
	mu         sync.Mutex
	rows       map[uint64]streams.ONUChanged
	applied    []uint64
	last       uint64
	gaps       [][2]uint64
	crashAfter uint64
}

var errCrash = errors.New("integrator killed after commit, before ack")

func (s *memSink) Last(context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, nil
}

func (s *memSink) Apply(_ context.Context, seq uint64, ev streams.ONUChanged) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[seq], s.last = ev, seq
	s.applied = append(s.applied, seq)
	if seq == s.crashAfter {
		s.crashAfter = 0
		return errCrash
	}
	return nil
}

func (s *memSink) Gap(from, to uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gaps = append(s.gaps, [2]uint64{from, to})
}

func (s *memSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.applied)
}

func startServer(t *testing.T, dir string) (*server.Server, jetstream.JetStream) {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return srv, js
}

func publish(t *testing.T, js jetstream.JetStream, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		ev := streams.ONUChanged{OLTID: "olt-1", PonIndex: 4194304000, ONUID: int64(i % 128), Change: streams.ONUDiscovered,
			Current: streams.ONUState{Serial: fmt.Sprintf("HWTC%08X", i), Status: "ONLINE"}, ExecutionID: "e1", ObservedAt: time.Now()}
		b, err := streams.Encode("projector", time.Now(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(context.Background(), streams.SubjectONU("olt-1", streams.ONUDiscovered), b); err != nil {
			t.Fatal(err)
		}
	}
}

// The integrator is killed after committing an event and before acking it,
// then restarted; later the NATS server itself restarts: every event is
// applied exactly once, in order, with no gap.
func TestNoGapNoDuplicateAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	srv, js := startServer(t, dir)
	ctx := context.Background()
	if err := streams.Provision(ctx, js, streams.Options{}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, 0, 30)
	sink := &memSink{rows: map[uint64]streams.ONUChanged{}, crashAfter: 12}
	cons, err := EnsureConsumer(ctx, js, "integrator-test", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := Run(ctx, cons, sink); !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v, want the crash", err)
	}
	// Restart: seq 12 comes back (not acked), is skipped, the rest applied.
	run := func(js jetstream.JetStream, want int) {
		t.Helper()
		cons, err := EnsureConsumer(ctx, js, "integrator-test", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- Run(rctx, cons, sink) }()
		deadline := time.After(30 * time.Second)
		for sink.count() < want {
			select {
			case err := <-done:
				t.Fatalf("run ended: %v", err)
			case <-deadline:
				cancel()
				t.Fatalf("%d applied, want %d", sink.count(), want)
			case <-time.After(20 * time.Millisecond):
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	run(js, 30)
	// The server restarts (file storage): the consumer's position survives.
	srv.Shutdown()
	srv.WaitForShutdown()
	_, js = startServer(t, dir)
	publish(t, js, 30, 45)
	run(js, 45)
	for i, seq := range sink.applied {
		if seq != uint64(i+1) {
			t.Fatalf("applied %v: want 1..45 once each, in order", sink.applied)
		}
	}
	if len(sink.applied) != 45 || len(sink.rows) != 45 || len(sink.gaps) != 0 {
		t.Errorf("applied %d, rows %d, gaps %v", len(sink.applied), len(sink.rows), sink.gaps)
	}
}

// Events that expired while the integrator was away are reported as a gap.
func TestGapReported(t *testing.T) {
	_, js := startServer(t, t.TempDir())
	ctx := context.Background()
	if err := streams.Provision(ctx, js, streams.Options{}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, 0, 10)
	sink := &memSink{rows: map[uint64]streams.ONUChanged{}, last: 3} // applied 1..3 long ago
	s, err := js.Stream(ctx, streams.StreamONU)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSequence(7)); err != nil { // 1..6 expired
		t.Fatal(err)
	}
	cons, err := EnsureConsumer(ctx, js, "integrator-gap", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(rctx, cons, sink) }()
	for deadline := time.Now().Add(30 * time.Second); sink.count() < 4 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(sink.gaps) != 1 || sink.gaps[0] != [2]uint64{4, 6} || sink.count() != 4 {
		t.Errorf("gaps %v, applied %v", sink.gaps, sink.applied)
	}
}
