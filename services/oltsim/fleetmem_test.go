package oltsim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// fleetShape is what facho bench simulates per OLT: 1x16x64 = 1,024 ONUs.
var fleetShape = Shape{Slots: 1, PortsPerSlot: 16, ONUsPerPort: 64}

// BenchmarkFleetMemory builds N Huawei OLTs of 1,024 ONUs, makes each one
// build what it serves (as a poller touching every OLT does) and reports
// the live heap per ONU after a GC (heap-B/onu), for the compact layout
// and for the former one (flat: every row an encoded entry, kept as the
// test reference). OLTFLEET_SIZES (e.g. "100,1000") picks N; default 100
// and 1000 (the flat 1000 case needs about 3 GB).
//
//	go test -run '^$' -bench BenchmarkFleetMemory -benchtime 1x .
func BenchmarkFleetMemory(b *testing.B) {
	sizes := []int{100, 1000}
	if s := os.Getenv("OLTFLEET_SIZES"); s != "" {
		sizes = nil
		for _, f := range splitComma(s) {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, layout := range []string{"compact", "flat"} {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/olts=%d", layout, n), func(b *testing.B) {
				var perONU float64
				for b.Loop() {
					before := liveHeap()
					olts := buildFleet(b, n, layout == "flat")
					after := liveHeap()
					perONU = float64(after-before) / float64(n*1024)
					runtime.KeepAlive(olts)
				}
				b.ReportMetric(perONU, "heap-B/onu")
			})
		}
	}
}

func buildFleet(tb testing.TB, n int, flat bool) []*OLT {
	pl := newPools()
	olts := make([]*OLT, n)
	for i := range olts {
		o, err := newOLT(context.Background(), OLTConfig{Name: fmt.Sprintf("bench-%d", i), Community: "public",
			Profile: "huawei-ma5800", Shape: fleetShape, Seed: int64(i + 1)}, testLogger(), pl)
		if err != nil {
			tb.Fatal(err)
		}
		if flat {
			o.mib.Store(buildFlatMIB(o.prof, o.name, fleetShape, o.onus))
		}
		o.view()
		olts[i] = o
	}
	return olts
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkWalk bulk-walks (GETBULK, max-repetitions 25, no sockets) the
// 9-column Huawei ONU subtree of one 1,024-ONU OLT, compact layout against
// the former flat one, and reports varbinds/s.
func BenchmarkWalk(b *testing.B) {
	p, _ := profileByName("huawei-ma5800")
	onus := p.generate(fleetShape, 1)
	root := mustOID("1.3.6.1.4.1.2011.6.128.1.1.2")
	for _, layout := range []string{"compact", "flat"} {
		m := p.buildMIB("x", fleetShape, onus)
		if layout == "flat" {
			m = buildFlatMIB(p, "x", fleetShape, onus)
		}
		b.Run(layout, func(b *testing.B) {
			var req request
			out := make([]byte, 0, 70000)
			vbs := 0
			b.ReportAllocs()
			for b.Loop() {
				q := root
				for {
					msg := getBulkMessage(b, "public", q, 25)
					if err := parseRequest(msg, &req); err != nil {
						b.Fatal(err)
					}
					resp, ok := respond(&req, m, out[:0], DefaultMaxResponseBytes, 1)
					if !ok {
						b.Fatal("no response")
					}
					var back request
					if err := parseRequest(resp, &back); err != nil {
						b.Fatal(err)
					}
					n := 0
					for _, o := range back.oids {
						if !o.hasPrefix(root) {
							break
						}
						n++
					}
					vbs += n
					last := back.oids[len(back.oids)-1]
					if n < len(back.oids) || compareOID(last, q) <= 0 || bytes.Contains(resp, []byte{tagEndOfMibView, 0}) {
						break
					}
					q = append(q[:0:0], last...)
				}
			}
			b.ReportMetric(float64(vbs)/b.Elapsed().Seconds(), "varbinds/s")
		})
	}
}
