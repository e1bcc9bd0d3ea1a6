package alerter

import (
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// BenchmarkEngineMemory holds OLTs x 1,024 ONUs (8 PONs of 128) in an
// engine, without the database or the streams, and prints what that state
// costs the process: heap bytes and heap objects per ONU, the wall time of
// a full garbage collection over it (the median of 5), and the evaluation
// of cycles in which 10 % of the ONUs change status (ns per event, a Take
// every 1,000 events as the ONU groups do). FACHO_ALERT_BENCH_OLTS sets
// the OLTs (default 1000):
//
//	go test -run '^$' -bench EngineMemory -benchtime 3x ./services/alerter/
func BenchmarkEngineMemory(b *testing.B) {
	olts := 1000
	if v := os.Getenv("FACHO_ALERT_BENCH_OLTS"); v != "" {
		olts, _ = strconv.Atoi(v)
	}
	const perOLT, pons = 1024, 8
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	ev := func(o, i int, status string, at time.Time) streams.ONUChanged {
		id := int64(i / pons)
		rx := -20 - float64(id%5)
		return streams.ONUChanged{OLTID: "olt-" + strconv.Itoa(o), PonIndex: int64(i % pons), ONUID: id, Change: streams.ONUStatusChanged,
			Current: streams.ONUState{Serial: fmt.Sprintf("HWTC%08d", o*perOLT+i), Description: fmt.Sprintf("cliente %d-%d", o, i), Status: status,
				RxPowerDBm: &rx, PortName: fmt.Sprintf("0/%d/%d:%d", o%16, i%pons, id)}, ExecutionID: "e", ObservedAt: at}
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	e := NewEngine(Rules{}, Config{}.WithDefaults().Limits)
	n := 0
	for o := 0; o < olts; o++ {
		for i := 0; i < perOLT; i++ {
			e.OnONU(ev(o, i, "ONLINE", at))
			if n++; n%1000 == 0 {
				e.Take()
			}
		}
	}
	e.Take()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	gcs := make([]time.Duration, 5)
	for i := range gcs {
		start := time.Now()
		runtime.GC()
		gcs[i] = time.Since(start)
	}
	slices.Sort(gcs)
	heap := float64(m1.HeapAlloc-m0.HeapAlloc) / float64(n)
	objects := float64(m1.HeapObjects-m0.HeapObjects) / float64(n)
	rng := rand.New(rand.NewSource(1))
	down := map[[2]int]bool{}
	events := 0
	b.ResetTimer()
	for c := 0; c < b.N; c++ {
		now := at.Add(time.Duration(c+1) * 5 * time.Minute)
		for o := 0; o < olts; o++ {
			for k := 0; k < perOLT/10; k++ {
				i := rng.Intn(perOLT)
				st := "OFFLINE"
				if down[[2]int{o, i}] {
					st = "ONLINE"
				}
				down[[2]int{o, i}] = !down[[2]int{o, i}]
				e.OnONU(ev(o, i, st, now))
				if events++; events%1000 == 0 {
					e.Take()
				}
			}
		}
		e.Tick(now.Add(time.Minute))
		e.Take()
	}
	b.StopTimer()
	b.ReportMetric(heap, "heap_B/onu")
	b.ReportMetric(objects, "objects/onu")
	b.ReportMetric(float64(gcs[2].Microseconds())/1000, "gc_ms")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(events, 1)), "ns/event")
	b.Logf("%d ONUs: %.0f heap bytes and %.1f heap objects per ONU, a full GC in %s (median of 5); %d status changes evaluated at %.0f ns each",
		n, heap, objects, gcs[2].Round(time.Millisecond), events, float64(b.Elapsed().Nanoseconds())/float64(max(events, 1)))
	runtime.KeepAlive(e)
}
