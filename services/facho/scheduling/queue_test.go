package scheduling_test

import (
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// Per-OLT queue, end to end: OLTs with a discovery (priority 90) and a
// status walk (priority 40) due together, a planner and two pollers over
// real SNMP. One operation per OLT at a time, the discovery first, the
// waiting node dispatched on the finish (never through the poller's busy
// NAK loop), every NodeDue ended, next run = end + interval.
func TestPerOLTQueueFinishDrivenDispatch(t *testing.T) {
	const nOLTs = 12
	e := newEnv(t, nOLTs, oltsim.Faults{Latency: 20 * time.Millisecond})
	const discInterval, statusInterval = 3, 2
	e.job(streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial", "hw-status"}, IntervalSeconds: discInterval, Priority: 90, Enabled: true})
	e.job(streams.JobUpserted{ID: "status", Name: "status", BrandID: "huawei", Kind: streams.KindBulkWalk,
		OIDIDs: []string{"hw-status"}, IntervalSeconds: statusInterval, Priority: 40, Enabled: true})
	e.brand()

	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	stopP1 := e.startPoller("p1", regs[0])
	stopP2 := e.startPoller("p2", regs[1])
	// No spread: both nodes of an OLT are due at the same instant, so
	// one of them has to wait for the other.
	stopPlanner := e.startPlanner(planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 500 * time.Millisecond, FirstRunSpread: -1})

	waitFor(t, 90*time.Second, "3 ended runs of every node", func() bool {
		nodes := byNode(e.runs())
		if len(nodes) < 2*nOLTs {
			return false
		}
		for _, rs := range nodes {
			ended := 0
			for _, r := range rs {
				if r.ended() {
					ended++
				}
			}
			if ended < 3 {
				return false
			}
		}
		return true
	})
	// The active planner keeps its queue report for the API.
	kv, err := e.JS.KeyValue(e.ctx, streams.BucketPlannerLeader)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(e.ctx, streams.QueueKey)
	if err != nil {
		t.Fatalf("queue report: %v", err)
	}
	var rep streams.QueueReport
	if err := json.Unmarshal(entry.Value(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Planned != 2*nOLTs || rep.Planner == "" || rep.NextNodes == nil || len(rep.Delayed) != 6 || rep.GeneratedAt.IsZero() {
		t.Fatalf("queue report %+v", rep)
	}
	stopPlanner()
	// Let the pollers end what the planner dispatched last.
	waitFor(t, 30*time.Second, "every NodeDue ended", func() bool {
		for _, r := range e.runs() {
			if r.due.ExecutionID != "" && !r.ended() {
				return false
			}
		}
		return true
	})
	stopP1()
	stopP2()

	runs := e.runs()
	var finishToDispatch, dueToDispatch []time.Duration
	for _, olt := range e.olts {
		if mc := e.fleet.OLT(olt).Record().MaxConcurrent; mc > 1 {
			t.Errorf("%s saw %d concurrent SNMP requests: two operations at once", olt, mc)
		}
		// Windows of the runs of this OLT never overlap.
		var ws []*run
		for _, r := range runs {
			if r.due.OLTID == olt && r.succeeded != nil {
				ws = append(ws, r)
			}
		}
		for i, a := range ws {
			for _, b := range ws[i+1:] {
				as, ae := a.window()
				bs, be := b.window()
				if as.Before(be) && bs.Before(ae) {
					t.Errorf("%s: %s [%s, %s] overlaps %s [%s, %s]", olt, a.due.NodeID, as, ae, b.due.NodeID, bs, be)
				}
			}
		}
	}
	for node, rs := range byNode(runs) {
		for i, r := range rs {
			if r.succeeded == nil {
				t.Errorf("%s run %d did not succeed: %+v", node, i, r)
				continue
			}
			if len(r.started) != 1 {
				t.Errorf("%s run %d started %d times", node, i, len(r.started))
			}
			if r.due.DispatchedAt.Before(r.due.ScheduledAt) {
				t.Errorf("%s run %d dispatched before it was due", node, i)
			}
			dueToDispatch = append(dueToDispatch, r.due.DispatchedAt.Sub(r.due.ScheduledAt))
			if i > 0 {
				prev := rs[i-1]
				want := prev.succeeded.FinishedAt.Add(time.Duration(r.due.IntervalSeconds) * time.Second).Truncate(time.Millisecond)
				if !r.due.ScheduledAt.Equal(want) {
					t.Errorf("%s run %d scheduled at %s, want the previous end + interval %s", node, i, r.due.ScheduledAt, want)
				}
			}
		}
	}
	// A node that waited for its OLT was dispatched after the other
	// node's terminal event, never before.
	waited := 0
	for _, olt := range e.olts {
		var ws []*run
		for _, r := range runs {
			if r.due.OLTID == olt && r.succeeded != nil {
				ws = append(ws, r)
			}
		}
		sort.Slice(ws, func(i, j int) bool { return ws[i].due.DispatchedAt.Before(ws[j].due.DispatchedAt) })
		for i := 1; i < len(ws); i++ {
			prev, r := ws[i-1], ws[i]
			// r became due while prev ran: it waited for the OLT.
			if !r.due.ScheduledAt.Before(prev.succeeded.FinishedAt) {
				continue
			}
			waited++
			if r.due.DispatchedAt.Before(prev.succeeded.FinishedAt) {
				t.Errorf("%s dispatched at %s while %s ran until %s", r.due.NodeID, r.due.DispatchedAt, prev.due.NodeID, prev.succeeded.FinishedAt)
			}
			finishToDispatch = append(finishToDispatch, r.due.DispatchedAt.Sub(prev.endPublished))
		}
	}
	if waited < nOLTs {
		t.Fatalf("%d nodes waited for their OLT, want at least one per OLT (the first runs)", waited)
	}
	// Both nodes of every OLT were first due at once (the brand made
	// them plannable together): the discovery (priority 90) ran first.
	for _, olt := range e.olts {
		disc, status := byNode(runs)["disc."+olt], byNode(runs)["status."+olt]
		if !disc[0].due.ScheduledAt.Equal(status[0].due.ScheduledAt) {
			t.Errorf("%s: first runs due at %s and %s, want together", olt, disc[0].due.ScheduledAt, status[0].due.ScheduledAt)
		}
		if !disc[0].due.DispatchedAt.Before(status[0].due.DispatchedAt) {
			t.Errorf("%s: the status walk (40) ran before the discovery (90) due at the same time", olt)
		}
	}
	busy := counter(t, regs[0], "facho_poller_lease_busy_total") + counter(t, regs[1], "facho_poller_lease_busy_total")
	if busy != 0 {
		t.Errorf("pollers found a busy lease %v times: the planner dispatched onto a busy OLT", busy)
	}
	t.Logf("%d runs, %d waited for their OLT; finish -> next dispatch p50 %s p99 %s; due -> dispatch p50 %s p99 %s",
		len(runs), waited, percentile(finishToDispatch, 0.5), percentile(finishToDispatch, 0.99),
		percentile(dueToDispatch, 0.5), percentile(dueToDispatch, 0.99))
}
