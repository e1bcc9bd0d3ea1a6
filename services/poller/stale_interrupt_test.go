package poller

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// startPollerAfterSweep runs a poller whose periodic sweep cannot fire
// within the test (InterruptSweepEvery 1h) and returns once its start-up
// sweep has scanned the execution stream: a started event published
// before the poller, with no lease ever taken, must be interrupted by that
// sweep. Whatever is published afterwards is not seen by any sweep.
func (e *testEnv) startPollerAfterSweep(t *testing.T, id string) *prometheus.Registry {
	t.Helper()
	e.publishStarted(t, "gone", "olt-sentinel", "e-sentinel", 1)
	_, reg := e.startPoller(t, Config{PollerID: id, Workers: 1, InterruptSweepEvery: time.Hour})
	waitFor(t, 30*time.Second, "the start-up sweep to interrupt e-sentinel", func() bool {
		return len(e.execEvents(t, "olt-sentinel", "e-sentinel").interrupted) > 0
	})
	return reg
}

// staleNodeDue is a NodeDue for execID on olt scheduled two intervals ago.
func (e *testEnv) staleNodeDue(olt, execID string) streams.NodeDue {
	n := e.nodeDue(olt, execID, "job-disc")
	n.ScheduledAt = time.Now().UTC().Add(-2 * time.Duration(n.IntervalSeconds) * time.Second)
	return n
}

// execSeqs returns the stream sequences of the events of phase for execID
// on olt, oldest first.
func (e *testEnv) execSeqs(t *testing.T, olt, phase, execID string) []uint64 {
	t.Helper()
	var out []uint64
	for _, m := range e.streamMsgs(t, streams.StreamExec, streams.SubjectExec(olt, phase)) {
		env, err := streams.DecodeEnvelope(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		var id string
		switch env.Type {
		case streams.TypeExecutionInterrupted:
			_, ev, err := streams.Decode[streams.ExecutionInterrupted](m.Data)
			if err != nil {
				t.Fatal(err)
			}
			id = ev.ExecutionID
		case streams.TypeExecutionSkipped:
			_, ev, err := streams.Decode[streams.ExecutionSkipped](m.Data)
			if err != nil {
				t.Fatal(err)
			}
			id = ev.ExecutionID
		default:
			t.Fatalf("unexpected %s on %s", env.Type, m.Subject)
		}
		if id == execID {
			out = append(out, m.Sequence)
		}
	}
	return out
}

// An attempt published execution.started, could not publish its terminal
// event and released its lease (the chaos case: "no response from
// stream"); the redelivered NodeDue is stale. The poller that skips it
// ends the open attempt with execution.interrupted first, stored before
// the execution.skipped, instead of leaving the execution RUNNING until
// the next sweep (an hour away here, and the start-up sweep ran before the
// attempt started).
func TestStaleNodeDueInterruptsOpenAttemptBeforeSkip(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-x", oltsim.Faults{}))
	reg := e.startPollerAfterSweep(t, "p1")

	// Attempt 1 of exec-1: lease taken, started published, no terminal
	// event, lease released.
	m, err := lease.Open(e.ctx, e.JS, streams.BucketLeases, "crashed")
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Acquire(e.ctx, "olt-x", lease.Info{ExecutionID: "exec-1", JobID: "job-disc"})
	if err != nil {
		t.Fatal(err)
	}
	started := e.publishStarted(t, "crashed", "olt-x", "exec-1", l.Revision())
	if err := l.Release(e.ctx); err != nil {
		t.Fatal(err)
	}
	if holder, held := e.leaseHolder(t, "olt-x"); held {
		t.Fatalf("lease of olt-x still held by %s", holder)
	}

	e.publishNodeDue(t, e.staleNodeDue("olt-x", "exec-1"))
	var ev execEvents
	waitFor(t, 30*time.Second, "execution.skipped of exec-1", func() bool {
		ev = e.execEvents(t, "olt-x", "exec-1")
		return len(ev.skipped) > 0
	})
	e.waitPollerQueueEmpty(t)
	ev = e.execEvents(t, "olt-x", "exec-1")
	if len(ev.interrupted) != 1 {
		t.Fatalf("%d execution.interrupted for exec-1 with its execution.skipped, want 1 (the stale NodeDue did not end the open attempt)", len(ev.interrupted))
	}
	in := ev.interrupted[0]
	if in.Attempt != 1 || in.LeaseRevision != started.LeaseRevision || in.PollerID != "crashed" || in.DetectedBy != "p1" ||
		in.JobID != "job-disc" || in.OLTID != "olt-x" || !in.StartedAt.Equal(started.StartedAt) {
		t.Fatalf("interrupted %+v for started %+v", in, started)
	}
	if id := ev.interruptedMsgIDs[0]; id != "exec-1:1:interrupted" {
		t.Fatalf("interrupted Nats-Msg-Id %q", id)
	}
	if len(ev.skipped) != 1 || len(ev.started) != 1 || len(ev.succeeded)+len(ev.failed)+len(ev.aborted) != 0 {
		t.Fatalf("exec-1: %d skipped, %d started, %d succeeded, %d failed, %d aborted",
			len(ev.skipped), len(ev.started), len(ev.succeeded), len(ev.failed), len(ev.aborted))
	}
	inSeq := e.execSeqs(t, "olt-x", streams.PhaseInterrupted, "exec-1")
	skSeq := e.execSeqs(t, "olt-x", streams.PhaseSkipped, "exec-1")
	if len(inSeq) != 1 || len(skSeq) != 1 || inSeq[0] >= skSeq[0] {
		t.Fatalf("interrupted at stream seq %v, skipped at %v: want the interrupted first", inSeq, skSeq)
	}
	if n := e.fleet.OLT("olt-x").Record().Requests; n != 0 {
		t.Fatalf("the stale node sent %d SNMP requests", n)
	}
	// The sentinel (start-up sweep) and exec-1 (the skip).
	if n := counter(t, reg, "facho_poller_executions_interrupted_total"); n != 2 {
		t.Fatalf("facho_poller_executions_interrupted_total = %v, want 2", n)
	}
	if n := counter(t, reg, "facho_poller_nodes_skipped_total"); n != 1 {
		t.Fatalf("facho_poller_nodes_skipped_total = %v, want 1", n)
	}
}

// The same stale NodeDue while attempt 1 still holds the OLT's lease with
// its token (alive and renewing): the skip leaves it alone.
func TestStaleNodeDueLeavesHeldAttemptRunning(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-x", oltsim.Faults{}))
	reg := e.startPollerAfterSweep(t, "p1")

	m, err := lease.Open(e.ctx, e.JS, streams.BucketLeases, "alive")
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Acquire(e.ctx, "olt-x", lease.Info{ExecutionID: "exec-1", JobID: "job-disc"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	e.publishStarted(t, "alive", "olt-x", "exec-1", l.Revision())

	e.publishNodeDue(t, e.staleNodeDue("olt-x", "exec-1"))
	var ev execEvents
	waitFor(t, 30*time.Second, "execution.skipped of exec-1", func() bool {
		ev = e.execEvents(t, "olt-x", "exec-1")
		return len(ev.skipped) > 0
	})
	e.waitPollerQueueEmpty(t)
	ev = e.execEvents(t, "olt-x", "exec-1")
	if len(ev.interrupted) != 0 || len(ev.skipped) != 1 || len(ev.started) != 1 {
		t.Fatalf("exec-1: %d interrupted, %d skipped, %d started; want 0, 1, 1", len(ev.interrupted), len(ev.skipped), len(ev.started))
	}
	if holder, held := e.leaseHolder(t, "olt-x"); !held || l.Err() != nil {
		t.Fatalf("lease of olt-x: %q (held %v, err %v), want still alive's", holder, held, l.Err())
	}
	// The sentinel only.
	if n := counter(t, reg, "facho_poller_executions_interrupted_total"); n != 1 {
		t.Fatalf("facho_poller_executions_interrupted_total = %v, want 1", n)
	}
}
