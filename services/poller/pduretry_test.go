package poller

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

func TestOIDCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.3.6", "1.3.6", 0},
		{".1.3.6", "1.3.6", 0},
		{"1.3.6", "1.3.6.1", -1},
		{"1.3.6.1", "1.3.6", 1},
		{"1.3.9", "1.3.10", -1}, // numeric, not text
		{"1.3.10", "1.3.9", 1},
		{"1.3.4294967296", "1.3.4294967295", 1},
		{"1.3.99999999999999999999999", "1.3.100000000000000000000000", -1}, // beyond 64 bits
		{"1.30", "1.4", 1},
		{"1.3.6.10", "1.3.6.9.5", 1},
		{"1.3.6.9.5", "1.3.6.10", -1},
		{"1.3.01.2", "1.3.1.1", 1}, // leading zeros: the same component
		{"1.3.01", "1.3.1", 0},
		{"", "1", -1},
	} {
		if got := oidCompare(tc.a, tc.b); got != tc.want {
			t.Errorf("oidCompare(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// The fast path agrees with the component by component comparison.
func TestOIDCompareFastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	oid := func() string {
		parts := make([]string, 1+rng.IntN(6))
		for i := range parts {
			parts[i] = strconv.Itoa([]int{0, 1, 2, 9, 10, 11, 99, 100, 4194304000}[rng.IntN(9)])
		}
		return strings.Join(parts, ".")
	}
	for i := 0; i < 20000; i++ {
		a, b := oid(), oid()
		if got, want := oidCompare(a, b), oidCompareSlow(a, b); got != want {
			t.Fatalf("oidCompare(%s, %s) = %d, component by component %d", a, b, got, want)
		}
	}
}

func TestRetryablePDU(t *testing.T) {
	for _, tc := range []struct {
		err  string
		want bool
	}{
		{"request timeout (after 1 retries): max retries exceeded", true},
		{"error reading from socket: read udp: connection refused", true},
		{"unable to parse response: not enough data", true},
		{"marshal: unable to marshal OID: bad", false},
		{"oid count (61) is greater than MaxOids (60)", false},
	} {
		if got := retryablePDU(errors.New(tc.err)); got != tc.want {
			t.Errorf("retryablePDU(%q) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if retryablePDU(fmt.Errorf("x: %w", context.Canceled)) {
		t.Error("a cancelled request is retried")
	}
}

// startFleet runs simulated OLTs (community testCommunity) until the test
// ends.
func startFleet(t *testing.T, olts ...oltsim.OLTConfig) *oltsim.Fleet {
	t.Helper()
	for i := range olts {
		olts[i].Listen = "127.0.0.1:0"
		olts[i].Community = testCommunity
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: olts}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })
	return fleet
}

// huaweiTruth is what a walk of huaweiColumns must read from olt: its
// simulator's ONUs, encoded as the agent encodes them.
func huaweiTruth(t *testing.T, olt *oltsim.OLT) map[string]streams.Varbind {
	t.Helper()
	want := map[string]streams.Varbind{}
	for _, onu := range olt.ONUs() {
		serialRaw, err := hex.DecodeString(onu.Serial[4:])
		if err != nil {
			t.Fatal(err)
		}
		status, rx := "2", "2147483647"
		if onu.Online {
			status, rx = "1", strconv.Itoa(int(math.Round(onu.RxPowerDBm*100)))
		}
		for col, v := range map[string][2]string{
			".43.1.3":  {streams.VTOctetString, hex.EncodeToString(append([]byte(onu.Serial[:4]), serialRaw...))},
			".43.1.9":  {streams.VTOctetString, hex.EncodeToString([]byte(onu.Description))},
			".46.1.15": {streams.VTInteger, status},
			".51.1.4":  {streams.VTInteger, rx},
		} {
			oid := huaweiBase + col + "." + onu.Index
			want[oid] = streams.Varbind{OID: oid, Type: v[0], Value: v[1]}
		}
	}
	return want
}

// walkResult is one walk of huaweiColumns through snmpOp.
type walkResult struct {
	olt      *oltsim.OLT
	varbinds []streams.Varbind
	retries  int
	err      error
}

func walkOnce(ctx context.Context, cfg Config, olt *oltsim.OLT) walkResult {
	return walkCounted(ctx, cfg, olt, newPDURetries(cfg.PDURetryBudget, nil))
}

func walkCounted(ctx context.Context, cfg Config, olt *oltsim.OLT, rt *pduRetries) walkResult {
	addr := olt.Addr()
	r := walkResult{olt: olt}
	op := snmpOp{cfg: cfg, target: streams.Target{Host: addr.IP.String(), Port: addr.Port}, community: testCommunity, retries: rt}
	r.err = op.run(ctx, streams.KindBulkWalk, huaweiColumns, func(vb streams.Varbind) error {
		r.varbinds = append(r.varbinds, vb)
		return nil
	})
	r.retries = rt.count()
	return r
}

// sameAsTruth says how a walk differs from the truth: "" when it read
// every row once with its value.
func sameAsTruth(got []streams.Varbind, want map[string]streams.Varbind) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d varbinds, truth has %d", len(got), len(want))
	}
	for _, vb := range got {
		if w, ok := want[vb.OID]; !ok || w != vb {
			return fmt.Sprintf("%+v, truth %+v", vb, w)
		}
	}
	return ""
}

// The case: 30 % loss, one SNMP retry, a 52-request walk. Without
// PDU retries it almost never completes; with them it completes every
// time, with every row of the simulator's truth read once.
func TestLossyOLTWalkCompletesWithPDURetries(t *testing.T) {
	const olts, runsPerOLT = 4, 5
	var cfgs []oltsim.OLTConfig
	for i := range olts {
		c := huaweiOLT(fmt.Sprint("lossy-", i), oltsim.Faults{LossPercent: 30})
		c.Seed = int64(i + 1)
		c.Shape = oltsim.Shape{Slots: 1, PortsPerSlot: 8, ONUsPerPort: 16} // 128 ONUs: 13 GETBULKs per column
		cfgs = append(cfgs, c)
	}
	fleet := startFleet(t, cfgs...)
	base := Config{SNMPTimeout: 100 * time.Millisecond, SNMPRetries: 1, PDUBackoff: 10 * time.Millisecond}

	// Requests a walk needs without loss.
	olt0 := fleet.OLT("lossy-0")
	olt0.SetFaults(oltsim.Faults{})
	if r := walkOnce(context.Background(), base.WithDefaults(), olt0); r.err != nil {
		t.Fatal(r.err)
	}
	needed := olt0.Record().Requests
	olt0.SetFaults(oltsim.Faults{LossPercent: 30})
	t.Logf("a walk of %d columns needs %d GETBULKs", len(huaweiColumns), needed)

	// runAll walks every OLT runsPerOLT times (OLTs in parallel).
	runAll := func(cfg Config) []walkResult {
		var mu sync.Mutex
		var out []walkResult
		var wg sync.WaitGroup
		for i := range olts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range runsPerOLT {
					r := walkOnce(context.Background(), cfg, fleet.OLT(fmt.Sprint("lossy-", i)))
					mu.Lock()
					out = append(out, r)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return out
	}

	before := base
	before.PDURetries = -1
	completed := 0
	for _, r := range runAll(before.WithDefaults()) {
		if r.err == nil {
			completed++
		} else if !strings.Contains(r.err.Error(), "timeout") {
			t.Errorf("without pdu retries a walk failed otherwise than by timeout: %v", r.err)
		}
	}
	fmt.Printf("30%% loss, 1 SNMP retry, %d-request walk: %d/%d walks complete without PDU retries\n", needed, completed, olts*runsPerOLT)

	after := base.WithDefaults() // PDU retries 4, budget 100
	completed = 0
	total, most := 0, 0
	for i, r := range runAll(after) {
		if r.err != nil {
			t.Errorf("run %d: walk failed after %d pdu retries: %v", i, r.retries, r.err)
			continue
		}
		if diff := sameAsTruth(r.varbinds, huaweiTruth(t, r.olt)); diff != "" {
			t.Errorf("run %d: %s", i, diff)
			continue
		}
		completed++
		total += r.retries
		most = max(most, r.retries)
	}
	fmt.Printf("30%% loss, 1 SNMP retry, %d-request walk: %d/%d walks complete with %d PDU retries (%d PDU retries in all, at most %d in one walk)\n",
		needed, completed, olts*runsPerOLT, after.PDURetries, total, most)
	if total == 0 {
		t.Error("20 walks at 30 % loss and not one PDU retry counted")
	}
}

// The count is exact and the walk resumes where it was: with no SNMP
// retries each try is one UDP request, so every request the OLT saw beyond
// those a lossless walk needs is a counted PDU retry. A walk that started
// over would send far more, and read rows twice.
func TestPDURetriesAreCountedAndTheWalkResumes(t *testing.T) {
	c := huaweiOLT("lossy", oltsim.Faults{})
	c.Shape = oltsim.Shape{Slots: 1, PortsPerSlot: 8, ONUsPerPort: 16}
	fleet := startFleet(t, c)
	olt := fleet.OLT("lossy")
	cfg := Config{SNMPTimeout: 100 * time.Millisecond, SNMPRetries: -1, PDURetries: 10, PDUBackoff: time.Millisecond}.WithDefaults()
	if r := walkOnce(context.Background(), cfg, olt); r.err != nil || r.retries != 0 {
		t.Fatalf("lossless walk: %d retries, %v", r.retries, r.err)
	}
	needed := olt.Record().Requests
	truth := huaweiTruth(t, olt)

	for _, loss := range []float64{10, 30} {
		t.Run(fmt.Sprint(loss, "% loss"), func(t *testing.T) {
			olt.SetFaults(oltsim.Faults{LossPercent: loss})
			olt.ResetRecord()
			r := walkOnce(context.Background(), cfg, olt)
			if r.err != nil {
				t.Fatalf("walk failed after %d pdu retries: %v", r.retries, r.err)
			}
			if diff := sameAsTruth(r.varbinds, truth); diff != "" {
				t.Fatal(diff)
			}
			rec := olt.Record()
			if r.retries != rec.Requests-needed || r.retries == 0 {
				t.Fatalf("%d pdu retries counted; the OLT saw %d requests (%d dropped), a lossless walk needs %d", r.retries, rec.Requests, rec.Dropped, needed)
			}
			fmt.Printf("%v%% loss: %d requests (%d dropped) for a %d-request walk, %d PDU retries\n", loss, rec.Requests, rec.Dropped, needed, r.retries)
		})
	}
}

// A silent OLT still fails, after a bounded number of requests:
// (1+PDURetries) x (1+SNMPRetries) for the first GETBULK, or fewer when the
// execution's budget runs out first.
func TestSilentOLTFailsWithinItsBound(t *testing.T) {
	fleet := startFleet(t, huaweiOLT("silent", oltsim.Faults{NoAnswer: true}))
	olt := fleet.OLT("silent")
	for _, tc := range []struct {
		name         string
		cfg          Config
		wantRetries  int
		wantRequests int
		wantText     string
	}{
		{"pdu retries", Config{PDURetries: 3}, 3, 4 * 2, "no answer after 3 pdu retries"},
		{"budget", Config{PDURetries: 3, PDURetryBudget: 2}, 2, 3 * 2, "pdu retry budget of 2 per execution spent"},
		{"none", Config{PDURetries: -1}, 0, 2, "no answer after 0 pdu retries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.SNMPTimeout, cfg.SNMPRetries, cfg.PDUBackoff = 100*time.Millisecond, 1, 10*time.Millisecond
			cfg = cfg.WithDefaults()
			olt.ResetRecord()
			start := time.Now()
			r := walkOnce(context.Background(), cfg, olt)
			took := time.Since(start)
			if r.err == nil || !isTimeout(r.err) || !strings.Contains(r.err.Error(), tc.wantText) {
				t.Fatalf("err = %v, want a timeout saying %q", r.err, tc.wantText)
			}
			if rec := olt.Record(); r.retries != tc.wantRetries || rec.Requests != tc.wantRequests || len(r.varbinds) != 0 {
				t.Fatalf("%d pdu retries, %d requests, %d varbinds; want %d retries, %d requests", r.retries, rec.Requests, len(r.varbinds), tc.wantRetries, tc.wantRequests)
			}
			fmt.Printf("silent OLT, %s: failed after %d requests in %s: %v\n", tc.name, tc.wantRequests, took.Round(time.Millisecond), r.err)
		})
	}
}

// Cancelling the walk (lease lost, node timeout, shutdown) ends it during
// a backoff too, with the cancellation's cause.
func TestCancelEndsTheBackoff(t *testing.T) {
	fleet := startFleet(t, huaweiOLT("silent", oltsim.Faults{NoAnswer: true}))
	olt := fleet.OLT("silent")
	cfg := Config{SNMPTimeout: 50 * time.Millisecond, SNMPRetries: -1, PDURetries: 10, PDUBackoff: maxPDUBackoff}.WithDefaults()
	errStop := errors.New("lease lost: test")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	reg := prometheus.NewRegistry()
	retried := prometheus.NewCounter(prometheus.CounterOpts{Name: "retried"})
	reg.MustRegister(retried)
	done := make(chan walkResult, 1)
	go func() { done <- walkCounted(ctx, cfg, olt, newPDURetries(cfg.PDURetryBudget, retried)) }()
	// The first request timed out and is to be retried: the walk now
	// waits maxPDUBackoff.
	waitFor(t, 10*time.Second, "a first pdu retry", func() bool { return counter(t, reg, "retried") >= 1 })
	cancel(errStop)
	select {
	case r := <-done:
		if !errors.Is(r.err, errStop) {
			t.Fatalf("err = %v, want the cancellation cause", r.err)
		}
		if n := olt.Record().Requests; n != 1 {
			t.Fatalf("%d requests after a cancel during the first backoff", n)
		}
	case <-time.After(5 * time.Second): // only bounds a hang: the backoff is 10s
		t.Fatal("the walk did not end when cancelled during its backoff")
	}
}

// Through the whole poller: a lossy OLT's execution succeeds with every
// row, and the metric counts its PDU retries exactly.
func TestLossyOLTExecutionSucceeds(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-lossy", oltsim.Faults{}))
	olt := e.fleet.OLT("olt-lossy")
	cfg := Config{PollerID: "p1", Workers: 1, SNMPTimeout: 100 * time.Millisecond, SNMPRetries: -1, PDURetries: 10, PDUBackoff: 5 * time.Millisecond}
	if r := walkOnce(context.Background(), cfg.WithDefaults(), olt); r.err != nil {
		t.Fatal(r.err)
	}
	needed := olt.Record().Requests
	olt.SetFaults(oltsim.Faults{LossPercent: 30})
	olt.ResetRecord()

	_, reg := e.startPoller(t, cfg)
	e.publishNodeDue(t, e.nodeDue("olt-lossy", "exec-lossy", "job"))
	ev := e.waitEnded(t, "olt-lossy", "exec-lossy", 60*time.Second)
	if len(ev.failed) > 0 || len(ev.succeeded) != 1 {
		t.Fatalf("events %+v", ev)
	}
	var got []streams.Varbind
	for _, b := range e.batches(t, "olt-lossy", "exec-lossy") {
		got = append(got, b.AllVarbinds()...)
	}
	if diff := sameAsTruth(got, huaweiTruth(t, olt)); diff != "" {
		t.Fatal(diff)
	}
	retries := int(counter(t, reg, "facho_poller_snmp_pdu_retries_total"))
	if rec := olt.Record(); retries != rec.Requests-needed || retries == 0 {
		t.Fatalf("metric counts %d pdu retries; the OLT saw %d requests, a lossless walk needs %d", retries, rec.Requests, needed)
	}
	e.assertNoCommunityAnywhere(t)
}

// A get retries its lost chunks the same way: every instance read once,
// each lost GET counted.
func TestLossyGetRetriesItsChunks(t *testing.T) {
	fleet := startFleet(t, huaweiOLT("lossy", oltsim.Faults{LossPercent: 30}))
	olt := fleet.OLT("lossy")
	var oids []streams.OIDSpec
	want := map[string]string{}
	for _, onu := range olt.ONUs() {
		oid := huaweiBase + ".46.1.15." + onu.Index
		oids = append(oids, streams.OIDSpec{ID: "hw-status", OID: oid, Field: streams.FieldStatus})
		want[oid] = map[bool]string{true: "1", false: "2"}[onu.Online]
	}
	cfg := Config{SNMPTimeout: 100 * time.Millisecond, SNMPRetries: -1, PDURetries: 10, PDUBackoff: time.Millisecond, GetChunk: 4}.WithDefaults()
	addr := olt.Addr()
	rt := newPDURetries(cfg.PDURetryBudget, nil)
	op := snmpOp{cfg: cfg, target: streams.Target{Host: addr.IP.String(), Port: addr.Port}, community: testCommunity, retries: rt}
	olt.ResetRecord()
	got := map[string]string{}
	n := 0
	err := op.run(context.Background(), streams.KindGet, oids, func(vb streams.Varbind) error {
		got[vb.OID] = vb.Value
		n++
		return nil
	})
	if err != nil {
		t.Fatalf("get failed after %d pdu retries: %v", rt.count(), err)
	}
	if n != len(oids) || len(got) != len(want) {
		t.Fatalf("%d varbinds (%d distinct) for %d oids", n, len(got), len(oids))
	}
	for oid, v := range want {
		if got[oid] != v {
			t.Errorf("%s = %q, want %q", oid, got[oid], v)
		}
	}
	chunks := (len(oids) + cfg.GetChunk - 1) / cfg.GetChunk
	if rec := olt.Record(); rt.count() != rec.Requests-chunks || rt.count() == 0 {
		t.Fatalf("%d pdu retries counted; the OLT saw %d requests for %d chunks", rt.count(), rec.Requests, chunks)
	}
}
