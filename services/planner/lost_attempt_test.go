package planner_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// seedLostConfig publishes one get job (max_retries maxRetries, hourly) on
// one OLT, olt-l.
func seedLostConfig(t *testing.T, js jetstream.JetStream, maxRetries int) {
	t.Helper()
	publish(t, js, streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"})
	publish(t, js, streams.SubjectOID("hw-serial"), streams.OIDUpserted{ID: "hw-serial", BrandID: "huawei", Name: "serial",
		OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}})
	publish(t, js, streams.SubjectJob("get-l"), streams.JobUpserted{ID: "get-l", Name: "get-l", BrandID: "huawei", Kind: streams.KindGet,
		OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, MaxRetries: maxRetries, Priority: 40, Enabled: true})
	publish(t, js, streams.SubjectAssignment("get-l", "olt-l"), streams.JobOLTAssigned{JobID: "get-l", OLTID: "olt-l", Enabled: true})
	publish(t, js, streams.SubjectOLT("olt-l"), streams.OLTUpserted{ID: "olt-l", Name: "olt-l", BrandID: "huawei", IP: "127.0.0.1", Port: 1161,
		CommunityEnc: "v1:sealed-placeholder", Enabled: true})
}

// runLostPlanner runs a planner with a 100 ms retry backoff until ctx ends.
func runLostPlanner(t *testing.T, ctx context.Context, js jetstream.JetStream) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := planner.Run(ctx, planner.Config{Tick: 20 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, FirstRunSpread: -1,
			RetryBackoff: []time.Duration{100 * time.Millisecond}, DisableAfterFailures: -1},
			planner.Deps{JS: js, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Errorf("planner.Run: %v", err)
		}
	}()
	return wg.Wait
}

// execEvent publishes a lifecycle event of nd's execution with message id
// id.
func execEvent(t *testing.T, ctx context.Context, js jetstream.JetStream, nd streams.NodeDue, phase, id string, ev streams.Event) {
	t.Helper()
	b, err := streams.Encode("test", time.Now(), ev)
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := js.Publish(ctx, streams.SubjectExec(nd.OLTID, phase), b, jetstream.WithMsgID(id)); err != nil && ctx.Err() == nil {
		t.Errorf("publish %s: %v", phase, err)
	}
}

func lostEvent(nd streams.NodeDue, attempt int) streams.ExecutionInterrupted {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return streams.ExecutionInterrupted{ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID, PollerID: "doomed", Attempt: attempt,
		LeaseRevision: 7, StartedAt: now.Add(-time.Second), InterruptedAt: now, DetectedBy: "survivor", Reason: "lease expired"}
}

func skippedEvent(nd streams.NodeDue) streams.ExecutionSkipped {
	return streams.ExecutionSkipped{ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID, PollerID: "survivor",
		ScheduledAt: nd.ScheduledAt, SkippedAt: time.Now().UTC().Truncate(time.Millisecond), Reason: "stale"}
}

// nodeDues are the NodeDue of olt-l, waiting until there are at least n,
// and all of them the stream holds.
func nodeDues(t *testing.T, js jetstream.JetStream, n int) []streams.NodeDue {
	t.Helper()
	st, err := js.Stream(context.Background(), streams.StreamSchedule)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background(), jetstream.WithSubjectFilter(streams.SubjectNodeDueClass("olt-l", "*")))
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, c := range info.State.Subjects {
		held += int(c)
	}
	n = max(n, held)
	var out []streams.NodeDue
	for _, e := range collect(t, js, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-l", "*"), func(e []streams.Envelope) bool { return len(e) >= n }) {
		var nd streams.NodeDue
		if err := streams.DecodeData(e, &nd); err != nil {
			t.Fatal(err)
		}
		out = append(out, nd)
	}
	return out
}

// Attempt 1 of an execution is lost with its poller and its redelivery is
// skipped as stale: the planner retries it (attempt 2). An event saying
// attempt 1 was lost that arrives again while the retry is in flight (a
// detector that published it late, after the stream's duplicate window)
// is not the retry's: when the retry's NodeDue is in turn skipped as
// stale, the execution ends SKIPPED, and is not marked INTERRUPTED and
// retried a third time.
func TestLateLostAttemptDoesNotInterruptTheRetry(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seedLostConfig(t, env.JS, 2)
	onNodeDue(t, ctx, env.JS, func(nd streams.NodeDue) {
		switch nd.Attempt {
		case 1:
			execEvent(t, ctx, env.JS, nd, streams.PhaseInterrupted, streams.MsgID(nd.ExecutionID, 1, streams.PhaseInterrupted), lostEvent(nd, 1))
		case 2:
			// Attempt 1's loss again, under another message id (the
			// stream's duplicate window has passed).
			execEvent(t, ctx, env.JS, nd, streams.PhaseInterrupted, streams.MsgID(nd.ExecutionID, 1, streams.PhaseInterrupted, "late"), lostEvent(nd, 1))
		}
		execEvent(t, ctx, env.JS, nd, streams.PhaseSkipped, streams.MsgID(nd.ExecutionID, nd.Attempt, streams.PhaseSkipped), skippedEvent(nd))
	})
	wait := runLostPlanner(t, ctx, env.JS)
	defer func() { cancel(); wait() }()

	dues := nodeDues(t, env.JS, 2)
	ns := waitEntry(t, env.JS, "get-l.olt-l", "the retry ended", func(ns streams.NodeSchedule, ok bool) bool {
		return ok && ns.LastStatus != "" && ns.State != streams.NodeInFlight && ns.State != streams.NodeRetry
	})
	time.Sleep(time.Second) // a third dispatch would come within 100 ms
	dues = nodeDues(t, env.JS, len(dues))
	if len(dues) != 2 {
		t.Errorf("%d dispatches of the execution, want 2 (the first and one retry): the late loss of attempt 1 marked the retry interrupted", len(dues))
	}
	for i, nd := range dues {
		if nd.ExecutionID != dues[0].ExecutionID || nd.Attempt != i+1 {
			t.Errorf("dispatch %d: execution %s attempt %d", i, nd.ExecutionID, nd.Attempt)
		}
	}
	if ns.LastStatus != "SKIPPED" {
		t.Errorf("last status %s, want SKIPPED (the retry's own end)", ns.LastStatus)
	}
}

// An attempt lost with its poller is remembered across planner terms: the
// first planner notes the loss (persisted with the flight's schedule
// entry) and stops; the loss event is then gone from FACHO_EXEC (purged
// here, as its retention or a recreated stream would, so the next term
// cannot read it again); the redelivered NodeDue is skipped as stale under
// the next planner, which still ends the execution INTERRUPTED and
// retries it.
func TestLostAttemptSurvivesARestart(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seedLostConfig(t, env.JS, 1)
	var first atomic.Pointer[streams.NodeDue]
	onNodeDue(t, ctx, env.JS, func(nd streams.NodeDue) {
		if nd.Attempt == 1 {
			first.Store(&nd)
			execEvent(t, ctx, env.JS, nd, streams.PhaseInterrupted, streams.MsgID(nd.ExecutionID, 1, streams.PhaseInterrupted), lostEvent(nd, 1))
			return
		}
		execEvent(t, ctx, env.JS, nd, streams.PhaseSucceeded, streams.MsgID(nd.ExecutionID, nd.Attempt, streams.PhaseSucceeded), streams.ExecutionSucceeded{
			ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID, PollerID: "p", Attempt: nd.Attempt, LeaseRevision: 9,
			StartedAt: time.Now().UTC(), FinishedAt: time.Now().UTC()})
	})

	ctxA, cancelA := context.WithCancel(ctx)
	waitA := runLostPlanner(t, ctxA, env.JS)
	waitEntry(t, env.JS, "get-l.olt-l", "in flight", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.State == streams.NodeInFlight })
	for deadline := time.Now().Add(3 * time.Second); first.Load() == nil && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	nd := first.Load()
	if nd == nil {
		t.Fatal("no first dispatch")
	}
	// Time for the first planner to read the loss and write its entry.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ns, ok := scheduleEntry(t, env.JS, "get-l.olt-l"); ok && ns.InFlight != nil && ns.InFlight.LostAt != nil {
			if ns.InFlight.LostAttempt != 1 || ns.InFlight.Attempt != 1 {
				t.Errorf("persisted flight: attempt %d, lost attempt %d; want 1 and 1", ns.InFlight.Attempt, ns.InFlight.LostAttempt)
			}
			break
		}
	}
	cancelA()
	waitA()
	st, err := env.JS.Stream(ctx, streams.StreamExec)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(streams.SubjectExec("olt-l", streams.PhaseInterrupted))); err != nil {
		t.Fatal(err)
	}

	waitB := runLostPlanner(t, ctx, env.JS)
	defer func() { cancel(); waitB() }()
	// The redelivered NodeDue of attempt 1's execution came stale.
	execEvent(t, ctx, env.JS, *nd, streams.PhaseSkipped, streams.MsgID(nd.ExecutionID, "redelivery", streams.PhaseSkipped), skippedEvent(*nd))

	deadline := time.Now().Add(5 * time.Second)
	for {
		ns, _ := scheduleEntry(t, env.JS, "get-l.olt-l")
		if ns.LastStatus == "SUCCESS" {
			break
		}
		if ns.LastStatus == "SKIPPED" || time.Now().After(deadline) {
			t.Fatalf("after the restart the execution ended %q (state %s), want it retried after the lost attempt and then SUCCESS", ns.LastStatus, ns.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	dues := nodeDues(t, env.JS, 2)
	if len(dues) != 2 || dues[1].ExecutionID != nd.ExecutionID || dues[1].Attempt != 2 || dues[1].Class != streams.ClassRetry {
		t.Errorf("dispatches %+v, want the first and its retry (attempt 2, class retry)", dues)
	}
}
