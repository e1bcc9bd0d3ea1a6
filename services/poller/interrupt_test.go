package poller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// deadAttempt plays a poller that took oltID's lease, published the
// started event of execID's attempt 1, and died: it stops renewing without
// releasing. It returns the started event.
func (e *testEnv) deadAttempt(t *testing.T, holder, oltID, execID string) streams.ExecutionStarted {
	t.Helper()
	m, err := lease.Open(e.ctx, e.JS, streams.BucketLeases, holder)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Acquire(e.ctx, oltID, lease.Info{ExecutionID: execID, JobID: "job-disc"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.publishStarted(t, holder, oltID, execID, l.Revision())
	l.Abandon()
	return st
}

func (e *testEnv) publishStarted(t *testing.T, holder, oltID, execID string, rev uint64) streams.ExecutionStarted {
	t.Helper()
	st := streams.ExecutionStarted{ExecutionID: execID, JobID: "job-disc", OLTID: oltID, PollerID: holder, Attempt: 1,
		LeaseRevision: rev, StartedAt: time.Now().UTC()}
	e.publishExec(t, oltID, streams.PhaseStarted, streams.MsgID(execID, 1, streams.PhaseStarted), st)
	return st
}

func (e *testEnv) publishExec(t *testing.T, oltID, phase, id string, ev streams.Event) {
	t.Helper()
	b, err := streams.EncodeWithID(id, "test", time.Now(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.JS.Publish(e.ctx, streams.SubjectExec(oltID, phase), b, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
}

// A poller dies mid-walk (it stops renewing its lease, releases nothing,
// publishes no terminal event). The lease watch of the live pollers turns
// the expiry into one execution.interrupted for its attempt, published by
// both pollers under one Nats-Msg-Id and stored once; the OLT's next
// NodeDue then runs and succeeds.
func TestExpiredLeaseEndsExecutionInterrupted(t *testing.T) {
	const ttl = 2 * time.Second
	e := newTestEnv(t, streams.Options{LeaseTTL: ttl, PollerAckWait: 3 * time.Second, Storage: jetstream.MemoryStorage},
		huaweiOLT("olt-a", oltsim.Faults{}))
	_, reg1 := e.startPoller(t, Config{PollerID: "p1", Workers: 1, LeaseBusyDelay: 200 * time.Millisecond})
	_, reg2 := e.startPoller(t, Config{PollerID: "p2", Workers: 1, LeaseBusyDelay: 200 * time.Millisecond})

	doomed := e.deadAttempt(t, "doomed", "olt-a", "exec-1")
	died := time.Now()
	var ev execEvents
	waitFor(t, 60*time.Second, "exec-1 to be interrupted", func() bool {
		ev = e.execEvents(t, "olt-a", "exec-1")
		return len(ev.interrupted) > 0
	})
	t.Logf("interrupted %s after the holder died (lease ttl %s)", time.Since(died).Round(time.Millisecond), ttl)
	in := ev.interrupted[0]
	if len(ev.interrupted) != 1 || in.Attempt != 1 || in.LeaseRevision != doomed.LeaseRevision || in.PollerID != "doomed" ||
		in.JobID != "job-disc" || !in.StartedAt.Equal(doomed.StartedAt) || in.InterruptedAt.Before(doomed.StartedAt) || in.Reason == "" ||
		(in.DetectedBy != "p1" && in.DetectedBy != "p2") {
		t.Fatalf("interrupted events %+v after started %+v", ev.interrupted, doomed)
	}
	if ev.interruptedMsgIDs[0] != "exec-1:1:interrupted" {
		t.Fatalf("msg id %q", ev.interruptedMsgIDs[0])
	}
	if len(ev.succeeded)+len(ev.failed) != 0 {
		t.Fatalf("terminal events of the dead attempt: %+v", ev)
	}
	// Published at least once by the pollers together; a second publish
	// was a duplicate the stream dropped.
	if n := counter(t, reg1, "facho_poller_executions_interrupted_total") + counter(t, reg2, "facho_poller_executions_interrupted_total"); n != 1 {
		t.Fatalf("interrupted stored %v times by the pollers, want 1", n)
	}

	// The OLT is free: its next run proceeds.
	e.publishNodeDue(t, e.nodeDue("olt-a", "exec-2", "job-status"))
	ev2 := e.waitEnded(t, "olt-a", "exec-2", 60*time.Second)
	if len(ev2.succeeded) != 1 || len(ev2.failed) != 0 || ev2.succeeded[0].LeaseRevision <= doomed.LeaseRevision {
		t.Fatalf("next run after the interruption: %+v", ev2)
	}
	if len(ev2.interrupted) != 0 || len(e.execEvents(t, "olt-a", "exec-1").interrupted) != 1 {
		t.Fatal("a live or already interrupted execution was interrupted")
	}
}

// No poller was alive when leases expired, and by the time one starts the
// expiry markers are gone too: the sweep finds the started attempts with no
// end and no lease and interrupts them (also on an OLT whose lease a live
// holder has taken since); an attempt that ended, and those whose holder is
// alive, are left alone; a second sweep finds nothing.
func TestSweepInterruptsWhatNoWatchSaw(t *testing.T) {
	e := newTestEnv(t, streams.Options{LeaseTTL: time.Second, Storage: jetstream.MemoryStorage})
	ctx := e.ctx

	dead := e.deadAttempt(t, "doomed", "olt-dead", "e-dead")

	// Ended normally: terminal event, then release.
	m, err := lease.Open(ctx, e.JS, streams.BucketLeases, "finished")
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Acquire(ctx, "olt-done", lease.Info{ExecutionID: "e-done"})
	if err != nil {
		t.Fatal(err)
	}
	done := e.publishStarted(t, "finished", "olt-done", "e-done", l.Revision())
	e.publishExec(t, "olt-done", streams.PhaseSucceeded, "e-done:1:succeeded", streams.ExecutionSucceeded{ExecutionID: "e-done", JobID: "job-disc",
		OLTID: "olt-done", PollerID: "finished", Attempt: 1, LeaseRevision: done.LeaseRevision, StartedAt: done.StartedAt, FinishedAt: time.Now().UTC()})
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Alive: holds and renews its lease.
	ma, err := lease.Open(ctx, e.JS, streams.BucketLeases, "alive")
	if err != nil {
		t.Fatal(err)
	}
	la, err := ma.Acquire(ctx, "olt-live", lease.Info{ExecutionID: "e-live"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = la.Release(context.Background()) }()
	e.publishStarted(t, "alive", "olt-live", "e-live", la.Revision())

	// Mixed: a dead attempt, then (once its lease expired) a live one on
	// the same OLT.
	mixedDead := e.deadAttempt(t, "doomed", "olt-mixed", "e-mixed-1")
	mm, err := lease.Open(ctx, e.JS, streams.BucketLeases, "alive2")
	if err != nil {
		t.Fatal(err)
	}
	var lm *lease.Lease
	waitFor(t, 60*time.Second, "the dead lease of olt-mixed to expire", func() bool {
		lm, err = mm.Acquire(ctx, "olt-mixed", lease.Info{ExecutionID: "e-mixed-2"})
		if err != nil && !errors.Is(err, lease.ErrHeld) {
			t.Fatal(err)
		}
		return err == nil
	})
	defer func() { _ = lm.Release(context.Background()) }()
	e.publishStarted(t, "alive2", "olt-mixed", "e-mixed-2", lm.Revision())

	// Wait until the dead lease and its marker are gone from the bucket.
	kvs, err := e.JS.Stream(ctx, "KV_"+streams.BucketLeases)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the dead lease's marker to age out", func() bool {
		_, err := kvs.GetLastMsgForSubject(ctx, "$KV."+streams.BucketLeases+"."+lease.Key("olt-dead"))
		return errors.Is(err, jetstream.ErrMsgNotFound)
	})

	in := newTestInterrupts(t, e, "sweeper")
	n, err := in.sweep(ctx)
	if err != nil || n != 2 {
		t.Fatalf("sweep: %d interrupted, %v; want 2", n, err)
	}
	if ev := e.execEvents(t, "olt-mixed", "e-mixed-1"); len(ev.interrupted) != 1 || ev.interrupted[0].LeaseRevision != mixedDead.LeaseRevision {
		t.Fatalf("e-mixed-1: %+v", ev)
	}
	if ev := e.execEvents(t, "olt-mixed", "e-mixed-2"); len(ev.interrupted) != 0 {
		t.Fatalf("the live attempt on olt-mixed was interrupted: %+v", ev)
	}
	ev := e.execEvents(t, "olt-dead", "e-dead")
	if len(ev.interrupted) != 1 || ev.interrupted[0].LeaseRevision != dead.LeaseRevision || ev.interrupted[0].DetectedBy != "sweeper" {
		t.Fatalf("e-dead: %+v", ev)
	}
	if len(e.execEvents(t, "olt-done", "e-done").interrupted) != 0 || len(e.execEvents(t, "olt-live", "e-live").interrupted) != 0 {
		t.Fatal("an ended or live attempt was interrupted")
	}
	if n, err := in.sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second sweep: %d interrupted, %v; want 0", n, err)
	}
	if la.Err() != nil || lm.Err() != nil {
		t.Fatalf("a live lease was lost during the test: %v, %v", la.Err(), lm.Err())
	}
}

// newTestInterrupts is a poller's interrupt detector without the poller.
func newTestInterrupts(t *testing.T, e *testEnv, id string) *interrupts {
	t.Helper()
	exec, err := e.JS.Stream(e.ctx, streams.StreamExec)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := e.JS.KeyValue(e.ctx, streams.BucketLeases)
	if err != nil {
		t.Fatal(err)
	}
	p := &poller{cfg: Config{PollerID: id}.WithDefaults(), js: e.JS, exec: exec, log: zerolog.Nop()}
	return &interrupts{p: p, kv: kv, log: zerolog.Nop(), count: prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})}
}
