package poller

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// BenchmarkGetAndWalk prints, for one simulated Huawei OLT of 1,024 ONUs
// with 2 ms of added latency, the varbinds/s and varbinds per CPU-second of
// the poller's get and walk beside raw gosnmp (Get, BulkWalk) and net-snmp
// (snmpget, snmpbulkwalk) on the same tables, with ratios against raw
// gosnmp measured in the same run. Figures only, nothing asserted:
//
//	go test -run '^$' -bench GetAndWalk -benchtime 1x ./services/poller/
//
// The simulator and the embedded NATS server run in this process, so the
// in-process CPU figures include the simulator's share (equal for the
// poller and raw gosnmp) and, for the full executions, the NATS server's;
// net-snmp's CPU is its processes' only.
func BenchmarkGetAndWalk(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchGetAndWalk(b)
	}
}

type benchRow struct {
	name     string
	varbinds int
	wall     time.Duration
	cpu      time.Duration // this process
	children time.Duration // child processes (net-snmp)
}

func processCPU() (self, children time.Duration) {
	var ru syscall.Rusage
	conv := func(tv syscall.Timeval) time.Duration {
		return time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
	}
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = conv(ru.Utime) + conv(ru.Stime)
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		children = conv(ru.Utime) + conv(ru.Stime)
	}
	return self, children
}

func measureRow(b *testing.B, name string, work func() (int, time.Duration)) benchRow {
	b.Helper()
	s0, c0 := processCPU()
	start := time.Now()
	n, wall := work()
	if wall == 0 {
		wall = time.Since(start)
	}
	s1, c1 := processCPU()
	return benchRow{name: name, varbinds: n, wall: wall, cpu: s1 - s0, children: c1 - c0}
}

func benchGetAndWalk(b *testing.B) {
	const k, reps = 40, 25
	cfg := huaweiOLT("bench", oltsim.Faults{Latency: 2 * time.Millisecond})
	cfg.Shape = oltsim.Shape{Slots: 1, PortsPerSlot: 8, ONUsPerPort: 128}
	e := newTestEnv(b, streams.Options{Storage: jetstream.MemoryStorage}, cfg)
	sim := e.fleet.OLT("bench")
	addr := sim.Addr()
	onus := sim.ONUs()
	var inst []onuInstance
	for _, o := range onus {
		inst = append(inst, onuInstance{pon: o.PonIndex, onu: int64(o.ID), index: o.Index})
	}
	var oids []string
	for _, o := range onus {
		for _, c := range huaweiColumns {
			oids = append(oids, "."+c.OID+"."+o.Index)
		}
	}
	client := func() *gosnmp.GoSNMP {
		g := &gosnmp.GoSNMP{Target: addr.IP.String(), Port: uint16(addr.Port), Community: testCommunity, Version: gosnmp.Version2c,
			Timeout: 2 * time.Second, Retries: 1, MaxOids: streams.MaxGetVarbinds, MaxRepetitions: reps}
		if err := g.Connect(); err != nil {
			b.Fatal(err)
		}
		return g
	}
	pcfg := Config{GetChunk: k, MaxRepetitions: reps}.WithDefaults()
	op := snmpOp{cfg: pcfg, target: streams.Target{Host: addr.IP.String(), Port: addr.Port}, community: testCommunity}
	var rows []benchRow

	// GET: every ONU x 4 columns.
	rows = append(rows, measureRow(b, "get: raw gosnmp Get, 40 per PDU", func() (int, time.Duration) {
		g := client()
		defer g.Conn.Close()
		n := 0
		for i := 0; i < len(oids); i += k {
			pkt, err := g.Get(oids[i:min(i+k, len(oids))])
			if err != nil {
				b.Fatal(err)
			}
			n += len(pkt.Variables)
		}
		return n, 0
	}))
	for _, conc := range []int{1, 4} {
		rows = append(rows, measureRow(b, fmt.Sprintf("get: poller batches, 40 per PDU, %d in flight", conc), func() (int, time.Duration) {
			n := 0
			op := op
			op.retries = newPDURetries(pcfg.PDURetryBudget, nil)
			r := newGetRun(op, inst, huaweiColumns, k, k, func(streams.Varbind) error { n++; return nil })
			if err := r.run(context.Background(), conc); err != nil {
				b.Fatal(err)
			}
			return n, 0
		}))
	}
	_, _ = e.startPoller(b, Config{PollerID: "bench", Workers: 1, GetChunk: k, GetConcurrency: 1, MaxRepetitions: reps})
	e.publishDiscovered(b, "bench", onus)
	execN := 0
	full := func(kind string, tuning streams.SNMPTuning) func() (int, time.Duration) {
		return func() (int, time.Duration) {
			execN++
			node := e.nodeDue("bench", "bench-"+kind+"-"+strconv.Itoa(execN), "job-"+kind)
			node.Kind, node.SNMP = kind, tuning
			e.publishNodeDue(b, node)
			// Cheap polling (the last succeeded event only), so that this
			// loop adds little to the CPU measured.
			st, err := e.JS.Stream(e.ctx, streams.StreamExec)
			if err != nil {
				b.Fatal(err)
			}
			var ev execEvents
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				m, err := st.GetLastMsgForSubject(e.ctx, streams.SubjectExec("bench", streams.PhaseSucceeded))
				if err != nil {
					continue
				}
				if _, s, err := streams.Decode[streams.ExecutionSucceeded](m.Data); err == nil && s.ExecutionID == node.ExecutionID {
					ev.succeeded = append(ev.succeeded, s)
					break
				}
			}
			if len(ev.succeeded) != 1 {
				b.Fatalf("%s: no success: %+v", kind, e.execEvents(b, "bench", node.ExecutionID))
			}
			return ev.succeeded[0].Varbinds, time.Duration(ev.succeeded[0].DurationMS) * time.Millisecond
		}
	}
	rows = append(rows, measureRow(b, "get: poller execution, folds 1,024 ONU events", full(streams.KindGet, streams.SNMPTuning{})))
	rows = append(rows, measureRow(b, "get: poller execution (+ JetStream publish)", full(streams.KindGet, streams.SNMPTuning{})))
	rows = append(rows, measureRow(b, "get: poller execution, 4 in flight", full(streams.KindGet, streams.SNMPTuning{GetConcurrency: 4})))
	if bin, err := exec.LookPath("snmpget"); err == nil {
		rows = append(rows, measureRow(b, "get: net-snmp snmpget, 40 per process", func() (int, time.Duration) {
			n := 0
			for i := 0; i < len(oids); i += k {
				args := append([]string{"-v2c", "-c", testCommunity, "-On", "-Oq", addr.String()}, oids[i:min(i+k, len(oids))]...)
				out, err := exec.Command(bin, args...).Output()
				if err != nil {
					b.Fatalf("snmpget: %v", err)
				}
				n += strings.Count(string(out), "\n")
			}
			return n, 0
		}))
	}

	// Walk: the 4 columns.
	rows = append(rows, measureRow(b, "walk: raw gosnmp BulkWalk, 25 repetitions", func() (int, time.Duration) {
		g := client()
		defer g.Conn.Close()
		n := 0
		for _, c := range huaweiColumns {
			if err := g.BulkWalk(c.OID, func(gosnmp.SnmpPDU) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
		}
		return n, 0
	}))
	rows = append(rows, measureRow(b, "walk: poller GETBULK walk, 25 repetitions", func() (int, time.Duration) {
		n := 0
		if err := op.run(context.Background(), streams.KindBulkWalk, huaweiColumns, func(streams.Varbind) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		return n, 0
	}))
	rows = append(rows, measureRow(b, "walk: poller bulkwalk execution (+ publish)", full(streams.KindBulkWalk, streams.SNMPTuning{})))
	if bin, err := exec.LookPath("snmpbulkwalk"); err == nil {
		rows = append(rows, measureRow(b, "walk: net-snmp snmpbulkwalk -Cr25", func() (int, time.Duration) {
			n := 0
			for _, c := range huaweiColumns {
				out, err := exec.Command(bin, "-v2c", "-c", testCommunity, "-On", "-Oq", "-Cr"+strconv.Itoa(reps), addr.String(), c.OID).Output()
				if err != nil {
					b.Fatalf("snmpbulkwalk: %v", err)
				}
				n += strings.Count(string(out), "\n")
			}
			return n, 0
		}))
	}
	rows = append(rows, measureRow(b, "walk: raw gosnmp Walk (GETNEXT)", func() (int, time.Duration) {
		g := client()
		defer g.Conn.Close()
		n := 0
		for _, c := range huaweiColumns {
			if err := g.Walk(c.OID, func(gosnmp.SnmpPDU) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
		}
		return n, 0
	}))
	rows = append(rows, measureRow(b, "walk: poller GETNEXT walk (kind walk)", func() (int, time.Duration) {
		n := 0
		o := op
		o.getNext = true
		if err := o.run(context.Background(), streams.KindWalk, huaweiColumns, func(streams.Varbind) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		return n, 0
	}))

	w := os.Stdout
	fmt.Fprintf(w, "\n1 OLT x %d ONUs x %d columns, 2 ms latency per request (in-process CPU includes the simulator)\n", len(onus), len(huaweiColumns))
	base := map[string]benchRow{}
	for _, r := range rows {
		kind := strings.SplitN(r.name, ":", 2)[0]
		if _, ok := base[kind]; !ok {
			base[kind] = r // the first row of each kind is raw gosnmp
		}
		vbps := float64(r.varbinds) / r.wall.Seconds()
		cpu := r.cpu + r.children
		line := fmt.Sprintf("%-48s %6d varbinds %7.3fs %9.0f varbinds/s (%.2fx raw gosnmp)", r.name, r.varbinds, r.wall.Seconds(), vbps,
			vbps/(float64(base[kind].varbinds)/base[kind].wall.Seconds()))
		if cpu > 0 {
			line += fmt.Sprintf(" %9.0f varbinds/CPU-s", float64(r.varbinds)/cpu.Seconds())
		}
		if r.children > 0 {
			line += " (its processes)"
		}
		fmt.Fprintln(w, line)
	}
}
