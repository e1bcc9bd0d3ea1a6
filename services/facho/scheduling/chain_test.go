package scheduling_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// OLTs with a discovery and a 2-node chain (status walk, then serial
// walk): the chain runs as one composite node under the master's lease,
// after it, never as a node of its own; the composite's next run counts
// from the end of the chain; still one operation per OLT at a time.
func TestChainRunsAsOneCompositeNode(t *testing.T) {
	const nOLTs = 8
	e := newEnv(t, nOLTs, oltsim.Faults{Latency: 10 * time.Millisecond})
	e.job(streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial", "hw-status"}, IntervalSeconds: 3, Priority: 90, Enabled: true})
	e.job(streams.JobUpserted{ID: "status", Name: "status", BrandID: "huawei", Kind: streams.KindBulkWalk,
		OIDIDs: []string{"hw-status"}, IntervalSeconds: 2, Priority: 40, Enabled: true})
	e.job(streams.JobUpserted{ID: "serial", Name: "serial", BrandID: "huawei", Kind: streams.KindBulkWalk,
		OIDIDs: []string{"hw-serial"}, IntervalSeconds: 2, Priority: 40, Enabled: true})
	for _, o := range e.olts {
		e.publish(streams.SubjectWorkflow("wf-"+o), streams.WorkflowUpserted{ID: "wf-" + o, Name: "status then serial", OLTID: o,
			MasterJobID: "status", ChainJobIDs: []string{"serial"}, Enabled: true})
	}
	e.brand()
	reg := prometheus.NewRegistry()
	e.startPoller("p1", reg)
	reg2 := prometheus.NewRegistry()
	e.startPoller("p2", reg2)
	stop := e.startPlanner(planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 300 * time.Millisecond, FirstRunSpread: -1})

	waitFor(t, 90*time.Second, "3 composite runs per OLT", func() bool {
		nodes := byNode(e.runs())
		for _, o := range e.olts {
			done := 0
			for _, r := range nodes["status."+o] {
				c := e.runs()[planner.ChainExecutionID(r.due.ExecutionID, "serial")]
				if c != nil && c.ended() {
					done++
				}
			}
			if done < 3 {
				return false
			}
		}
		return true
	})
	stop()
	waitFor(t, 30*time.Second, "every NodeDue and chained execution ended", func() bool {
		for _, r := range e.runs() {
			if (r.due.ExecutionID != "" || len(r.started) > 0) && !r.ended() {
				return false
			}
		}
		return true
	})
	runs := e.runs()
	for _, o := range e.olts {
		if mc := e.fleet.OLT(o).Record().MaxConcurrent; mc > 1 {
			t.Errorf("%s saw %d concurrent requests", o, mc)
		}
		if n := len(byNode(runs)["serial."+o]); n != 0 {
			t.Errorf("%s: the chained job was dispatched %d times on its own", o, n)
		}
		masters := byNode(runs)["status."+o]
		for i, m := range masters {
			if len(m.due.Chain) != 1 || m.due.Chain[0].JobID != "serial" {
				t.Fatalf("%s: composite NodeDue chain %+v", o, m.due.Chain)
			}
			c := runs[m.due.Chain[0].ExecutionID]
			if m.succeeded == nil || c == nil || c.succeeded == nil {
				t.Fatalf("%s run %d: master %+v chained %+v", o, i, m.succeeded, c)
			}
			if c.started[0].LeaseRevision != m.started[0].LeaseRevision || c.started[0].StartedAt.Before(m.succeeded.FinishedAt) {
				t.Errorf("%s run %d: the chained node did not run after the master under its lease", o, i)
			}
			if i > 0 {
				prevChain := runs[masters[i-1].due.Chain[0].ExecutionID]
				want := prevChain.succeeded.FinishedAt.Add(2 * time.Second).Truncate(time.Millisecond)
				if !m.due.ScheduledAt.Equal(want) {
					t.Errorf("%s run %d scheduled at %s, want the end of the previous chain + interval %s", o, i, m.due.ScheduledAt, want)
				}
			}
		}
	}
	if busy := counter(t, reg, "facho_poller_lease_busy_total") + counter(t, reg2, "facho_poller_lease_busy_total"); busy != 0 {
		t.Errorf("lease busy %v times", busy)
	}
}
