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

// A composite node (workflow wf: master wm, chain wc1, wc2) is dispatched
// and ended by a poller without running it, one end event per execution of
// the composite (as services/poller's abort and skip do). The composite's
// flight then ends at once and the OLT's next node (other, queued behind
// it) is dispatched without waiting for the stuck timeout. With the
// master's end alone the flight waited for the chained executions until
// the stuck check: the composite's dispatch + StuckGrace (5 minutes) for
// an abort, the disabled node's interval and timeouts being gone;
// dispatch + interval + timeouts + StuckGrace for a skip.
//
//   - aborted: its task is disabled before a poller starts it; the planner
//     cancels it (facho_cancel) and the poller aborts every execution;
//   - skipped: its NodeDue came stale (or found the OLT busy on every
//     delivery): every execution is skipped with the NodeDue's attempt and
//     the Msg-Id <execution>:<attempt>:skipped, so the chained skips are not
//     taken for an earlier dispatch's (Queues.Earlier).
func TestEndedCompositeFreesItsOLT(t *testing.T) {
	for _, tc := range []struct {
		name string
		// end has the poller end every execution of nd (after whatever
		// makes it do so), at now.
		end        func(t *testing.T, ctx context.Context, js jetstream.JetStream, nd streams.NodeDue, now time.Time)
		wantStatus string // wm's last status, "" not checked
	}{
		{name: "aborted", end: abortComposite},
		{name: "skipped", end: skipComposite, wantStatus: "SKIPPED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			publishComposite(t, env.JS)

			var mu sync.Mutex
			var composite streams.NodeDue
			var otherAt time.Time
			onNodeDue(t, ctx, env.JS, func(nd streams.NodeDue) {
				mu.Lock()
				defer mu.Unlock()
				switch nd.JobID {
				case "wm":
					composite = nd // held: the poller ends it below
				case "other":
					otherAt = time.Now()
					execEvent(t, ctx, env.JS, nd, streams.PhaseSucceeded, streams.MsgID(nd.ExecutionID, 1, streams.PhaseSucceeded), succeededOf(nd, 1))
				default:
					t.Errorf("%s dispatched on its own though it is chained in wf", nd.JobID)
				}
			})
			reg := prometheus.NewRegistry()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := planner.Run(ctx, planner.Config{Tick: 20 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, FirstRunSpread: -1,
					DisableAfterFailures: -1}, planner.Deps{JS: env.JS, Log: zerolog.Nop(), Registry: reg})
				if err != nil {
					t.Errorf("planner.Run: %v", err)
				}
			}()
			defer func() { cancel(); wg.Wait() }()

			waitEntry(t, env.JS, "wm.olt-w", "the composite in flight", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.State == streams.NodeInFlight })
			waitEntry(t, env.JS, "other.olt-w", "other queued behind it", func(ns streams.NodeSchedule, ok bool) bool { return ok && ns.State == streams.NodeWaiting })
			mu.Lock()
			nd := composite
			mu.Unlock()
			if len(nd.Chain) != 2 || nd.Attempt < 1 {
				t.Fatalf("composite NodeDue %+v; want wm with wc1, wc2 chained, and an attempt", nd)
			}

			endedAt := time.Now()
			tc.end(t, ctx, env.JS, nd, endedAt)

			ns := waitEntry(t, env.JS, "other.olt-w", "other ran after the ended composite", func(ns streams.NodeSchedule, ok bool) bool {
				return ok && ns.LastStatus == "SUCCESS"
			})
			mu.Lock()
			waited := otherAt.Sub(endedAt)
			mu.Unlock()
			if waited > 5*time.Second {
				t.Errorf("other dispatched %s after the composite's end events; want at once", waited)
			}
			if ns.State == streams.NodeInFlight {
				t.Errorf("other's entry %+v", ns)
			}
			if tc.wantStatus != "" {
				if wm, _ := scheduleEntry(t, env.JS, "wm.olt-w"); wm.State == streams.NodeInFlight || wm.LastStatus != tc.wantStatus {
					t.Errorf("wm's entry %+v; want ended %s", wm, tc.wantStatus)
				}
			}
			// The end events ended the flight, not the stuck check.
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "facho_planner_flights_stuck_total" && mf.GetMetric()[0].GetCounter().GetValue() != 0 {
					t.Errorf("%v flights freed as stuck", mf.GetMetric()[0].GetCounter().GetValue())
				}
			}
		})
	}
}

// publishComposite configures OLT olt-w with workflow wf (master wm, chain
// wc1, wc2) and a lower-priority node other, all hourly.
func publishComposite(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	publish(t, js, streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"})
	publish(t, js, streams.SubjectOID("hw-serial"), streams.OIDUpserted{ID: "hw-serial", BrandID: "huawei", Name: "serial",
		OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}})
	for _, j := range []struct {
		id       string
		priority int
	}{{"wm", 90}, {"wc1", 40}, {"wc2", 40}, {"other", 10}} {
		publish(t, js, streams.SubjectJob(j.id), streams.JobUpserted{ID: j.id, Name: j.id, BrandID: "huawei", Kind: streams.KindGet,
			OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, TimeoutSeconds: 60, Priority: j.priority, Enabled: true})
		publish(t, js, streams.SubjectAssignment(j.id, "olt-w"), streams.JobOLTAssigned{JobID: j.id, OLTID: "olt-w", Enabled: true})
	}
	publish(t, js, streams.SubjectWorkflow("wf"), streams.WorkflowUpserted{ID: "wf", Name: "wf", OLTID: "olt-w", MasterJobID: "wm",
		ChainJobIDs: []string{"wc1", "wc2"}, Enabled: true})
	publish(t, js, streams.SubjectOLT("olt-w"), streams.OLTUpserted{ID: "olt-w", Name: "olt-w", BrandID: "huawei", IP: "127.0.0.1", Port: 1161,
		CommunityEnc: "v1:sealed-placeholder", Enabled: true})
}

// abortComposite disables wm, waits for the planner's cancellation of the
// composite, and aborts every execution of it as the poller does.
func abortComposite(t *testing.T, ctx context.Context, js jetstream.JetStream, nd streams.NodeDue, at time.Time) {
	t.Helper()
	publish(t, js, streams.SubjectAssignment("wm", "olt-w"), streams.JobOLTAssigned{JobID: "wm", OLTID: "olt-w", Enabled: false})
	kv, err := js.KeyValue(ctx, streams.BucketCancel)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	// Stops when the planner's cancellation is there, or at the deadline.
	for {
		if _, err := kv.Get(ctx, streams.CancelKey(nd.ExecutionID)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no cancellation of the composite in facho_cancel")
		}
		time.Sleep(50 * time.Millisecond)
	}
	now := at.UTC().Truncate(time.Millisecond)
	ids := map[string]string{nd.ExecutionID: nd.JobID}
	for _, c := range nd.Chain {
		ids[c.ExecutionID] = c.JobID
	}
	for id, job := range ids {
		execEvent(t, ctx, js, nd, streams.PhaseAborted, streams.MsgID(id, streams.PhaseAborted), streams.ExecutionAborted{
			ExecutionID: id, JobID: job, OLTID: nd.OLTID, PollerID: "p", Reason: "task disabled", AbortedAt: now})
	}
}

// skipComposite skips every execution of nd as the poller skips a stale
// composite, each with the NodeDue's attempt.
func skipComposite(t *testing.T, ctx context.Context, js jetstream.JetStream, nd streams.NodeDue, at time.Time) {
	t.Helper()
	now := at.UTC().Truncate(time.Millisecond)
	ids := map[string]string{nd.ExecutionID: nd.JobID}
	for _, c := range nd.Chain {
		ids[c.ExecutionID] = c.JobID
	}
	for id, job := range ids {
		execEvent(t, ctx, js, nd, streams.PhaseSkipped, streams.MsgID(id, nd.Attempt, streams.PhaseSkipped), streams.ExecutionSkipped{
			ExecutionID: id, JobID: job, OLTID: nd.OLTID, PollerID: "p", Attempt: nd.Attempt, ScheduledAt: nd.ScheduledAt, SkippedAt: now,
			Reason: "stale: scheduled at " + nd.ScheduledAt.Format(time.RFC3339Nano)})
	}
}
