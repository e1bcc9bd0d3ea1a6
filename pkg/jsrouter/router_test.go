package jsrouter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/jsrouter/jsroutertest"
	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/streams"
)

// tries counts the deliveries of each sequence.
type tries struct {
	mu sync.Mutex
	n  map[uint64]int
}

func (c *tries) add(seq uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[uint64]int{}
	}
	c.n[seq]++
	return c.n[seq]
}

var eventually = jsroutertest.Eventually

func startRouter(t *testing.T, js jetstream.JetStream, stream, durable string, h jsrouter.Handler) {
	t.Helper()
	r := jsroutertest.New(t, js, nil)
	r.Handle(stream, durable, h)
	jsroutertest.Run(t, r)
}

func publish(t *testing.T, js jetstream.JetStream, subject string, n int) {
	t.Helper()
	for i := range n {
		if _, err := js.Publish(context.Background(), subject, fmt.Appendf(nil, "m%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInOrderAndAcked(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	publish(t, env.JS, streams.SubjectExec("olt-1", streams.PhaseStarted), 25)
	var rec jsroutertest.Seqs
	startRouter(t, env.JS, streams.StreamExec, streams.ConsumerProjectorExec, func(ctx context.Context, m jsrouter.Msg) error {
		if want := fmt.Sprintf("m%d", m.Seq); string(m.Data) != want || m.Subject != streams.SubjectExec("olt-1", streams.PhaseStarted) || m.Stream != streams.StreamExec {
			return fmt.Errorf("%w: got %q on %s", streams.ErrMalformed, m.Data, m.Subject)
		}
		rec.Add(m.Seq)
		return nil
	})
	eventually(t, "25 messages", func() bool { return len(rec.Get()) == 25 })
	for i, s := range rec.Get() {
		if s != uint64(i+1) {
			t.Fatalf("handled order %v", rec.Get())
		}
	}
	cons, err := env.JS.Consumer(context.Background(), streams.StreamExec, streams.ConsumerProjectorExec)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "ack floor 25", func() bool {
		info, err := cons.Info(context.Background())
		return err == nil && info.AckFloor.Stream == 25 && info.NumAckPending == 0
	})
}

func TestTransientErrorIsRetriedNotLost(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	publish(t, env.JS, streams.SubjectExec("olt-1", streams.PhaseStarted), 3)
	var rec jsroutertest.Seqs
	var n tries
	startRouter(t, env.JS, streams.StreamExec, streams.ConsumerProjectorExec, func(ctx context.Context, m jsrouter.Msg) error {
		// Seq 2 fails 5 times: more than the in-place retries (2), so it
		// is Nacked and comes back from the server.
		if m.Seq == 2 && n.add(m.Seq) <= 5 {
			return errors.New("database down")
		}
		rec.Add(m.Seq)
		return nil
	})
	eventually(t, "3 messages", func() bool { return len(rec.Get()) == 3 })
	// projector-exec has MaxAckPending 1: the Nacked message holds the
	// next ones back, so the order survives the redelivery.
	if h := rec.Get(); h[0] != 1 || h[1] != 2 || h[2] != 3 {
		t.Fatalf("handled %v, want [1 2 3]", h)
	}
}

func TestMalformedAndPanicGoToDeadLetter(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	publish(t, env.JS, streams.SubjectExec("olt-1", streams.PhaseStarted), 4)
	var rec jsroutertest.Seqs
	startRouter(t, env.JS, streams.StreamExec, streams.ConsumerProjectorExec, func(ctx context.Context, m jsrouter.Msg) error {
		switch m.Seq {
		case 2:
			return fmt.Errorf("decode batch: %w: bad json", streams.ErrMalformed)
		case 3:
			panic("nil map")
		}
		rec.Add(m.Seq)
		return nil
	})
	eventually(t, "messages 1 and 4", func() bool { return len(rec.Get()) == 2 })

	ctx := context.Background()
	dlq, err := env.JS.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "2 dead letters", func() bool {
		info, err := dlq.Info(ctx)
		return err == nil && info.State.Msgs == 2
	})
	want := map[uint64]string{2: "bad json", 3: "handler panicked: nil map"}
	for seq := uint64(1); seq <= 2; seq++ {
		raw, err := dlq.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if raw.Subject != streams.SubjectDLQ(streams.ConsumerProjectorExec) {
			t.Errorf("dead letter subject %s", raw.Subject)
		}
		_, dl, err := streams.Decode[streams.DeadLetter](raw.Data)
		if err != nil {
			t.Fatal(err)
		}
		frag, ok := want[dl.StreamSeq]
		if !ok || dl.Stream != streams.StreamExec || dl.Consumer != streams.ConsumerProjectorExec {
			t.Fatalf("unexpected dead letter %+v", dl)
		}
		if !contains(dl.Reason, frag) {
			t.Errorf("dead letter of seq %d: reason %q lacks %q", dl.StreamSeq, dl.Reason, frag)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestSubscribeNeedsProvisionedConsumer(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	sub := jsrouter.NewSubscriber(env.JS, jsrouter.SubscriberConfig{}, zerolog.Nop())
	defer sub.Close()
	if _, err := sub.Subscribe(context.Background(), jsrouter.Topic(streams.StreamExec, "nobody")); err == nil {
		t.Fatal("subscribed to a consumer that does not exist")
	}
	if _, err := sub.Subscribe(context.Background(), "no-slash"); err == nil {
		t.Fatal("accepted a bad topic")
	}
}

// A router stopped while it is still subscribing stops cleanly and at once,
// not after CloseTimeout waiting for a handler that never started.
func TestStopDuringStartUp(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	for i := 0; i < 20; i++ {
		r, err := jsrouter.New(env.JS, jsrouter.Config{Source: "test", CloseTimeout: 10 * time.Second, Log: zerolog.Nop(), SubscriberConfig: jsrouter.SubscriberConfig{FetchWait: 50 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		for _, durable := range []string{streams.ConsumerProjectorSchedule, streams.ConsumerProjectorExec, streams.ConsumerProjectorConfig} {
			stream := map[string]string{streams.ConsumerProjectorSchedule: streams.StreamSchedule, streams.ConsumerProjectorExec: streams.StreamExec, streams.ConsumerProjectorConfig: streams.StreamConfig}[durable]
			r.Handle(stream, durable, func(context.Context, jsrouter.Msg) error { return nil })
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		// Cancel at a different point of the start-up each round.
		time.Sleep(time.Duration(i) * 200 * time.Microsecond)
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: Run = %v, want a clean stop", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: Run did not return within 5s of cancel", i)
		}
	}
}
