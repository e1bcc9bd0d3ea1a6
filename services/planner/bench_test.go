package planner

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/streams"
)

// BenchmarkPlanner10kOLTs: 10,000 OLTs x 5 nodes on a simulated clock:
// decisions (a dispatch or a finish) per second of CPU and planner memory
// per node (configuration, schedule, queues, persisted-entry hashes).
// Figures are printed, not asserted (target: <= 2 KiB per node).
//
//	go test -run '^$' -bench Planner10k -benchtime 1x ./services/planner/
func BenchmarkPlanner10kOLTs(b *testing.B) {
	const nOLTs, nJobs = 10_000, 5
	for range b.N {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)

		m, err := newMetrics(prometheus.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		p := newPlanner(Config{}.WithDefaults(), Deps{Now: time.Now}, m, zerolog.Nop())
		at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		apply := func(ev streams.Event) {
			e, err := streams.Encode("bench", at, ev)
			if err != nil {
				b.Fatal(err)
			}
			env, err := streams.DecodeEnvelope(e)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.state.apply(env); err != nil {
				b.Fatal(err)
			}
		}
		apply(streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"})
		for i := range 4 {
			apply(streams.OIDUpserted{ID: fmt.Sprintf("o%d", i), BrandID: "huawei", Name: "x", OID: fmt.Sprintf("1.3.6.1.4.1.2011.6.128.1.1.2.%d.1.3", 43+i),
				Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "string"}})
		}
		for j := range nJobs {
			kind, prio, interval := streams.KindGet, 40, 300
			if j == 0 {
				kind, prio, interval = streams.KindDiscovery, 90, 3600
			}
			apply(streams.JobUpserted{ID: fmt.Sprintf("job-%d", j), Name: "job", BrandID: "huawei", Kind: kind,
				OIDIDs: []string{"o0", "o1", "o2", "o3"}, IntervalSeconds: interval, Priority: prio, Enabled: true, MaxRetries: 2})
		}
		for o := range nOLTs {
			olt := fmt.Sprintf("olt-%05d", o)
			apply(streams.OLTUpserted{ID: olt, Name: olt, IP: "10.0.0.1", Port: 161, BrandID: "huawei", CommunityEnc: "v1:sealed-community-placeholder", Enabled: true})
			for j := range nJobs {
				apply(streams.JobOLTAssigned{JobID: fmt.Sprintf("job-%d", j), OLTID: olt, Enabled: true})
			}
		}
		p.sched.SpreadFirstRuns(15 * time.Minute)
		p.sched.Sync(p.state.desired(), at)
		for k := range p.state.takeTouched() {
			p.written[k] = 1 // as after a flush
		}

		// One simulated hour: each run takes 20 s (discovery 90 s).
		s := newSim(p.sched, func(k NodeKey) time.Duration {
			if k.JobID == "job-0" {
				return 90 * time.Second
			}
			return 20 * time.Second
		})
		s.q = p.queues
		s.countOnly = true
		start := time.Now()
		cpuStart := cpuTime()
		for now := at; now.Before(at.Add(time.Hour)); now = now.Add(time.Second) {
			s.step(now)
		}
		wall := time.Since(start)
		cpu := cpuTime() - cpuStart

		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		nodes := nOLTs * nJobs
		decisions := 2 * s.count // a dispatch and its finish
		b.ReportMetric(float64(decisions)/wall.Seconds(), "decisions/s")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(nodes), "bytes/node")
		fmt.Printf("planner, %d OLTs x %d nodes, 1 simulated hour: %d dispatches in %s (%.0f decisions/s wall, %.0f per CPU-second); heap %.0f bytes per node (target <= 2048)\n",
			nOLTs, nJobs, s.count, wall.Round(time.Millisecond), float64(decisions)/wall.Seconds(), float64(decisions)/max(cpu.Seconds(), 1e-9),
			float64(after.HeapAlloc-before.HeapAlloc)/float64(nodes))
		runtime.KeepAlive(p)
	}
}
