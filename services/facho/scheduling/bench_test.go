package scheduling_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/services/poller"
	"github.com/facho-olt/facho/streams"
)

// BenchmarkDispatchLatency, in real time with simulated OLTs over UDP: two
// nodes due together on every OLT (a discovery and a status walk), so one
// waits for the other. Printed, not asserted (targets: p99 <= 100 ms):
//   - due -> start (scheduled time to the poller's execution.started),
//   - finish -> next start on the same OLT (the waiting node),
//
// for the per-OLT queue (the planner dispatches the waiting node on the
// finish event) beside the pre-queue baseline measured in the same run:
// both NodeDue published at once, the second NAKed every
// LeaseBusyDelay (1 s) until the lease frees.
//
//	FACHO_BENCH_OLTS=1000 go test -run '^$' -bench DispatchLatency -benchtime 1x ./services/facho/scheduling/
func BenchmarkDispatchLatency(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("FACHO_BENCH_OLTS")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		q := measure(b, n, true)
		nak := measure(b, n, false)
		fmt.Printf("%d simulated OLTs, 2 nodes each due together:\n", n)
		fmt.Printf("  per-OLT queue (finish event):  due->start p50 %-10s p99 %-10s | finish->next start p50 %-10s p99 %s\n", q.dueP50, q.dueP99, q.nextP50, q.nextP99)
		fmt.Printf("    %s\n", q.legs)
		fmt.Printf("  baseline (1 s busy NAK loop):  due->start p50 %-10s p99 %-10s | finish->next start p50 %-10s p99 %s\n", nak.dueP50, nak.dueP99, nak.nextP50, nak.nextP99)
	}
}

type latencies struct {
	dueP50, dueP99, nextP50, nextP99 time.Duration
	// The finish -> next start path of the queued run, in three legs.
	legs string
}

func measure(b *testing.B, n int, queued bool) latencies {
	e := newEnvB(b, n)
	disc := streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial", "hw-status"}, IntervalSeconds: 3600, Priority: 90, Enabled: true}
	status := streams.JobUpserted{ID: "status", Name: "status", BrandID: "huawei", Kind: streams.KindBulkWalk,
		OIDIDs: []string{"hw-status"}, IntervalSeconds: 3600, Priority: 40, Enabled: true}
	// Enough workers for every OLT at once: the figures measure the
	// scheduling, not a shortage of pollers.
	for i := range 2 {
		e.startPollerCfg(poller.Config{PollerID: fmt.Sprintf("p%d", i), Workers: min(max(n/2, 4), 500), Classes: anyClass(min(max(n/2, 4), 256))}, prometheus.NewRegistry())
	}
	if queued {
		e.job(disc)
		e.job(status)
		e.brand()
		e.startPlanner(planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 2 * time.Second, FirstRunSpread: -1})
	} else {
		// What the planner did before the per-OLT queue: every due node
		// emitted at once; the poller's lease orders them.
		due := time.Now().UTC()
		for _, o := range e.olts {
			for _, j := range []streams.JobUpserted{disc, status} {
				addr := e.fleet.OLT(o).Addr()
				nd := streams.NodeDue{ExecutionID: j.ID + "-" + o, NodeID: j.ID + "." + o, JobID: j.ID, JobName: j.Name, OLTID: o,
					BrandID: "huawei", IndexScheme: "pon.onu", Kind: j.Kind, Priority: j.Priority, IntervalSeconds: j.IntervalSeconds,
					Target: streams.Target{Host: addr.IP.String(), Port: addr.Port, CommunityEnc: e.sealed}, TimeoutSeconds: 60,
					OIDs: huaweiOIDs(j.OIDIDs), ScheduledAt: due} // no dispatched_at, as the old planner: the 1 s NAK loop
				e.publish(streams.SubjectNodeDue(o), nd)
			}
		}
	}
	var runs map[string]*run
	deadline := time.Now().Add(10 * time.Minute)
	for {
		runs = e.runs()
		ended := 0
		for _, r := range runs {
			if r.succeeded != nil || r.finalFailure() != nil {
				ended++
			}
		}
		if ended >= 2*n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d runs ended after 10 minutes", ended, 2*n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var due, next, toEvent, toDispatch, toStart []time.Duration
	perOLT := map[string][]*run{}
	for _, r := range runs {
		if len(r.started) == 0 || r.succeeded == nil {
			continue
		}
		due = append(due, r.started[0].StartedAt.Sub(r.due.ScheduledAt))
		perOLT[r.due.OLTID] = append(perOLT[r.due.OLTID], r)
	}
	for _, rs := range perOLT {
		if len(rs) != 2 {
			continue
		}
		first, second := rs[0], rs[1]
		if second.started[0].StartedAt.Before(first.started[0].StartedAt) {
			first, second = second, first
		}
		next = append(next, second.started[0].StartedAt.Sub(first.succeeded.FinishedAt))
		if !second.due.DispatchedAt.IsZero() && second.due.DispatchedAt.After(first.endPublished) {
			toEvent = append(toEvent, first.endPublished.Sub(first.succeeded.FinishedAt))
			toDispatch = append(toDispatch, second.due.DispatchedAt.Sub(first.endPublished))
			toStart = append(toStart, second.started[0].StartedAt.Sub(second.due.DispatchedAt))
		}
	}
	l := latencies{dueP50: percentile(due, 0.5), dueP99: percentile(due, 0.99), nextP50: percentile(next, 0.5), nextP99: percentile(next, 0.99)}
	if len(toEvent) > 0 {
		l.legs = fmt.Sprintf("finish->terminal event p50 %s, terminal event->dispatch p50 %s p99 %s, dispatch->start p50 %s p99 %s",
			percentile(toEvent, 0.5), percentile(toDispatch, 0.5), percentile(toDispatch, 0.99), percentile(toStart, 0.5), percentile(toStart, 0.99))
	}
	return l
}

func huaweiOIDs(ids []string) []streams.OIDSpec {
	all := map[string]streams.OIDSpec{
		"hw-serial": {ID: "hw-serial", OID: huaweiBase + ".43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
		"hw-status": {ID: "hw-status", OID: huaweiBase + ".46.1.15", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}},
	}
	var out []streams.OIDSpec
	for _, id := range ids {
		out = append(out, all[id])
	}
	return out
}

// newEnvB is newEnv for a benchmark: tiny OLTs so the measure is the
// scheduling, not the walks.
func newEnvB(b *testing.B, n int) *env {
	return newEnvTB(b, n, oltsim.Faults{}, oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 4})
}
