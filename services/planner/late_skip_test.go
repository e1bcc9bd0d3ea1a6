package planner_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/streams"
)

func skippedOf(nd streams.NodeDue, attempt int) streams.ExecutionSkipped {
	ev := skippedEvent(nd)
	ev.Attempt = attempt
	return ev
}

func failedOf(nd streams.NodeDue, attempt int) streams.ExecutionFailed {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return streams.ExecutionFailed{ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID, PollerID: "p", Attempt: attempt,
		LeaseRevision: 3, StartedAt: now.Add(-time.Second), FinishedAt: now, Error: "timeout", Retryable: true}
}

func succeededOf(nd streams.NodeDue, attempt int) streams.ExecutionSucceeded {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return streams.ExecutionSucceeded{ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID, PollerID: "p", Attempt: attempt,
		LeaseRevision: 9, StartedAt: now.Add(-time.Second), FinishedAt: now}
}

// Attempt 1 of an execution fails and the planner retries it (attempt 2,
// the same execution id). While the retry runs, a terminal event of
// attempt 1 comes again: a stale delivery of the first dispatch's NodeDue
// (its ack was lost) skipped by a poller, or attempt 1's failure published
// again after the stream's duplicate window (or read again by a restarted
// planner). It is not the retry's end: the retry stays in flight (no other
// node of the OLT, no third dispatch) and ends with its own outcome. The
// same when the late skip is read before the retry is dispatched (it
// matches no flight then, and must not end the retry once it is).
func TestLateEndOfAnEarlierAttemptDoesNotEndTheRetry(t *testing.T) {
	for _, tc := range []struct {
		name string
		// late publishes attempt 1's late event.
		late func(t *testing.T, ctx context.Context, js jetstream.JetStream, nd streams.NodeDue)
		// early: published right after attempt 1's failure, before the
		// retry is dispatched (100 ms later).
		early bool
	}{
		{name: "skipped", late: func(t *testing.T, ctx context.Context, js jetstream.JetStream, nd streams.NodeDue) {
			execEvent(t, ctx, js, nd, streams.PhaseSkipped, streams.MsgID(nd.ExecutionID, 1, streams.PhaseSkipped), skippedOf(nd, 1))
		}},
		{name: "skipped before the retry's dispatch", early: true, late: func(t *testing.T, ctx context.Context, js jetstream.JetStream, nd streams.NodeDue) {
			execEvent(t, ctx, js, nd, streams.PhaseSkipped, streams.MsgID(nd.ExecutionID, 1, streams.PhaseSkipped), skippedOf(nd, 1))
		}},
		{name: "failed again", late: func(t *testing.T, ctx context.Context, js jetstream.JetStream, nd streams.NodeDue) {
			execEvent(t, ctx, js, nd, streams.PhaseFailed, streams.MsgID(nd.ExecutionID, 1, streams.PhaseFailed, "late"), failedOf(nd, 1))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seedLostConfig(t, env.JS, 2)
			var retry atomic.Pointer[streams.NodeDue]
			onNodeDue(t, ctx, env.JS, func(nd streams.NodeDue) {
				switch nd.Attempt {
				case 1:
					execEvent(t, ctx, env.JS, nd, streams.PhaseFailed, streams.MsgID(nd.ExecutionID, 1, streams.PhaseFailed), failedOf(nd, 1))
					if tc.early {
						tc.late(t, ctx, env.JS, nd)
					}
				case 2:
					retry.Store(&nd)
				}
			})
			wait := runLostPlanner(t, ctx, env.JS)
			defer func() { cancel(); wait() }()

			for deadline := time.Now().Add(10 * time.Second); retry.Load() == nil; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no retry dispatched")
				}
			}
			nd := *retry.Load()
			waitEntry(t, env.JS, "get-l.olt-l", "the retry in flight", func(ns streams.NodeSchedule, ok bool) bool {
				return ok && ns.State == streams.NodeInFlight && ns.InFlight != nil && ns.InFlight.ExecutionID == nd.ExecutionID
			})
			if !tc.early {
				tc.late(t, ctx, env.JS, nd)
			}
			time.Sleep(time.Second) // the planner reads the late event in a few ms; a third dispatch would come within 100 ms
			if ns, _ := scheduleEntry(t, env.JS, "get-l.olt-l"); ns.State != streams.NodeInFlight || ns.InFlight == nil || ns.InFlight.ExecutionID != nd.ExecutionID || ns.InFlight.Attempt != 2 {
				t.Errorf("after attempt 1's late event: state %s, last status %q; want the retry still in flight", ns.State, ns.LastStatus)
			}

			execEvent(t, ctx, env.JS, nd, streams.PhaseSucceeded, streams.MsgID(nd.ExecutionID, 2, streams.PhaseSucceeded), succeededOf(nd, 2))
			ns := waitEntry(t, env.JS, "get-l.olt-l", "the retry ended", func(ns streams.NodeSchedule, ok bool) bool {
				return ok && ns.LastStatus != "" && ns.State != streams.NodeInFlight && ns.State != streams.NodeRetry
			})
			if ns.LastStatus != "SUCCESS" || ns.LastExecutionID != nd.ExecutionID {
				t.Errorf("last run %s %q, want %s SUCCESS (the retry's own end)", ns.LastExecutionID, ns.LastStatus, nd.ExecutionID)
			}
			if dues := nodeDues(t, env.JS, 2); len(dues) != 2 {
				t.Errorf("%d dispatches, want 2 (the first and one retry)", len(dues))
			}
		})
	}
}

// A skip of the dispatch in flight still ends the execution: one that says
// so (the retry's attempt, 2) and one from a poller that does not carry
// the attempt (0: an event from before the field).
func TestSkipOfTheRetryEndsIt(t *testing.T) {
	for _, attempt := range []int{2, 0} {
		t.Run(map[int]string{2: "attempt 2", 0: "no attempt"}[attempt], func(t *testing.T) {
			env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seedLostConfig(t, env.JS, 2)
			onNodeDue(t, ctx, env.JS, func(nd streams.NodeDue) {
				switch nd.Attempt {
				case 1:
					execEvent(t, ctx, env.JS, nd, streams.PhaseFailed, streams.MsgID(nd.ExecutionID, 1, streams.PhaseFailed), failedOf(nd, 1))
				case 2:
					execEvent(t, ctx, env.JS, nd, streams.PhaseSkipped, streams.MsgID(nd.ExecutionID, 2, streams.PhaseSkipped), skippedOf(nd, attempt))
				}
			})
			wait := runLostPlanner(t, ctx, env.JS)
			defer func() { cancel(); wait() }()

			ns := waitEntry(t, env.JS, "get-l.olt-l", "the retry ended", func(ns streams.NodeSchedule, ok bool) bool {
				return ok && ns.LastStatus != "" && ns.State != streams.NodeInFlight && ns.State != streams.NodeRetry
			})
			if ns.LastStatus != "SKIPPED" {
				t.Errorf("last status %q, want SKIPPED (the retry's skip ends it)", ns.LastStatus)
			}
			time.Sleep(500 * time.Millisecond)
			dues := nodeDues(t, env.JS, 2)
			if len(dues) != 2 {
				t.Errorf("%d dispatches, want 2", len(dues))
			}
			for i, nd := range dues {
				if nd.ExecutionID != dues[0].ExecutionID || nd.Attempt != i+1 {
					t.Errorf("dispatch %d: execution %s attempt %d", i, nd.ExecutionID, nd.Attempt)
				}
			}
		})
	}
}

// A restarted planner reads the terminal events again from a little before
// its oldest restored flight: with a short backoff, that takes in the
// failure of attempt 1 that the retry in flight (attempt 2) follows. It is
// not the retry's end: the restored retry stays in flight and ends with
// its own outcome, dispatched twice in all.
func TestRestartDoesNotEndTheRetryWithTheFailureItFollows(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seedLostConfig(t, env.JS, 2)
	var retry atomic.Pointer[streams.NodeDue]
	onNodeDue(t, ctx, env.JS, func(nd streams.NodeDue) {
		switch nd.Attempt {
		case 1:
			execEvent(t, ctx, env.JS, nd, streams.PhaseFailed, streams.MsgID(nd.ExecutionID, 1, streams.PhaseFailed), failedOf(nd, 1))
		case 2:
			retry.Store(&nd)
		}
	})
	ctxA, cancelA := context.WithCancel(ctx)
	waitA := runLostPlanner(t, ctxA, env.JS)
	waitEntry(t, env.JS, "get-l.olt-l", "the retry in flight", func(ns streams.NodeSchedule, ok bool) bool {
		return ok && ns.State == streams.NodeInFlight && ns.InFlight != nil && ns.InFlight.Attempt == 2
	})
	cancelA()
	waitA()
	nd := retry.Load()
	if nd == nil {
		t.Fatal("no retry dispatched")
	}

	waitB := runLostPlanner(t, ctx, env.JS)
	defer func() { cancel(); waitB() }()
	time.Sleep(time.Second) // planner B takes over and reads FACHO_EXEC again; a third dispatch would come within 100 ms
	if ns, _ := scheduleEntry(t, env.JS, "get-l.olt-l"); ns.State != streams.NodeInFlight || ns.InFlight == nil || ns.InFlight.Attempt != 2 {
		t.Errorf("after the restart: state %s, last status %q, in flight %+v; want the retry (attempt 2) still in flight", ns.State, ns.LastStatus, ns.InFlight)
	}
	execEvent(t, ctx, env.JS, *nd, streams.PhaseSucceeded, streams.MsgID(nd.ExecutionID, 2, streams.PhaseSucceeded), succeededOf(*nd, 2))
	ns := waitEntry(t, env.JS, "get-l.olt-l", "the retry ended", func(ns streams.NodeSchedule, ok bool) bool {
		return ok && ns.LastStatus != "" && ns.State != streams.NodeInFlight && ns.State != streams.NodeRetry
	})
	if ns.LastStatus != "SUCCESS" {
		t.Errorf("last status %q, want SUCCESS (the retry's own end)", ns.LastStatus)
	}
	if dues := nodeDues(t, env.JS, 2); len(dues) != 2 {
		t.Errorf("%d dispatches, want 2 (the first and one retry)", len(dues))
	}
}
