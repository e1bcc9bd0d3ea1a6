package scheduling_test

import (
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/services/poller"
	"github.com/facho-olt/facho/streams"
)

// Queue classes isolate end to end: a flood of slow discoveries (300 ms
// per PDU) on more OLTs than the discovery class has slots, while polls
// (bulkwalks, class polling) run every second on other OLTs, over real
// SNMP, one poller process (discovery 2 slots, polling 4), the planner
// dispatching against the slots the poller publishes. The planner never
// dispatches more discoveries than there are slots (so none waits for a
// slot in the poller and none is SKIPPED as stale), the polls run, and
// the queue report shows the discovery backlog while it lasts. The poll
// lateness p99 is printed against an unsaturated run of the same
// workload (no latency) measured in the same test.
func TestClassesIsolateEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time flood of slow discoveries")
	}
	base := classesRun(t, 0)
	flood := classesRun(t, 300*time.Millisecond)
	if base.maxDiscBacklog > 0 {
		t.Logf("unsaturated run had a discovery backlog of %d at its peak", base.maxDiscBacklog)
	}
	ratio := 0.0
	if base.pollP99 > 0 {
		ratio = float64(flood.pollP99) / float64(base.pollP99)
	}
	t.Logf("poll lateness (started - scheduled) p50/p99: unsaturated %s/%s (%d polls), flooded %s/%s (%d polls); p99 ratio flooded/unsaturated %.2f",
		base.pollP50, base.pollP99, base.polls, flood.pollP50, flood.pollP99, flood.polls, ratio)
	t.Logf("flooded: %d discoveries run, at most %d dispatched at once (2 slots); discovery backlog peak %d (waiting in the planner %d), overload (a node late by over 5 s) seen %v",
		flood.discs, flood.maxDiscConcurrent, flood.maxDiscBacklog, flood.maxDiscWaiting, flood.sawOverload)
	if flood.maxDiscWaiting == 0 {
		t.Fatal("the flood never made a discovery wait in the planner: the test did not saturate the class")
	}
	if !flood.sawSaturated {
		t.Error("the queue report never said the discovery class was saturated during the flood")
	}
}

type classesResult struct {
	polls, discs                   int
	pollP50, pollP99               time.Duration
	maxDiscConcurrent              int
	maxDiscBacklog, maxDiscWaiting int
	sawOverload, sawSaturated      bool
}

const (
	classesFlood   = 8 // OLTs with slow discoveries
	classesHealthy = 4 // OLTs with a discovery and a poll every second
)

func classesRun(t *testing.T, latency time.Duration) classesResult {
	t.Helper()
	e := newEnv(t, classesFlood+classesHealthy, oltsim.Faults{})
	flood, healthy := e.olts[:classesFlood], e.olts[classesFlood:]
	for _, o := range flood {
		e.fleet.OLT(o).SetFaults(oltsim.Faults{Latency: latency})
	}
	disc := streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial", "hw-status"}, IntervalSeconds: 2, Priority: 90, Enabled: true}
	poll := streams.JobUpserted{ID: "poll", Name: "status", BrandID: "huawei", Kind: streams.KindBulkWalk,
		OIDIDs: []string{"hw-status"}, IntervalSeconds: 1, Priority: 40, Enabled: true}
	e.publish(streams.SubjectJob(disc.ID), disc)
	e.publish(streams.SubjectJob(poll.ID), poll)
	for _, o := range e.olts {
		e.publish(streams.SubjectAssignment(disc.ID, o), streams.JobOLTAssigned{JobID: disc.ID, OLTID: o, Enabled: true})
	}
	for _, o := range healthy {
		e.publish(streams.SubjectAssignment(poll.ID, o), streams.JobOLTAssigned{JobID: poll.ID, OLTID: o, Enabled: true})
	}
	e.brand()

	// The poller first, so the planner knows the slots from its start.
	stopPoller := e.startPollerCfg(poller.Config{PollerID: "p1", StatsEvery: 200 * time.Millisecond, Classes: poller.ClassLimits{
		Discovery: poller.ClassLimit{Concurrency: 2}, Polling: poller.ClassLimit{Concurrency: 4},
		Retry: poller.ClassLimit{Concurrency: 2}, High: poller.ClassLimit{Concurrency: 2}}}, prometheus.NewRegistry())
	pollers, err := e.JS.KeyValue(e.ctx, streams.BucketPollers)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the poller's slots in "+streams.BucketPollers, func() bool {
		_, err := pollers.Get(e.ctx, "p1")
		return err == nil
	})
	stopPlanner := e.startPlanner(planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 300 * time.Millisecond, FirstRunSpread: -1})

	// Watch the queue report while the load runs.
	var res classesResult
	leader, err := e.JS.KeyValue(e.ctx, streams.BucketPlannerLeader)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		entry, err := leader.Get(e.ctx, streams.QueueKey)
		if err != nil {
			continue
		}
		var rep streams.QueueReport
		if err := json.Unmarshal(entry.Value(), &rep); err != nil {
			t.Fatal(err)
		}
		d, ok := rep.Classes[streams.ClassDiscovery]
		if !ok {
			t.Fatalf("queue report without the discovery class: %s", entry.Value())
		}
		if d.Capacity == nil || *d.Capacity != 2 {
			t.Fatalf("discovery capacity %v, want the poller's 2 slots", d.Capacity)
		}
		if rep.Size < rep.Waiting || rep.Size != rep.Waiting+rep.DispatchedWaiting || d.Size != d.Waiting+d.DispatchedWaiting {
			t.Fatalf("inconsistent backlog: %s", entry.Value())
		}
		res.maxDiscBacklog = max(res.maxDiscBacklog, d.Size)
		res.maxDiscWaiting = max(res.maxDiscWaiting, d.Waiting)
		res.sawOverload = res.sawOverload || (d.IsOverload && rep.IsOverload)
		res.sawSaturated = res.sawSaturated || d.IsSaturated
	}
	stopPlanner()
	waitFor(t, 60*time.Second, "every NodeDue ended", func() bool {
		for _, r := range e.runs() {
			if r.due.ExecutionID != "" && !r.ended() {
				return false
			}
		}
		return true
	})
	stopPoller()

	type span struct{ from, to time.Time }
	var discSpans []span
	var lateness []time.Duration
	for _, r := range e.runs() {
		if r.due.ExecutionID == "" {
			continue
		}
		if r.skipped != nil {
			t.Errorf("%s (%s, dispatched %s) was SKIPPED: %s", r.due.NodeID, r.due.Class, r.due.DispatchedAt.Format(time.StampMilli), r.skipped.Reason)
			continue
		}
		if r.succeeded == nil {
			t.Errorf("%s (%s) did not succeed: %d failed attempts, aborted %v, interrupted %v", r.due.NodeID, r.due.Class, len(r.failed), r.aborted != nil, r.interrupt != nil)
			continue
		}
		switch r.due.Class {
		case streams.ClassDiscovery:
			res.discs++
			discSpans = append(discSpans, span{r.due.DispatchedAt, r.endPublished})
		case streams.ClassPolling:
			res.polls++
			lateness = append(lateness, r.started[0].StartedAt.Sub(r.due.ScheduledAt))
		}
	}
	// At no instant more discoveries dispatched and not ended than slots.
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, s := range discSpans {
		edges = append(edges, edge{s.from, 1}, edge{s.to, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].d < edges[j].d // an end before a start at the same instant
	})
	n := 0
	for _, ed := range edges {
		n += ed.d
		res.maxDiscConcurrent = max(res.maxDiscConcurrent, n)
	}
	if res.maxDiscConcurrent > 2 {
		t.Errorf("latency %s: %d discoveries dispatched at once with 2 slots: one waited for a slot in the poller", latency, res.maxDiscConcurrent)
	}
	if res.polls == 0 || res.discs == 0 {
		t.Fatalf("latency %s: %d polls, %d discoveries ran", latency, res.polls, res.discs)
	}
	res.pollP50, res.pollP99 = percentile(lateness, 0.5), percentile(lateness, 0.99)
	return res
}
