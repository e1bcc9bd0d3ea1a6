package planner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// Issue 8, seed 001: a job without max_retries takes the retries of its
// queue class (discovery 3, polling 2); a job's own count overrides it
// (1: one retry; -1: none). Every run fails here, so each execution is
// dispatched 1 + its retries times, the retries on the retry class.
func TestClassRetries(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seedConfig(t, env.JS, "v1:sealed-placeholder")
	jobs := []struct {
		id, kind   string
		maxRetries int
		want       int // dispatches of the one execution
	}{
		{"disc", streams.KindDiscovery, 0, 4},
		{"get-status", streams.KindGet, 0, 3},
		{"walk", streams.KindWalk, 0, 3},
		{"once", streams.KindGet, 1, 2},
		{"none", streams.KindDiscovery, -1, 1},
		{"capped", streams.KindGet, 7, 4}, // the retry class ceiling (3)
	}
	for _, j := range jobs {
		publish(t, env.JS, streams.SubjectJob(j.id), streams.JobUpserted{ID: j.id, Name: j.id, BrandID: "huawei", Kind: j.kind,
			OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, MaxRetries: j.maxRetries, Priority: 40, Enabled: true})
		publish(t, env.JS, streams.SubjectAssignment(j.id, "olt-a"), streams.JobOLTAssigned{JobID: j.id, OLTID: "olt-a", Enabled: true})
	}
	startFinisherOutcome(t, ctx, env.JS, 0, true)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Retries 100 ms apart (the jobs set no retry delay); the three
		// failed executions on one OLT must not disable it here.
		err := planner.Run(ctx, planner.Config{Tick: 20 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, FirstRunSpread: -1,
			RetryBackoff: []time.Duration{100 * time.Millisecond}, DisableAfterFailures: -1},
			planner.Deps{JS: env.JS, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Errorf("planner.Run: %v", err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	total := 0
	for _, j := range jobs {
		total += j.want
	}
	byJob := func(envs []streams.Envelope) map[string][]streams.NodeDue {
		out := map[string][]streams.NodeDue{}
		for _, e := range envs {
			var nd streams.NodeDue
			if err := streams.DecodeData(e, &nd); err != nil {
				t.Fatal(err)
			}
			out[nd.JobID] = append(out[nd.JobID], nd)
		}
		return out
	}
	collect(t, env.JS, streams.StreamSchedule, streams.SubjectsNodeDue, func(e []streams.Envelope) bool { return len(e) >= total })
	time.Sleep(1500 * time.Millisecond) // one retry too many would come within 100 ms
	all := collect(t, env.JS, streams.StreamSchedule, streams.SubjectsNodeDue, func(e []streams.Envelope) bool { return len(e) >= total })
	if len(all) != total {
		t.Errorf("%d NodeDue in all, want %d", len(all), total)
	}
	got := byJob(all)
	for _, j := range jobs {
		dues := got[j.id]
		if len(dues) != j.want {
			t.Errorf("job %s (%s, max_retries %d): dispatched %d times, want %d", j.id, j.kind, j.maxRetries, len(dues), j.want)
			continue
		}
		for i, nd := range dues {
			wantClass := planner.QueueClass(j.kind, 1, false)
			if i > 0 {
				wantClass = streams.ClassRetry
			}
			if nd.ExecutionID != dues[0].ExecutionID || nd.Attempt != i+1 || nd.Class != wantClass || nd.MaxRetries != j.want-1 {
				t.Errorf("job %s dispatch %d: execution %s attempt %d class %s max_retries %d; want execution %s attempt %d class %s max_retries %d",
					j.id, i, nd.ExecutionID, nd.Attempt, nd.Class, nd.MaxRetries, dues[0].ExecutionID, i+1, wantClass, j.want-1)
			}
		}
	}
}

// The class counts are configurable: 0 takes seed 001's, a negative count
// means none, above 10 is refused.
func TestClassRetriesConfig(t *testing.T) {
	c := planner.Config{ClassRetries: planner.ClassRetries{Polling: -1}}.WithDefaults()
	if c.ClassRetries != (planner.ClassRetries{Discovery: 3, Polling: -1, Retry: 3}) {
		t.Fatalf("defaults %+v", c.ClassRetries)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := planner.Config{ClassRetries: planner.ClassRetries{Discovery: 11}}.WithDefaults()
	if err := bad.Validate(); err == nil {
		t.Fatal("discovery 11 retries accepted")
	}
}
