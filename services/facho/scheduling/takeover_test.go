package scheduling_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// Two planner replicas, real pollers and simulated OLTs: the active planner
// dies (its connection cut, its leader lease left to expire); the standby
// takes over and every node's runs go on, each planned from the end of the
// previous one (none run twice, none lost), never two operations at once
// on one OLT.
func TestStandbyPlannerTakesOver(t *testing.T) {
	const nOLTs = 6
	e := newEnvOpts(t, nOLTs, oltsim.Faults{Latency: 5 * time.Millisecond}, oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 8},
		streams.Options{Storage: jetstream.MemoryStorage, LeaderTTL: time.Second})
	e.job(streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial", "hw-status"}, IntervalSeconds: 2, Priority: 90, Enabled: true})
	e.job(streams.JobUpserted{ID: "status", Name: "status", BrandID: "huawei", Kind: streams.KindBulkWalk,
		OIDIDs: []string{"hw-status"}, IntervalSeconds: 2, Priority: 40, Enabled: true})
	e.brand()
	e.startPoller("p1", prometheus.NewRegistry())
	e.startPoller("p2", prometheus.NewRegistry())

	cfg := planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 200 * time.Millisecond, FirstRunSpread: -1}
	ncA, err := nats.Connect(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	jsA, _ := jetstream.New(ncA)
	cfgA := cfg
	cfgA.Instance = "planner-a"
	stopA := e.goRun("planner-a", func(ctx context.Context) error {
		// A cut-off replica's errors are expected; only a hang would fail.
		_ = planner.Run(ctx, cfgA, planner.Deps{JS: jsA, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
		return nil
	})
	runsPerNode := func(min int) func() bool {
		return func() bool {
			nodes := byNode(e.runs())
			if len(nodes) < 2*nOLTs {
				return false
			}
			for _, rs := range nodes {
				if len(rs) < min {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, 60*time.Second, "2 runs of every node", runsPerNode(2))
	cfgB := cfg
	cfgB.Instance = "planner-b"
	stopB := e.startPlanner(cfgB)

	crashed := time.Now()
	ncA.Close()
	before := map[string]int{}
	for n, rs := range byNode(e.runs()) {
		before[n] = len(rs)
	}
	waitFor(t, 60*time.Second, "PLANNER_TAKEOVER by planner-b", func() bool {
		for _, a := range e.audits() {
			if a.Kind == streams.AuditTakeover && a.Details["instance"] == "planner-b" {
				return true
			}
		}
		return false
	})
	waitFor(t, 60*time.Second, "2 more runs of every node after the takeover", func() bool {
		for n, rs := range byNode(e.runs()) {
			if len(rs) < before[n]+2 {
				return false
			}
		}
		return true
	})
	stopB()
	stopA()
	waitFor(t, 30*time.Second, "every NodeDue ended", func() bool {
		for _, r := range e.runs() {
			if r.due.ExecutionID != "" && !r.ended() {
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
	}
	var firstAfter time.Time
	for node, rs := range byNode(runs) {
		for i, r := range rs {
			if r.succeeded == nil || len(r.started) != 1 {
				t.Errorf("%s run %d: succeeded %v, %d starts", node, i, r.succeeded != nil, len(r.started))
				continue
			}
			if r.due.DispatchedAt.After(crashed) && (firstAfter.IsZero() || r.due.DispatchedAt.Before(firstAfter)) {
				firstAfter = r.due.DispatchedAt
			}
			if i == 0 {
				continue
			}
			prev := rs[i-1]
			if prev.succeeded == nil {
				continue
			}
			want := prev.succeeded.FinishedAt.Add(2 * time.Second).Truncate(time.Millisecond)
			if !r.due.ScheduledAt.Equal(want) {
				t.Errorf("%s run %d scheduled at %s, want the previous end + interval %s (a run lost or planned twice)", node, i, r.due.ScheduledAt, want)
			}
		}
	}
	t.Logf("leader TTL 1s: first dispatch %s after the active planner died", firstAfter.Sub(crashed))
}
