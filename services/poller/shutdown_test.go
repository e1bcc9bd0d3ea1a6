package poller

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// Stopping a poller mid-walk: after the grace it cancels the walk, reports
// the interruption, releases the lease and puts the NodeDue back, so another
// poller finishes the work at once (no waiting for AckWait or the TTL).
func TestShutdownInterruptsReleasesAndRequeues(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage},
		huaweiOLT("olt-a", oltsim.Faults{Latency: 100 * time.Millisecond}))
	stop, _ := e.startPoller(t, Config{PollerID: "leaving", Workers: 1, BatchSize: 4, RowBufferVarbinds: 4, MaxRepetitions: 2, ShutdownGrace: 200 * time.Millisecond})
	e.publishNodeDue(t, e.nodeDue("olt-a", "exec-1", "job"))
	waitFor(t, 30*time.Second, "a first batch", func() bool { return len(e.batches(t, "olt-a", "exec-1")) > 0 })

	stop() // returns once Run has returned
	ev := e.execEvents(t, "olt-a", "exec-1")
	if len(ev.failed) != 1 || !strings.Contains(ev.failed[0].Error, "shutting down") || !ev.failed[0].Retryable {
		t.Fatalf("after shutdown: %+v", ev)
	}
	if _, held := e.leaseHolder(t, "olt-a"); held {
		t.Fatal("lease still held after shutdown")
	}

	e.fleet.OLT("olt-a").SetFaults(oltsim.Faults{})
	_, _ = e.startPoller(t, Config{PollerID: "staying", Workers: 1})
	waitFor(t, 30*time.Second, "the requeued node to succeed", func() bool {
		return len(e.execEvents(t, "olt-a", "exec-1").succeeded) == 1
	})
	ok := e.execEvents(t, "olt-a", "exec-1").succeeded[0]
	if ok.PollerID != "staying" || ok.Attempt != 2 {
		t.Fatalf("succeeded %+v", ok)
	}
}
