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
// and a poller skips it without running it (its NodeDue came stale, or
// found the OLT busy on every delivery): one execution.skipped per
// execution of the composite, each with the NodeDue's attempt and the Msg-Id
// <execution>:<attempt>:skipped (as services/poller's skip does). The
// chained skips carry the dispatch's attempt, so they are not taken for an
// earlier dispatch's (Queues.Earlier): the composite's flight ends at once
// and the OLT's next node (other, queued behind it) is dispatched without
// waiting for the stuck timeout (with the master's skip alone: the
// composite's dispatch + interval + timeouts + StuckGrace).
func TestSkippedCompositeFreesItsOLT(t *testing.T) {
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
			composite = nd // held: the poller skips it below
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

	// The poller's skip of a stale composite: every execution ends, each
	// with the NodeDue's attempt.
	skippedAt := time.Now()
	now := skippedAt.UTC().Truncate(time.Millisecond)
	ids := map[string]string{nd.ExecutionID: nd.JobID}
	for _, c := range nd.Chain {
		ids[c.ExecutionID] = c.JobID
	}
	for id, job := range ids {
		execEvent(t, ctx, env.JS, nd, streams.PhaseSkipped, streams.MsgID(id, nd.Attempt, streams.PhaseSkipped), streams.ExecutionSkipped{
			ExecutionID: id, JobID: job, OLTID: nd.OLTID, PollerID: "p", Attempt: nd.Attempt, ScheduledAt: nd.ScheduledAt, SkippedAt: now,
			Reason: "stale: scheduled at " + nd.ScheduledAt.Format(time.RFC3339Nano)})
	}

	ns := waitEntry(t, env.JS, "other.olt-w", "other ran after the skipped composite", func(ns streams.NodeSchedule, ok bool) bool {
		return ok && ns.LastStatus == "SUCCESS"
	})
	mu.Lock()
	waited := otherAt.Sub(skippedAt)
	mu.Unlock()
	if waited > 5*time.Second {
		t.Errorf("other dispatched %s after the composite's skips; want at once", waited)
	}
	if ns.State == streams.NodeInFlight {
		t.Errorf("other's entry %+v", ns)
	}
	if wm, _ := scheduleEntry(t, env.JS, "wm.olt-w"); wm.State == streams.NodeInFlight || wm.LastStatus != "SKIPPED" {
		t.Errorf("wm's entry %+v; want ended SKIPPED", wm)
	}
	// The skips ended the flight, not the stuck check.
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
