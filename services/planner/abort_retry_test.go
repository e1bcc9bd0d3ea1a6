package planner_test

import (
	"context"
	"strings"
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

// runAbortPlanner runs a planner whose retries wait backoff until ctx ends.
func runAbortPlanner(t *testing.T, ctx context.Context, js jetstream.JetStream, backoff time.Duration) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := planner.Run(ctx, planner.Config{Tick: 20 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, FirstRunSpread: -1,
			RetryBackoff: []time.Duration{backoff}, DisableAfterFailures: -1},
			planner.Deps{JS: js, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Errorf("planner.Run: %v", err)
		}
	}()
	return wg.Wait
}

// aborts are the execution.aborted events of olt the stream holds now.
func aborts(t *testing.T, js jetstream.JetStream, olt string) []streams.ExecutionAborted {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, streams.StreamExec, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.SubjectExec(olt, streams.PhaseAborted)}})
	if err != nil {
		t.Fatal(err)
	}
	var out []streams.ExecutionAborted
	for {
		msg, err := cons.Next(jetstream.FetchMaxWait(300 * time.Millisecond))
		if err != nil {
			return out // no more within the wait: all the stream holds
		}
		_, ev, err := streams.Decode[streams.ExecutionAborted](msg.Data())
		if err != nil {
			t.Fatalf("decode execution.aborted: %v", err)
		}
		out = append(out, ev)
	}
}

// auditsOf are the planner's audit events of kind the stream holds now.
func auditsOf(t *testing.T, js jetstream.JetStream, kind string) []streams.AuditEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, streams.StreamAudit, jetstream.OrderedConsumerConfig{FilterSubjects: []string{streams.SubjectAudit("planner")}})
	if err != nil {
		t.Fatal(err)
	}
	var out []streams.AuditEvent
	for {
		msg, err := cons.Next(jetstream.FetchMaxWait(300 * time.Millisecond))
		if err != nil {
			return out
		}
		_, ev, err := streams.Decode[streams.AuditEvent](msg.Data())
		if err != nil {
			t.Fatalf("decode audit event: %v", err)
		}
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
}

// waitAborts waits until olt has at least n execution.aborted events.
func waitAborts(t *testing.T, js jetstream.JetStream, olt string, n int) []streams.ExecutionAborted {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := aborts(t, js, olt)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d execution.aborted of %s, waited for %d", len(got), olt, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// failFirstAttempt plays a poller whose first attempt of every execution
// fails (retryable); a retry must never be dispatched.
func failFirstAttempt(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	onNodeDue(t, ctx, js, func(nd streams.NodeDue) {
		if nd.Attempt != 1 {
			t.Errorf("retry of %s dispatched (attempt %d) though its node left the plan", nd.ExecutionID, nd.Attempt)
			return
		}
		execEvent(t, ctx, js, nd, streams.PhaseFailed, streams.MsgID(nd.ExecutionID, 1, streams.PhaseFailed), failedOf(nd, 1))
	})
}

// waitTerms waits until n planner terms have begun (their takeover audit).
func waitTerms(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	collect(t, js, streams.StreamAudit, streams.SubjectAudit("planner"), func(e []streams.Envelope) bool {
		terms := 0
		for _, a := range e {
			var ev streams.AuditEvent
			if streams.DecodeData(a, &ev) == nil && ev.Kind == streams.AuditTakeover {
				terms++
			}
		}
		return terms >= n
	})
}

func checkAbort(t *testing.T, got []streams.ExecutionAborted, nd streams.NodeDue, reason string) {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("%d execution.aborted, want 1 (of %s): %+v", len(got), nd.ExecutionID, got)
	}
	a := got[0]
	if a.ExecutionID != nd.ExecutionID || a.JobID != nd.JobID || a.OLTID != nd.OLTID || !strings.Contains(a.Reason, reason) || a.AbortedAt.IsZero() {
		t.Errorf("execution.aborted %+v; want execution %s of %s on %s, reason with %q", a, nd.ExecutionID, nd.JobID, nd.OLTID, reason)
	}
}

// An execution fails and its retry waits out its backoff; the OLT or the
// task is then disabled (or the OLT deleted). No poller will see the
// retry, so the planner ends the execution itself: one execution.aborted
// saying why, and no retry. A restarted planner does not abort it again.
func TestRetryInBackoffIsAbortedWhenItsNodeLeaves(t *testing.T) {
	olt := streams.OLTUpserted{ID: "olt-l", Name: "olt-l", BrandID: "huawei", IP: "127.0.0.1", Port: 1161,
		CommunityEnc: "v1:sealed-placeholder"}
	for _, tc := range []struct {
		name, reason string
		leave        func(t *testing.T, js jetstream.JetStream)
	}{
		{"OLT disabled", "OLT disabled", func(t *testing.T, js jetstream.JetStream) {
			publish(t, js, streams.SubjectOLT("olt-l"), olt)
		}},
		{"OLT deleted", "OLT deleted", func(t *testing.T, js jetstream.JetStream) {
			publish(t, js, streams.SubjectOLT("olt-l"), streams.OLTDeleted{ID: "olt-l"})
		}},
		{"task disabled", "job disabled", func(t *testing.T, js jetstream.JetStream) {
			publish(t, js, streams.SubjectJob("get-l"), streams.JobUpserted{ID: "get-l", Name: "get-l", BrandID: "huawei", Kind: streams.KindGet,
				OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, MaxRetries: 2, Priority: 40, Enabled: false})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seedLostConfig(t, env.JS, 2)
			failFirstAttempt(t, ctx, env.JS)
			ctxA, cancelA := context.WithCancel(ctx)
			waitA := runAbortPlanner(t, ctxA, env.JS, time.Hour)
			defer func() { cancelA(); waitA() }()

			waitEntry(t, env.JS, "get-l.olt-l", "the retry's backoff", func(ns streams.NodeSchedule, ok bool) bool {
				return ok && ns.State == streams.NodeRetry && ns.FailedAttempts == 1
			})
			nd := nodeDues(t, env.JS, 1)[0]
			if got := aborts(t, env.JS, "olt-l"); len(got) != 0 {
				t.Fatalf("execution.aborted before the node left: %+v", got)
			}
			tc.leave(t, env.JS)
			checkAbort(t, waitAborts(t, env.JS, "olt-l", 1), nd, tc.reason)
			waitAudit(t, env.JS, func(ev streams.AuditEvent) bool {
				return ev.Kind == streams.AuditExecAborted && ev.Details["execution_id"] == nd.ExecutionID && ev.Details["what"] == "retry-pending"
			})
			waitEntry(t, env.JS, "get-l.olt-l", "no retry", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.State != streams.NodeRetry })

			cancelA()
			waitA()
			waitB := runAbortPlanner(t, ctx, env.JS, time.Hour)
			defer func() { cancel(); waitB() }()
			waitTerms(t, env.JS, 2)
			time.Sleep(500 * time.Millisecond)
			checkAbort(t, aborts(t, env.JS, "olt-l"), nd, tc.reason)
			if dues := nodeDues(t, env.JS, 1); len(dues) != 1 {
				t.Errorf("%d dispatches, want the first only", len(dues))
			}
		})
	}
}

// The task is disabled while no planner runs, its execution's retry
// waiting out its backoff in the persisted schedule: the next term, which
// replays the change without comparing plans, still ends the execution,
// once; the term after it does not abort it again.
func TestRetryDroppedWhileNoPlannerRanIsAborted(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seedLostConfig(t, env.JS, 2)
	failFirstAttempt(t, ctx, env.JS)

	ctxA, cancelA := context.WithCancel(ctx)
	waitA := runAbortPlanner(t, ctxA, env.JS, time.Hour)
	waitEntry(t, env.JS, "get-l.olt-l", "the retry's backoff", func(ns streams.NodeSchedule, ok bool) bool {
		return ok && ns.State == streams.NodeRetry && ns.FailedAttempts == 1
	})
	nd := nodeDues(t, env.JS, 1)[0]
	cancelA()
	waitA()

	publish(t, env.JS, streams.SubjectJob("get-l"), streams.JobUpserted{ID: "get-l", Name: "get-l", BrandID: "huawei", Kind: streams.KindGet,
		OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, MaxRetries: 2, Priority: 40, Enabled: false})
	ctxB, cancelB := context.WithCancel(ctx)
	waitB := runAbortPlanner(t, ctxB, env.JS, time.Hour)
	checkAbort(t, waitAborts(t, env.JS, "olt-l", 1), nd, "job disabled")
	waitEntry(t, env.JS, "get-l.olt-l", "disabled", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.State == streams.NodeDisabled })
	cancelB()
	waitB()

	waitC := runAbortPlanner(t, ctx, env.JS, time.Hour)
	defer func() { cancel(); waitC() }()
	waitTerms(t, env.JS, 3)
	time.Sleep(500 * time.Millisecond)
	checkAbort(t, aborts(t, env.JS, "olt-l"), nd, "job disabled")
}

// On one OLT: get-l fails and its retry comes due while hold runs (it
// never ends), so the retry waits in the OLT's queue behind it with the
// first run of fresh. The OLT is disabled, live or while no planner runs:
// the queued retry's execution is aborted, once; fresh's first run, never
// dispatched, waiting in the queue, is aborted too (its execution can be
// opened), unless the OLT was disabled while no planner ran (the new
// planner never queued it, nothing names it).
func TestQueuedRetryAndWaitingFirstRunAreAborted(t *testing.T) {
	for _, tc := range []struct {
		name string
		down bool // the OLT is disabled while no planner runs
		keep bool // the planner restarts, the OLT stays enabled
	}{{"live", false, false}, {"while no planner ran", true, false}, {"restart, OLT kept", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			publish(t, env.JS, streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"})
			publish(t, env.JS, streams.SubjectOID("hw-serial"), streams.OIDUpserted{ID: "hw-serial", BrandID: "huawei", Name: "serial",
				OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}})
			for _, j := range []struct {
				id       string
				priority int
			}{{"get-l", 90}, {"hold", 40}, {"fresh", 10}} {
				publish(t, env.JS, streams.SubjectJob(j.id), streams.JobUpserted{ID: j.id, Name: j.id, BrandID: "huawei", Kind: streams.KindGet,
					OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, MaxRetries: 2, Priority: j.priority, Enabled: true})
				publish(t, env.JS, streams.SubjectAssignment(j.id, "olt-l"), streams.JobOLTAssigned{JobID: j.id, OLTID: "olt-l", Enabled: true})
			}
			olt := streams.OLTUpserted{ID: "olt-l", Name: "olt-l", BrandID: "huawei", IP: "127.0.0.1", Port: 1161,
				CommunityEnc: "v1:sealed-placeholder", Enabled: true}
			publish(t, env.JS, streams.SubjectOLT("olt-l"), olt)
			var mu sync.Mutex
			first := map[string]streams.NodeDue{}
			onNodeDue(t, ctx, env.JS, func(nd streams.NodeDue) {
				mu.Lock()
				first[nd.JobID] = nd
				mu.Unlock()
				switch {
				case nd.JobID == "get-l" && nd.Attempt == 1:
					execEvent(t, ctx, env.JS, nd, streams.PhaseFailed, streams.MsgID(nd.ExecutionID, 1, streams.PhaseFailed), failedOf(nd, 1))
				case nd.JobID == "hold":
					// Runs until the end of the test.
				case tc.keep:
					// Restored as the same retry (attempt 2), then fresh.
					execEvent(t, ctx, env.JS, nd, streams.PhaseSucceeded, streams.MsgID(nd.ExecutionID, nd.Attempt, streams.PhaseSucceeded), succeededOf(nd, nd.Attempt))
				default:
					t.Errorf("%s attempt %d dispatched; only get-l's first attempt and hold's should be", nd.JobID, nd.Attempt)
				}
			})
			ctxA, cancelA := context.WithCancel(ctx)
			waitA := runAbortPlanner(t, ctxA, env.JS, 300*time.Millisecond)
			defer func() { cancelA(); waitA() }()

			waitEntry(t, env.JS, "hold.olt-l", "hold in flight", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.State == streams.NodeInFlight })
			waitEntry(t, env.JS, "get-l.olt-l", "the retry queued", func(ns streams.NodeSchedule, ok bool) bool {
				return ok && ns.State == streams.NodeWaiting && ns.FailedAttempts == 1
			})
			waitEntry(t, env.JS, "fresh.olt-l", "fresh queued", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.State == streams.NodeWaiting })
			terms := 1
			if tc.down {
				cancelA()
				waitA()
			}
			if tc.keep {
				// The queued retry survives the restart as the same retry:
				// once hold ends, attempt 2 of the execution, in the retry
				// class; nothing is aborted.
				waitB := runAbortPlanner(t, ctx, env.JS, 300*time.Millisecond)
				defer func() { cancel(); waitB() }()
				waitTerms(t, env.JS, 2)
				mu.Lock()
				hold := first["hold"]
				mu.Unlock()
				execEvent(t, ctx, env.JS, hold, streams.PhaseSucceeded, streams.MsgID(hold.ExecutionID, 1, streams.PhaseSucceeded), succeededOf(hold, 1))
				waitEntry(t, env.JS, "fresh.olt-l", "fresh ran", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.LastStatus == "SUCCESS" })
				var getl []streams.NodeDue
				for _, nd := range nodeDues(t, env.JS, 4) {
					if nd.JobID == "get-l" {
						getl = append(getl, nd)
					}
				}
				if len(getl) != 2 || getl[1].ExecutionID != getl[0].ExecutionID || getl[1].Attempt != 2 || getl[1].Class != streams.ClassRetry {
					t.Errorf("get-l dispatches %+v; want the first and its retry (attempt 2, class retry)", getl)
				}
				if got := aborts(t, env.JS, "olt-l"); len(got) != 0 {
					t.Errorf("execution.aborted though nothing left the plan: %+v", got)
				}
				return
			}
			olt.Enabled = false
			publish(t, env.JS, streams.SubjectOLT("olt-l"), olt)
			if tc.down {
				waitB := runAbortPlanner(t, ctx, env.JS, 300*time.Millisecond)
				defer func() { cancel(); waitB() }()
				terms++
			}
			waitTerms(t, env.JS, terms)
			for _, j := range []string{"get-l", "hold", "fresh"} {
				waitEntry(t, env.JS, j+".olt-l", "disabled", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.State == streams.NodeDisabled })
			}
			time.Sleep(300 * time.Millisecond)
			mu.Lock()
			nd := first["get-l"]
			mu.Unlock()
			var retry, fresh []streams.ExecutionAborted
			for _, a := range aborts(t, env.JS, "olt-l") {
				if a.JobID == "fresh" {
					fresh = append(fresh, a)
				} else {
					retry = append(retry, a)
				}
			}
			checkAbort(t, retry, nd, "OLT disabled")
			// Every waiting execution an EXECUTION_ABORTED audit event
			// names has its execution.aborted, so it can be opened: live,
			// fresh's first run (a new planner never queued it: none).
			named := map[string]bool{}
			for _, e := range auditsOf(t, env.JS, streams.AuditExecAborted) {
				if e.Details["what"] == "waiting" && e.Details["job_id"] == "fresh" {
					named[e.Details["execution_id"].(string)] = true
				}
			}
			want := 1
			if tc.down {
				want = 0
			}
			if len(fresh) != want || len(named) != want {
				t.Fatalf("fresh's first run: %d execution.aborted, %d named by the audit; want %d: %+v", len(fresh), len(named), want, fresh)
			}
			for _, a := range fresh {
				if !named[a.ExecutionID] || !strings.Contains(a.Reason, "OLT disabled") || a.OLTID != "olt-l" || a.AbortedAt.IsZero() {
					t.Errorf("fresh's execution.aborted %+v; want the one the audit names (%v), reason OLT disabled", a, named)
				}
			}
		})
	}
}
