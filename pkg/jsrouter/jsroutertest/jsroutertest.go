// Package jsroutertest has the helpers of tests that run jsrouter routers:
// run one for the test, wait for a condition, read the outcome metrics,
// record what a handler saw.
package jsroutertest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jsrouter"
)

// New returns a router with test timings: quick fetches, 2 in-place
// retries a few milliseconds apart, then a NAK redelivered after 50ms.
// Metrics go to reg (nil: none).
func New(t testing.TB, js jetstream.JetStream, reg prometheus.Registerer) *jsrouter.Router {
	t.Helper()
	r, err := jsrouter.New(js, jsrouter.Config{
		Source:           "test",
		SubscriberConfig: jsrouter.SubscriberConfig{NackDelay: 50 * time.Millisecond, FetchWait: 100 * time.Millisecond},
		MaxRetries:       2,
		RetryInitial:     time.Millisecond,
		RetryMax:         5 * time.Millisecond,
		Log:              zerolog.Nop(),
		Registry:         reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Run runs r until the returned stop is called or the test ends, and
// fails the test if Run returns an error. stop waits for r and may be
// called more than once.
func Run(t testing.TB, r *jsrouter.Router) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("router Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-r.Running():
	case err := <-errc:
		t.Fatalf("router stopped at start: %v", err)
	}
	return stop
}

// Eventually polls cond until it holds, failing the test after 30s.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Outcomes reads facho_consumer_messages_total of consumer, by outcome.
func Outcomes(t testing.TB, g prometheus.Gatherer, consumer string) map[string]int {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != "facho_consumer_messages_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var c, o string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "consumer":
					c = l.GetValue()
				case "outcome":
					o = l.GetValue()
				}
			}
			if c == consumer {
				out[o] += int(m.GetCounter().GetValue())
			}
		}
	}
	return out
}

// Total sums outcomes.
func Total(outcomes map[string]int) int {
	n := 0
	for _, v := range outcomes {
		n += v
	}
	return n
}

// Seqs records stream sequences from concurrent handlers.
type Seqs struct {
	mu   sync.Mutex
	seqs []uint64
}

// Add records seq.
func (s *Seqs) Add(seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seqs = append(s.seqs, seq)
}

// Get returns the sequences in the order recorded.
func (s *Seqs) Get() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seqs)
}
