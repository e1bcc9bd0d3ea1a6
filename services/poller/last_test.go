package poller

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// The final batch of a successful walk is marked Last, exactly once per
// execution: when the walk found nothing it is an empty batch, and when the
// varbinds fill the batches exactly it is the last full one (the poller
// publishes a walk's rows once it ended, so it knows which is last); when
// the row buffer was published early and nothing is left, an empty batch.
// So the projector always learns where the walk ended.
func TestSuccessfulWalkEndsWithOneLastBatch(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, BatchSize: 32})

	// 32 ONUs x 4 columns = 128 varbinds = 4 full batches of 32.
	full := e.nodeDue("olt-a", "exec-full", "job-full")
	// A column the OLT does not have: the walk succeeds with no varbinds.
	empty := e.nodeDue("olt-a", "exec-empty", "job-empty")
	empty.OIDs = []streams.OIDSpec{{ID: "none", OID: huaweiBase + ".99.1.1", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01}}}

	for _, tc := range []struct {
		node        streams.NodeDue
		wantBatches int
		wantLastLen int
	}{
		{full, 4, 32},
		{empty, 1, 0},
	} {
		e.publishNodeDue(t, tc.node)
		ev := e.waitEnded(t, "olt-a", tc.node.ExecutionID, 30*time.Second)
		if len(ev.succeeded) != 1 || len(ev.failed) != 0 {
			t.Fatalf("%s: events %+v", tc.node.ExecutionID, ev)
		}
		batches := e.batches(t, "olt-a", tc.node.ExecutionID)
		if len(batches) != tc.wantBatches || ev.succeeded[0].Batches != tc.wantBatches {
			t.Fatalf("%s: %d batches published, succeeded says %d, want %d", tc.node.ExecutionID, len(batches), ev.succeeded[0].Batches, tc.wantBatches)
		}
		for i, b := range batches {
			if b.Last != (i == len(batches)-1) {
				t.Errorf("%s batch %d: last=%v", tc.node.ExecutionID, b.Batch, b.Last)
			}
		}
		last := batches[len(batches)-1]
		if last.VarbindCount() != tc.wantLastLen || len(last.Columns) != len(tc.node.OIDs) {
			t.Errorf("%s: last batch %+v", tc.node.ExecutionID, last)
		}
		if err := last.Validate(); err != nil {
			t.Errorf("%s: last batch does not validate: %v", tc.node.ExecutionID, err)
		}
	}
}

// A failed walk publishes no Last batch, whatever it published before.
func TestFailedWalkPublishesNoLastBatch(t *testing.T) {
	// A slow OLT (64 requests of 100 ms) that stops answering after the
	// first batch went out: the node fails mid-walk.
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{Latency: 100 * time.Millisecond}))
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, BatchSize: 4, RowBufferVarbinds: 4, MaxRepetitions: 2, SNMPTimeout: 300 * time.Millisecond, SNMPRetries: -1})
	node := e.nodeDue("olt-a", "exec-1", "job")
	e.publishNodeDue(t, node)
	waitFor(t, 30*time.Second, "a first batch", func() bool { return len(e.batches(t, "olt-a", "exec-1")) > 0 })
	e.fleet.OLT("olt-a").SetFaults(oltsim.Faults{NoAnswer: true})

	ev := e.waitEnded(t, "olt-a", "exec-1", 30*time.Second)
	if len(ev.failed) != 1 || len(ev.succeeded) != 0 {
		t.Fatalf("events %+v", ev)
	}
	for _, b := range e.batches(t, "olt-a", "exec-1") {
		if b.Last {
			t.Fatalf("failed execution published a last batch: %+v", b)
		}
	}
}
