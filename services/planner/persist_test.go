package planner_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/streams"
)

func scheduleEntry(t *testing.T, js jetstream.JetStream, node string) (streams.NodeSchedule, bool) {
	t.Helper()
	kv, err := js.KeyValue(context.Background(), streams.BucketSchedule)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), node)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return streams.NodeSchedule{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var ns streams.NodeSchedule
	if err := json.Unmarshal(e.Value(), &ns); err != nil {
		t.Fatal(err)
	}
	return ns, true
}

func waitEntry(t *testing.T, js jetstream.JetStream, node, what string, cond func(streams.NodeSchedule, bool) bool) streams.NodeSchedule {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ns, ok := scheduleEntry(t, js, node)
		if cond(ns, ok) {
			return ns
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedule entry of %s: timed out waiting for %s; last %+v (present %v)", node, what, ns, ok)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The persisted schedule follows the node: in flight, then its last run
// and the next one at end + interval; disabled with the reason; deleted
// when unassigned.
func TestScheduleEntryFollowsTheNode(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	wait := startPlanner(t, ctx, env.JS)
	defer func() { cancel(); wait() }()
	fin := startFinisher(t, ctx, env.JS, 500*time.Millisecond)
	seedConfig(t, env.JS, "v1:sealed-placeholder")
	const node = "get-status.olt-a"

	fl := waitEntry(t, env.JS, node, "in flight", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.State == streams.NodeInFlight })
	if fl.InFlight == nil || fl.InFlight.ExecutionID == "" || !fl.Enabled || fl.Kind != streams.KindGet || fl.JobName != "GET status" ||
		fl.Priority != 40 || fl.IntervalSeconds != 1 || fl.NodeID != node || fl.Chain == nil {
		t.Fatalf("in-flight entry %+v", fl)
	}
	done := waitEntry(t, env.JS, node, "the first run ended", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.LastRunAt != nil })
	end := fin.ended(fl.InFlight.ExecutionID)
	if done.LastStatus != "SUCCESS" || done.LastExecutionID != fl.InFlight.ExecutionID || !done.LastRunAt.Equal(end) {
		t.Fatalf("entry after the run %+v, want SUCCESS of %s ended %s", done, fl.InFlight.ExecutionID, end)
	}
	if !done.NextRunAt.Equal(end.Add(time.Second)) {
		t.Fatalf("next_run_at %s, want the end %s + 1s", done.NextRunAt, end)
	}

	publish(t, env.JS, streams.SubjectJob("get-status"), job(false, 1))
	dis := waitEntry(t, env.JS, node, "disabled", func(ns streams.NodeSchedule, ok bool) bool { return ok && !ns.Enabled })
	if dis.State != streams.NodeDisabled || dis.DisabledReason != "job disabled" || dis.NextRunAt != nil {
		t.Fatalf("disabled entry %+v", dis)
	}
	publish(t, env.JS, streams.SubjectAssignment("get-status", "olt-a"), streams.JobOLTUnassigned{JobID: "get-status", OLTID: "olt-a"})
	waitEntry(t, env.JS, node, "deleted", func(_ streams.NodeSchedule, ok bool) bool { return !ok })
}

// A planner restarted while a run is in flight resumes from the persisted
// schedule: it does not dispatch the node again while the run goes on, and
// plans the next run from the end of that run (a planner that re-planned
// from the configuration alone would dispatch on its own grid).
func TestRestartedPlannerResumesTheFlight(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fin := startFinisher(t, ctx, env.JS, 1500*time.Millisecond)
	seedConfig(t, env.JS, "v1:sealed-placeholder")

	ctxA, cancelA := context.WithCancel(ctx)
	waitA := startPlanner(t, ctxA, env.JS)
	fl := waitEntry(t, env.JS, "get-status.olt-a", "in flight", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.State == streams.NodeInFlight })
	cancelA()
	waitA()
	if !fin.ended(fl.InFlight.ExecutionID).IsZero() {
		t.Fatal("the run ended before the planner stopped: the test proves nothing")
	}

	waitB := startPlanner(t, ctx, env.JS)
	defer func() { cancel(); waitB() }()
	dues := collect(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*"), func(e []streams.Envelope) bool { return len(e) >= 3 })
	var prev streams.NodeDue
	for i, d := range dues {
		var nd streams.NodeDue
		if err := streams.DecodeData(d, &nd); err != nil {
			t.Fatal(err)
		}
		if i == 0 && nd.ExecutionID != fl.InFlight.ExecutionID {
			t.Fatalf("first NodeDue %s, want the in-flight %s", nd.ExecutionID, fl.InFlight.ExecutionID)
		}
		if i > 0 {
			end := fin.ended(prev.ExecutionID)
			if end.IsZero() || nd.DispatchedAt.Before(end) {
				t.Fatalf("run %d dispatched at %s before run %d ended (%s)", i, nd.DispatchedAt, i-1, end)
			}
			if !nd.ScheduledAt.Equal(end.Add(time.Second)) {
				t.Fatalf("run %d scheduled at %s, want the previous end %s + 1s", i, nd.ScheduledAt, end)
			}
		}
		prev = nd
	}
}

// The count of consecutive failures survives a new planner term: two
// failures, a restart, one more failure disable the OLT.
func TestFailureCountSurvivesARestart(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seedConfig(t, env.JS, "v1:sealed-placeholder")
	noRetry := job(true, 1)
	noRetry.MaxRetries = -1 // none (0 takes the class default)
	publish(t, env.JS, streams.SubjectJob("get-status"), noRetry)
	startFinisherOutcome(t, ctx, env.JS, 0, true)

	ctxA, cancelA := context.WithCancel(ctx)
	waitA := startPlanner(t, ctxA, env.JS)
	waitEntry(t, env.JS, streams.FailuresKeyPrefix+"olt-a", "2 failures counted", func(ns streams.NodeSchedule, ok bool) bool {
		if !ok {
			return false
		}
		e, _ := scheduleRaw(t, env.JS, streams.FailuresKeyPrefix+"olt-a")
		return e.Count == 2
	})
	cancelA()
	waitA()
	disabledBefore := len(collectNoWait(t, env.JS, streams.SubjectOLTDisabled("olt-a")))
	if disabledBefore != 0 {
		t.Fatal("disabled before the restart: the test proves nothing")
	}
	waitB := startPlanner(t, ctx, env.JS)
	defer func() { cancel(); waitB() }()
	dis := collect(t, env.JS, streams.StreamConfig, streams.SubjectOLTDisabled("olt-a"), func(e []streams.Envelope) bool { return len(e) >= 1 })
	var ev streams.OLTAutoDisabled
	if err := streams.DecodeData(dis[0], &ev); err != nil || ev.Failures != 3 {
		t.Fatalf("auto-disable %+v (%v), want after 3 failures", ev, err)
	}
	// 3 failed executions in all: the new term went on counting from 2
	// (counting from 0 it would have waited for 5).
	collect(t, env.JS, streams.StreamExec, streams.SubjectExec("olt-a", streams.PhaseFailed), func(e []streams.Envelope) bool { return len(e) >= 3 })
	time.Sleep(1500 * time.Millisecond) // a run dispatched past the disable would fail within its 1 s interval
	exec, err := env.JS.Stream(context.Background(), streams.StreamExec)
	if err != nil {
		t.Fatal(err)
	}
	subject := streams.SubjectExec("olt-a", streams.PhaseFailed)
	info, err := exec.Info(context.Background(), jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects[subject]; n != 3 {
		t.Fatalf("%d failed executions, want 3", n)
	}
}

func scheduleRaw(t *testing.T, js jetstream.JetStream, key string) (streams.OLTFailures, bool) {
	t.Helper()
	kv, err := js.KeyValue(context.Background(), streams.BucketSchedule)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), key)
	if err != nil {
		return streams.OLTFailures{}, false
	}
	var f streams.OLTFailures
	_ = json.Unmarshal(e.Value(), &f)
	return f, true
}

func collectNoWait(t *testing.T, js jetstream.JetStream, subject string) []*jetstream.RawStreamMsg {
	t.Helper()
	s, err := js.Stream(context.Background(), streams.StreamConfig)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(context.Background(), subject)
	if err != nil {
		return nil
	}
	return []*jetstream.RawStreamMsg{m}
}
