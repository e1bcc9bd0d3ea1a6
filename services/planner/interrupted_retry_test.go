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

// Issue 8, seed 001: an execution whose poller was killed (its lease
// expired: execution.interrupted without cancelled) and that no later
// attempt ended (its redelivered NodeDue came stale and was skipped) is
// retried like a failed one: in the retry class, as the next attempt of the
// same execution, within the node's max_retries, and not once more. An
// interruption the planner asked for (cancelled) is not retried; nor is a
// job with max_retries -1.
func TestInterruptedExecutionIsRetried(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	publish(t, env.JS, streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"})
	publish(t, env.JS, streams.SubjectOID("hw-serial"), streams.OIDUpserted{ID: "hw-serial", BrandID: "huawei", Name: "serial",
		OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}})
	jobs := []struct {
		id, kind   string
		maxRetries int
		cancelled  bool
		want       int // dispatches of the one execution
	}{
		{"disc", streams.KindDiscovery, 0, false, 4}, // the discovery class's 3 retries
		{"twice", streams.KindGet, 2, false, 3},
		{"none", streams.KindGet, -1, false, 1},
		{"cancelled", streams.KindGet, 2, true, 1},
	}
	cancelledJob := map[string]bool{}
	total := 0
	for _, j := range jobs {
		publish(t, env.JS, streams.SubjectJob(j.id), streams.JobUpserted{ID: j.id, Name: j.id, BrandID: "huawei", Kind: j.kind,
			OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, MaxRetries: j.maxRetries, Priority: 40, Enabled: true})
		publish(t, env.JS, streams.SubjectAssignment(j.id, "olt-"+j.id), streams.JobOLTAssigned{JobID: j.id, OLTID: "olt-" + j.id, Enabled: true})
		cancelledJob[j.id] = j.cancelled
		total += j.want
	}
	for _, olt := range []string{"olt-disc", "olt-twice", "olt-none", "olt-cancelled"} {
		publish(t, env.JS, streams.SubjectOLT(olt), streams.OLTUpserted{ID: olt, Name: olt, BrandID: "huawei", IP: "127.0.0.1", Port: 1161,
			CommunityEnc: "v1:sealed-placeholder", Enabled: true})
	}
	startKiller(t, ctx, env.JS, cancelledJob)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := planner.Run(ctx, planner.Config{Tick: 20 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, FirstRunSpread: -1,
			RetryBackoff: []time.Duration{100 * time.Millisecond}, DisableAfterFailures: -1},
			planner.Deps{JS: env.JS, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Errorf("planner.Run: %v", err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	collect(t, env.JS, streams.StreamSchedule, streams.SubjectsNodeDue, func(e []streams.Envelope) bool { return len(e) >= total })
	time.Sleep(1500 * time.Millisecond) // one retry too many would come within 100 ms
	all := collect(t, env.JS, streams.StreamSchedule, streams.SubjectsNodeDue, func(e []streams.Envelope) bool { return len(e) >= total })
	got := map[string][]streams.NodeDue{}
	for _, e := range all {
		var nd streams.NodeDue
		if err := streams.DecodeData(e, &nd); err != nil {
			t.Fatal(err)
		}
		got[nd.JobID] = append(got[nd.JobID], nd)
	}
	if len(all) != total {
		t.Errorf("%d NodeDue in all, want %d", len(all), total)
	}
	for _, j := range jobs {
		dues := got[j.id]
		if len(dues) != j.want {
			t.Errorf("job %s (max_retries %d, cancelled %v): dispatched %d times, want %d", j.id, j.maxRetries, j.cancelled, len(dues), j.want)
			continue
		}
		for i, nd := range dues {
			wantClass := planner.QueueClass(j.kind, 1, false)
			if i > 0 {
				wantClass = streams.ClassRetry
			}
			if nd.ExecutionID != dues[0].ExecutionID || nd.Attempt != i+1 || nd.Class != wantClass {
				t.Errorf("job %s dispatch %d: execution %s attempt %d class %s; want execution %s attempt %d class %s",
					j.id, i, nd.ExecutionID, nd.Attempt, nd.Class, dues[0].ExecutionID, i+1, wantClass)
			}
		}
	}
}

// startKiller plays a poller killed mid-run on every NodeDue: the survivor
// publishes execution.interrupted for the dead attempt (cancelled for the
// jobs of cancelled: the planner's own cancellation), then finds the
// redelivered NodeDue stale and publishes execution.skipped, as the poller
// does (stale.go: the interrupted event first).
func startKiller(t *testing.T, ctx context.Context, js jetstream.JetStream, cancelled map[string]bool) {
	t.Helper()
	onNodeDue(t, ctx, js, func(nd streams.NodeDue) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		pub := func(phase string, id string, ev streams.Event) {
			b, _ := streams.Encode("test", now, ev)
			if _, err := js.Publish(ctx, streams.SubjectExec(nd.OLTID, phase), b, jetstream.WithMsgID(id)); err != nil && ctx.Err() == nil {
				t.Errorf("publish %s: %v", phase, err)
			}
		}
		pub(streams.PhaseInterrupted, streams.MsgID(nd.ExecutionID, nd.Attempt, streams.PhaseInterrupted), streams.ExecutionInterrupted{
			ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID, PollerID: "doomed", Attempt: nd.Attempt,
			LeaseRevision: 7, StartedAt: now.Add(-time.Second), InterruptedAt: now, DetectedBy: "survivor",
			Reason: "lease expired", Cancelled: cancelled[nd.JobID]})
		if cancelled[nd.JobID] {
			return // final: no redelivery
		}
		pub(streams.PhaseSkipped, streams.MsgID(nd.ExecutionID, nd.Attempt, streams.PhaseSkipped), streams.ExecutionSkipped{
			ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID, PollerID: "survivor",
			ScheduledAt: nd.ScheduledAt, SkippedAt: now, Reason: "stale"})
	})
}

// An attempt lost with its poller (execution.interrupted after its lease
// expired: the lease is free) is retried at once, not after the job's
// retry delay (here an hour), while a failed attempt of another job still
// waits its delay: the interrupted execution's attempt 2 is dispatched in
// the retry class within seconds, the failed one's is not.
func TestInterruptedAttemptIsRetriedAtOnce(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	publish(t, env.JS, streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"})
	publish(t, env.JS, streams.SubjectOID("hw-serial"), streams.OIDUpserted{ID: "hw-serial", BrandID: "huawei", Name: "serial",
		OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}})
	for _, j := range []string{"lost", "failing"} {
		publish(t, env.JS, streams.SubjectJob(j), streams.JobUpserted{ID: j, Name: j, BrandID: "huawei", Kind: streams.KindGet,
			OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, MaxRetries: 2, RetryDelaySeconds: 3600, Priority: 40, Enabled: true})
		publish(t, env.JS, streams.SubjectAssignment(j, "olt-"+j), streams.JobOLTAssigned{JobID: j, OLTID: "olt-" + j, Enabled: true})
		publish(t, env.JS, streams.SubjectOLT("olt-"+j), streams.OLTUpserted{ID: "olt-" + j, Name: j, BrandID: "huawei", IP: "127.0.0.1", Port: 1161,
			CommunityEnc: "v1:sealed-placeholder", Enabled: true})
	}
	// olt-lost's poller dies on attempt 1 (interrupted, then its
	// redelivery skipped as stale); attempt 2 succeeds. olt-failing's
	// attempt 1 fails (retryable).
	onNodeDue(t, ctx, env.JS, func(nd streams.NodeDue) {
		switch {
		case nd.JobID == "failing":
			execEvent(t, ctx, env.JS, nd, streams.PhaseFailed, streams.MsgID(nd.ExecutionID, nd.Attempt, streams.PhaseFailed), failedOf(nd, nd.Attempt))
		case nd.Attempt == 1:
			// The survivor's view of the dead poller (startKiller).
			now := time.Now().UTC().Truncate(time.Millisecond)
			execEvent(t, ctx, env.JS, nd, streams.PhaseInterrupted, streams.MsgID(nd.ExecutionID, 1, streams.PhaseInterrupted), streams.ExecutionInterrupted{
				ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID, PollerID: "doomed", Attempt: 1, LeaseRevision: 7,
				StartedAt: now.Add(-time.Second), InterruptedAt: now, DetectedBy: "survivor", Reason: "lease expired"})
			execEvent(t, ctx, env.JS, nd, streams.PhaseSkipped, streams.MsgID(nd.ExecutionID, 1, streams.PhaseSkipped), streams.ExecutionSkipped{
				ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID, PollerID: "survivor", ScheduledAt: nd.ScheduledAt, SkippedAt: now, Reason: "stale"})
		default:
			execEvent(t, ctx, env.JS, nd, streams.PhaseSucceeded, streams.MsgID(nd.ExecutionID, nd.Attempt, streams.PhaseSucceeded), succeededOf(nd, nd.Attempt))
		}
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := planner.Run(ctx, planner.Config{Tick: 20 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, FirstRunSpread: -1, DisableAfterFailures: -1},
			planner.Deps{JS: env.JS, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Errorf("planner.Run: %v", err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	start := time.Now()
	waitEntry(t, env.JS, "lost.olt-lost", "the lost execution retried and run", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.LastStatus == "SUCCESS" })
	t.Logf("lost attempt retried and succeeded %s after the planner started (retry delay 1 h)", time.Since(start).Round(time.Millisecond))
	all := collect(t, env.JS, streams.StreamSchedule, streams.SubjectsNodeDue, func(e []streams.Envelope) bool { return len(e) >= 3 })
	time.Sleep(500 * time.Millisecond)
	all = collect(t, env.JS, streams.StreamSchedule, streams.SubjectsNodeDue, func(e []streams.Envelope) bool { return len(e) >= len(all) })
	var lost, failing []streams.NodeDue
	for _, e := range all {
		var nd streams.NodeDue
		if err := streams.DecodeData(e, &nd); err != nil {
			t.Fatal(err)
		}
		if nd.JobID == "lost" {
			lost = append(lost, nd)
		} else {
			failing = append(failing, nd)
		}
	}
	if len(lost) != 2 || lost[1].ExecutionID != lost[0].ExecutionID || lost[1].Attempt != 2 || lost[1].Class != streams.ClassRetry {
		t.Errorf("lost's dispatches %+v; want attempt 1, then attempt 2 of the same execution in the retry class", lost)
	}
	if len(failing) != 1 {
		t.Errorf("failing dispatched %d times; its retry waits its hour", len(failing))
	}
}
