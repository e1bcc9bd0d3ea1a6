package poller

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/streams"
)

// TestBenchFleet is issue 8's benchmark: one poller against many simulated
// Huawei OLTs of 1,024 ONUs with added latency, walk (bulkwalk, 4 columns)
// and GET (4 columns at every discovered ONU), beside raw gosnmp BulkWalk
// and Get on the same tables with the same parallelism, and net-snmp's
// snmpbulkwalk when installed, in the same run. Figures are printed, not
// asserted. net-snmp's snmpget (one process per PDU) reads 1 OLT in
// FACHO_BENCH_OLTS/100 when installed. The simulator (services/oltsim/cmd/oltsim) and NATS
// (nats-server built from the module graph, else an embedded one, said in
// the output) run as processes of their own, so the CPU of this process is the poller's
// (or the raw client's) alone. Off unless FACHO_BENCH_FLEET=1:
//
//	FACHO_BENCH_FLEET=1 FACHO_BENCH_OLTS=100 go test -run TestBenchFleet -v -timeout 30m .
//
// Knobs (environment): FACHO_BENCH_OLTS (default 50), FACHO_BENCH_LATENCY
// (2ms), FACHO_BENCH_WORKERS (executions in parallel, 4),
// FACHO_BENCH_REPS (max-repetitions, 25), FACHO_BENCH_GET_VARBINDS (40),
// FACHO_BENCH_CPUPROFILE and FACHO_BENCH_GET_CPUPROFILE (files: CPU
// profiles of the poller's walk and get executions, one PDU in flight).
func TestBenchFleet(t *testing.T) {
	if testing.Short() || os.Getenv("FACHO_BENCH_FLEET") != "1" {
		t.Skip("set FACHO_BENCH_FLEET=1 to run the fleet benchmark")
	}
	envInt := func(k string, d int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
			return v
		}
		return d
	}
	nOLTs := envInt("FACHO_BENCH_OLTS", 50)
	workers := envInt("FACHO_BENCH_WORKERS", 4)
	reps := envInt("FACHO_BENCH_REPS", 25)
	k := envInt("FACHO_BENCH_GET_VARBINDS", 40)
	latency := 2 * time.Millisecond
	if d, err := time.ParseDuration(os.Getenv("FACHO_BENCH_LATENCY")); err == nil {
		latency = d
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()

	// The simulator, a process of its own.
	simBin := filepath.Join(dir, "oltsim")
	if out, err := exec.Command("go", "build", "-o", simBin, "../oltsim/cmd/oltsim").CombinedOutput(); err != nil {
		t.Fatalf("build oltsim: %v\n%s", err, out)
	}
	basePort := freeUDPRange(t, nOLTs)
	sim := exec.CommandContext(ctx, simBin, "-olts", strconv.Itoa(nOLTs), "-listen", fmt.Sprintf("127.0.0.1:%d", basePort),
		"-shape", "1x8x128", "-community", testCommunity, "-latency", latency.String(), "-http", "", "-log-level", "warn")
	sim.Stdout, sim.Stderr = os.Stderr, os.Stderr
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sim.Process.Kill(); _ = sim.Wait() }()
	addrs := make([]string, nOLTs)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", basePort+i)
	}

	// NATS, a process of its own when nats-server is installed.
	natsURL, natsPID, natsNote := startNATS(t, ctx, dir)
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := streams.Provision(ctx, js, streams.Options{Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	key, _ := secret.NewKey()
	raw, _ := secret.ParseKey(key)
	box, err := secret.NewBox(raw)
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := box.Seal(testCommunity)

	client := func(addr string, timeout time.Duration) *gosnmp.GoSNMP {
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		g := &gosnmp.GoSNMP{Target: host, Port: uint16(p), Community: testCommunity, Version: gosnmp.Version2c,
			Timeout: timeout, Retries: 1, MaxOids: streams.MaxGetVarbinds, MaxRepetitions: uint32(reps)}
		if err := g.Connect(); err != nil {
			t.Fatal(err)
		}
		return g
	}
	// Wait for the last OLT to answer.
	waitFor(t, 2*time.Minute, "the simulator", func() bool {
		g := client(addrs[nOLTs-1], 200*time.Millisecond)
		defer g.Conn.Close()
		_, err := g.Get([]string{"." + huaweiColumns[0].OID + ".4194304000.0"})
		return err == nil
	})

	// The ONUs of an OLT, from its first column, for the GETs and the
	// discovered events.
	type onuRef struct {
		pon, id int64
		index   string
	}
	var onus []onuRef
	{
		g := client(addrs[0], 2*time.Second)
		_ = g.BulkWalk(huaweiColumns[0].OID, func(p gosnmp.SnmpPDU) error {
			idx := strings.TrimPrefix(strings.TrimPrefix(p.Name, "."), huaweiColumns[0].OID+".")
			pon, onu, _ := strings.Cut(idx, ".")
			a, _ := strconv.ParseInt(pon, 10, 64)
			b, _ := strconv.ParseInt(onu, 10, 64)
			onus = append(onus, onuRef{a, b, idx})
			return nil
		})
		g.Conn.Close()
	}
	if len(onus) != 1024 {
		t.Fatalf("simulated OLT has %d ONUs, want 1024", len(onus))
	}

	type row struct {
		name     string
		varbinds int64
		wall     time.Duration
		cpu      time.Duration // this process
		children time.Duration // net-snmp processes
		natsCPU  time.Duration
	}
	var rows []row
	measure := func(name string, work func() int64) {
		s0, c0 := processCPU()
		n0 := pidCPU(natsPID)
		start := time.Now()
		n := work()
		wall := time.Since(start)
		s1, c1 := processCPU()
		rows = append(rows, row{name: name, varbinds: n, wall: wall, cpu: s1 - s0, children: c1 - c0, natsCPU: pidCPU(natsPID) - n0})
		t.Logf("%s: %d varbinds in %s", name, n, wall.Round(time.Millisecond))
	}
	parallel := func(each func(i int) int64) int64 {
		var total atomic.Int64
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= nOLTs {
						return
					}
					total.Add(each(i))
				}
			}()
		}
		wg.Wait()
		return total.Load()
	}

	// The poller, in this process.
	pctx, pcancel := context.WithCancel(ctx)
	pdone := make(chan error, 1)
	go func() {
		pdone <- Run(pctx, Config{PollerID: "bench", Workers: workers, Classes: ClassLimits{Polling: ClassLimit{Concurrency: workers}},
			MaxRepetitions: reps, GetChunk: k, GetConcurrency: 1, DisableOLTMetrics: true},
			Deps{JS: js, Log: zerolog.Nop(), Registry: prometheus.NewRegistry(), Box: box})
	}()
	defer func() { pcancel(); <-pdone }()

	// Executions end: count the terminal events (core subscription, cheap).
	var ended atomic.Int64
	var endedVarbinds atomic.Int64
	var failed atomic.Int64
	sub, err := nc.Subscribe("facho.exec.*.*", func(m *nats.Msg) {
		switch {
		case strings.HasSuffix(m.Subject, "."+streams.PhaseSucceeded):
			if _, s, err := streams.Decode[streams.ExecutionSucceeded](m.Data); err == nil {
				endedVarbinds.Add(int64(s.Varbinds))
			}
			ended.Add(1)
		case strings.HasSuffix(m.Subject, "."+streams.PhaseFailed):
			if _, f, err := streams.Decode[streams.ExecutionFailed](m.Data); err == nil {
				t.Logf("%s failed: %s", f.ExecutionID, f.Error)
			}
			failed.Add(1)
			ended.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	round := 0
	runPoller := func(kind string, tuning streams.SNMPTuning) int64 {
		round++
		ended.Store(0)
		endedVarbinds.Store(0)
		for i, addr := range addrs {
			host, port, _ := net.SplitHostPort(addr)
			p, _ := strconv.Atoi(port)
			olt := fmt.Sprintf("olt-%d", i)
			n := streams.NodeDue{
				ExecutionID: fmt.Sprintf("bench-%s-%d-%d", kind, round, i), NodeID: "job-" + kind + "@" + olt, JobID: "job-" + kind, JobName: kind,
				OLTID: olt, BrandID: "huawei", IndexScheme: "pon.onu", Kind: kind,
				Target: streams.Target{Host: host, Port: p, CommunityEnc: sealed}, OIDs: huaweiColumns,
				Priority: 40, IntervalSeconds: 300, TimeoutSeconds: 600, MaxRetries: 0, RetryDelaySeconds: 300,
				ScheduledAt: time.Now().UTC(), SNMP: tuning,
			}
			b, err := streams.EncodeWithID(n.ExecutionID, "bench", time.Now(), n)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := js.Publish(ctx, streams.SubjectNodeDue(olt), b); err != nil {
				t.Fatal(err)
			}
		}
		for deadline := time.Now().Add(20 * time.Minute); ended.Load() < int64(nOLTs); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s round %d: %d of %d executions ended", kind, round, ended.Load(), nOLTs)
			}
		}
		if f := failed.Load(); f > 0 {
			t.Fatalf("%d executions failed", f)
		}
		return endedVarbinds.Load()
	}

	// Walk.
	measure("walk: raw gosnmp BulkWalk", func() int64 {
		return parallel(func(i int) int64 {
			g := client(addrs[i], 2*time.Second)
			defer g.Conn.Close()
			var n int64
			for _, c := range huaweiColumns {
				if err := g.BulkWalk(c.OID, func(gosnmp.SnmpPDU) error { n++; return nil }); err != nil {
					t.Error(err)
				}
			}
			return n
		})
	})
	// profiled runs work under a CPU profile written to the file named by
	// the environment variable env, if set.
	profiled := func(env string, work func() int64) func() int64 {
		return func() int64 {
			f := os.Getenv(env)
			if f == "" {
				return work()
			}
			prof, err := os.Create(f)
			if err != nil {
				t.Fatal(err)
			}
			defer prof.Close()
			if err := pprof.StartCPUProfile(prof); err != nil {
				t.Fatal(err)
			}
			defer pprof.StopCPUProfile()
			return work()
		}
	}
	measure("walk: poller bulkwalk executions (+ publish)", profiled("FACHO_BENCH_CPUPROFILE", func() int64 { return runPoller(streams.KindBulkWalk, streams.SNMPTuning{}) }))
	measure("walk: raw gosnmp BulkWalk (again)", func() int64 {
		return parallel(func(i int) int64 {
			g := client(addrs[i], 2*time.Second)
			defer g.Conn.Close()
			var n int64
			for _, c := range huaweiColumns {
				if err := g.BulkWalk(c.OID, func(gosnmp.SnmpPDU) error { n++; return nil }); err != nil {
					t.Error(err)
				}
			}
			return n
		})
	})
	if bin, err := exec.LookPath("snmpbulkwalk"); err == nil {
		measure(fmt.Sprintf("walk: net-snmp snmpbulkwalk -Cr%d", reps), func() int64 {
			return parallel(func(i int) int64 {
				var n int64
				for _, c := range huaweiColumns {
					out, err := exec.Command(bin, "-v2c", "-c", testCommunity, "-On", "-Oq", "-Cr"+strconv.Itoa(reps), addrs[i], c.OID).Output()
					if err != nil {
						t.Errorf("snmpbulkwalk: %v", err)
					}
					n += int64(netSNMPVarbinds(out))
				}
				return n
			})
		})
	}

	// GET: the ONU set first. A poller learns an OLT's ONUs from the
	// snapshot in BucketOLTSNMP (key onus.<olt_id>, getonus.go) plus the
	// discovered events after its sequence; the snapshot is seeded here as
	// a first get would leave it after folding the 1,024 discovered events
	// (publishing 1,048,576 events and folding them took longer than the
	// benchmark itself at 1,000 OLTs). Each get still opens its ordered
	// consumer for the events after the snapshot, as in production.
	seedStart := time.Now()
	{
		set := streams.ONUSet{PONs: map[string][]int64{}}
		for _, o := range onus {
			pon := strconv.FormatInt(o.pon, 10)
			set.PONs[pon] = append(set.PONs[pon], o.id)
		}
		for _, ids := range set.PONs {
			slices.Sort(ids)
		}
		st, err := js.Stream(ctx, streams.StreamONU)
		if err != nil {
			t.Fatal(err)
		}
		info := st.CachedInfo()
		set.Seq, set.StreamCreated, set.UpdatedAt = info.State.LastSeq, info.Created, time.Now().UTC()
		value, err := json.Marshal(set)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < nOLTs; i++ {
			if _, err := js.PublishAsync("$KV."+streams.BucketOLTSNMP+"."+streams.KeyONUSet(fmt.Sprintf("olt-%d", i)), value); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(time.Minute):
			t.Fatal("onu sets not acked")
		}
	}
	t.Logf("onu sets of %d OLTs seeded in %s", nOLTs, time.Since(seedStart).Round(time.Millisecond))
	oids := make([]string, 0, len(onus)*len(huaweiColumns))
	for _, o := range onus {
		for _, c := range huaweiColumns {
			oids = append(oids, "."+c.OID+"."+o.index)
		}
	}
	rawGet := func() int64 {
		return parallel(func(i int) int64 {
			g := client(addrs[i], 2*time.Second)
			defer g.Conn.Close()
			var n int64
			for j := 0; j < len(oids); j += k {
				pkt, err := g.Get(oids[j:min(j+k, len(oids))])
				if err != nil {
					t.Error(err)
					return n
				}
				n += int64(len(pkt.Variables))
			}
			return n
		})
	}
	measure(fmt.Sprintf("get: raw gosnmp Get, %d per PDU", k), rawGet)
	measure("get: poller get executions (+ publish)", profiled("FACHO_BENCH_GET_CPUPROFILE", func() int64 { return runPoller(streams.KindGet, streams.SNMPTuning{}) }))
	measure(fmt.Sprintf("get: raw gosnmp Get, %d per PDU (again)", k), rawGet)
	if bin, err := exec.LookPath("snmpget"); err == nil {
		// One process per PDU: on at most 100 of the OLTs (every
		// step-th), or the row alone would outlast the rest.
		step := max(1, nOLTs/100)
		measure(fmt.Sprintf("get: net-snmp snmpget, %d per PDU (1 OLT in %d)", k, step), func() int64 {
			return parallel(func(i int) int64 {
				if i%step != 0 {
					return 0
				}
				var n int64
				for j := 0; j < len(oids); j += k {
					args := append([]string{"-v2c", "-c", testCommunity, "-On", "-Oq", addrs[i]}, oids[j:min(j+k, len(oids))]...)
					out, err := exec.Command(bin, args...).Output()
					if err != nil {
						t.Errorf("snmpget: %v", err)
						return n
					}
					n += int64(netSNMPVarbinds(out))
				}
				return n
			})
		})
	}
	// The poller's default: 2 PDUs in flight per OLT (still one get per
	// OLT: the lease); the raw rows keep one.
	measure("get: poller get executions, 2 PDUs in flight", func() int64 {
		return runPoller(streams.KindGet, streams.SNMPTuning{GetConcurrency: 2})
	})

	w := os.Stdout
	fmt.Fprintf(w, "\n%d OLTs x 1,024 ONUs x 4 columns, %s latency per request, %d executions (or raw clients) in parallel, max-repetitions %d, %d varbinds per GET; %s\n",
		nOLTs, latency, workers, reps, k, natsNote)
	fmt.Fprintf(w, "%-46s %9s %8s %11s %14s %8s %8s %12s\n", "", "varbinds", "wall s", "varbinds/s", "varbinds/CPU-s", "rate x", "CPU x", "NATS CPU-s")
	base := map[string]row{}
	for _, r := range rows {
		kind := strings.SplitN(r.name, ":", 2)[0]
		if _, ok := base[kind]; !ok {
			base[kind] = r
		}
		b := base[kind]
		cpu := r.cpu + r.children
		vbps := float64(r.varbinds) / r.wall.Seconds()
		perCPU := float64(r.varbinds) / cpu.Seconds()
		bRate := float64(b.varbinds) / b.wall.Seconds()
		bPerCPU := float64(b.varbinds) / (b.cpu + b.children).Seconds()
		fmt.Fprintf(w, "%-46s %9d %8.2f %11.0f %14.0f %7.2fx %7.2fx %12.2f\n", r.name, r.varbinds, r.wall.Seconds(), vbps, perCPU,
			vbps/bRate, bPerCPU/perCPU, r.natsCPU.Seconds())
	}
	fmt.Fprintln(w, "rate x: varbinds/s over the first raw gosnmp row of its kind; CPU x: CPU per varbind over that row's (lower is better);")
	fmt.Fprintln(w, "CPU: this process only (the poller or the raw client) or, for net-snmp, its processes; NATS CPU: the nats-server process")
}

// netSNMPVarbinds counts the varbinds of net-snmp output with -On -Oq:
// lines that begin with an OID (a long hex string continues on lines of
// its own).
func netSNMPVarbinds(out []byte) int64 {
	var n int64
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, ".") {
			n++
		}
	}
	return n
}

// freeUDPRange finds n consecutive free UDP ports on 127.0.0.1.
func freeUDPRange(t *testing.T, n int) int {
	t.Helper()
	for base := 20000 + (os.Getpid()%200)*100; base < 60000; base += 997 {
		ok := true
		var held []net.PacketConn
		for i := 0; i < n && ok; i++ {
			c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			held = append(held, c)
		}
		for _, c := range held {
			_ = c.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free UDP port range")
	return 0
}

// startNATS runs the nats-server of the module graph (the version the
// embedded server is, built here) as a process (pid > 0); if it cannot be
// built, an embedded server (its CPU is then this process's).
func startNATS(t *testing.T, ctx context.Context, dir string) (url string, pid int, note string) {
	t.Helper()
	bin := filepath.Join(dir, "nats-server")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Logf("build nats-server: %v\n%s", err, out)
		env := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage})
		return env.URL, 0, "NATS embedded (its CPU counts in this process's)"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.CommandContext(ctx, bin, "-js", "-sd", filepath.Join(dir, "nats"), "-a", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url = fmt.Sprintf("nats://127.0.0.1:%d", port)
	waitFor(t, 30*time.Second, "nats-server", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	return url, cmd.Process.Pid, "nats-server as a process"
}

// pidCPU is the user+system CPU of process pid so far (0 for pid 0).
func pidCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	// Fields after the command's closing parenthesis: state is field 3,
	// utime 14, stime 15.
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0
	}
	fs := strings.Fields(line[i+1:])
	if len(fs) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(fs[11], 10, 64)
	s, _ := strconv.ParseInt(fs[12], 10, 64)
	return time.Duration(u+s) * time.Second / 100 // USER_HZ 100
}
