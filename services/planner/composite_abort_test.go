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
// and its task disabled before a poller starts it: the planner cancels it
// (facho_cancel) and the poller aborts it, one execution.aborted per
// execution of the composite (as services/poller's abort does). The
// composite's flight then ends at once and the OLT's next node (other,
// queued behind it) is dispatched without waiting for the stuck timeout
// (with the master's abort alone: the composite's dispatch + StuckGrace,
// 5 minutes, the disabled node's interval and timeouts being gone).
func TestAbortedCompositeFreesItsOLT(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	publish(t, env.JS, streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"})
	publish(t, env.JS, streams.SubjectOID("hw-serial"), streams.OIDUpserted{ID: "hw-serial", BrandID: "huawei", Name: "serial",
		OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}})
	for _, j := range []struct {
		id       string
		priority int
	}{{"wm", 90}, {"wc1", 40}, {"wc2", 40}, {"other", 10}} {
		publish(t, env.JS, streams.SubjectJob(j.id), streams.JobUpserted{ID: j.id, Name: j.id, BrandID: "huawei", Kind: streams.KindGet,
			OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, TimeoutSeconds: 60, Priority: j.priority, Enabled: true})
		publish(t, env.JS, streams.SubjectAssignment(j.id, "olt-w"), streams.JobOLTAssigned{JobID: j.id, OLTID: "olt-w", Enabled: true})
	}
	publish(t, env.JS, streams.SubjectWorkflow("wf"), streams.WorkflowUpserted{ID: "wf", Name: "wf", OLTID: "olt-w", MasterJobID: "wm",
		ChainJobIDs: []string{"wc1", "wc2"}, Enabled: true})
	publish(t, env.JS, streams.SubjectOLT("olt-w"), streams.OLTUpserted{ID: "olt-w", Name: "olt-w", BrandID: "huawei", IP: "127.0.0.1", Port: 1161,
		CommunityEnc: "v1:sealed-placeholder", Enabled: true})

	var mu sync.Mutex
	var composite streams.NodeDue
	var otherAt time.Time
	onNodeDue(t, ctx, env.JS, func(nd streams.NodeDue) {
		mu.Lock()
		defer mu.Unlock()
		switch nd.JobID {
		case "wm":
			composite = nd // held: the poller has not started it
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
	if len(nd.Chain) != 2 {
		t.Fatalf("composite NodeDue %+v; want wm with wc1, wc2 chained", nd)
	}

	publish(t, env.JS, streams.SubjectAssignment("wm", "olt-w"), streams.JobOLTAssigned{JobID: "wm", OLTID: "olt-w", Enabled: false})
	kv, err := env.JS.KeyValue(ctx, streams.BucketCancel)
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

	// The poller's abort of a cancelled composite: every execution ends.
	abortedAt := time.Now()
	now := abortedAt.UTC().Truncate(time.Millisecond)
	execEvent(t, ctx, env.JS, nd, streams.PhaseAborted, streams.MsgID(nd.ExecutionID, streams.PhaseAborted), streams.ExecutionAborted{
		ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID, PollerID: "p", Reason: "task disabled", AbortedAt: now})
	for _, c := range nd.Chain {
		execEvent(t, ctx, env.JS, nd, streams.PhaseAborted, streams.MsgID(c.ExecutionID, streams.PhaseAborted), streams.ExecutionAborted{
			ExecutionID: c.ExecutionID, JobID: c.JobID, OLTID: nd.OLTID, PollerID: "p", Reason: "task disabled", AbortedAt: now})
	}

	ns := waitEntry(t, env.JS, "other.olt-w", "other ran after the aborted composite", func(ns streams.NodeSchedule, ok bool) bool {
		return ok && ns.LastStatus == "SUCCESS"
	})
	mu.Lock()
	waited := otherAt.Sub(abortedAt)
	mu.Unlock()
	if waited > 5*time.Second {
		t.Errorf("other dispatched %s after the composite's aborts; want at once", waited)
	}
	if ns.State == streams.NodeInFlight {
		t.Errorf("other's entry %+v", ns)
	}
	// The aborts ended the flight, not the stuck check.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "facho_planner_flights_stuck_total" && mf.GetMetric()[0].GetCounter().GetValue() != 0 {
			t.Errorf("%v flights freed as stuck", mf.GetMetric()[0].GetCounter().GetValue())
		}
	}
}
