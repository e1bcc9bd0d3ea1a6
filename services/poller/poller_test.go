package poller

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

func TestPollsEveryONUColumnOfAHuaweiOLT(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 2, BatchSize: 50})
	node := e.nodeDue("olt-a", "exec-1", "job-disc")
	e.publishNodeDue(t, node)

	ev := e.waitEnded(t, "olt-a", "exec-1", 30*time.Second)
	if len(ev.failed) > 0 {
		t.Fatalf("execution failed: %+v", ev.failed[0])
	}
	if len(ev.started) != 1 || len(ev.succeeded) != 1 {
		t.Fatalf("events: %d started, %d succeeded", len(ev.started), len(ev.succeeded))
	}
	st, ok := ev.started[0], ev.succeeded[0]
	if st.Attempt != 1 || st.PollerID != "p1" || st.LeaseRevision == 0 || ok.LeaseRevision != st.LeaseRevision {
		t.Fatalf("started %+v succeeded %+v", st, ok)
	}

	onus := e.fleet.OLT("olt-a").ONUs()
	if len(onus) != 32 {
		t.Fatalf("ground truth has %d ONUs", len(onus))
	}
	batches := e.batches(t, "olt-a", "exec-1")
	got := map[string]streams.Varbind{}
	for i, b := range batches {
		if b.Batch != i+1 || b.LeaseRevision != st.LeaseRevision || b.BrandID != "huawei" || b.IndexScheme != "pon.onu" || len(b.Columns) != len(huaweiColumns) {
			t.Fatalf("batch %d header: %+v", i, b)
		}
		if b.Last != (i == len(batches)-1) {
			t.Fatalf("batch %d of %d: last=%v, only the final batch is last", b.Batch, len(batches), b.Last)
		}
		if b.VarbindCount() > 50 || len(b.Varbinds) != 0 {
			t.Fatalf("batch %d has %d varbinds (%d outside rows), batch size 50", b.Batch, b.VarbindCount(), len(b.Varbinds))
		}
		// Whole rows: every column of an ONU in one batch.
		for _, r := range b.Rows {
			if len(r.Values) != len(huaweiColumns) {
				t.Fatalf("batch %d row %s has %d values, want one per column", b.Batch, r.Index, len(r.Values))
			}
		}
		for _, vb := range b.AllVarbinds() {
			got[vb.OID] = vb
		}
	}
	want := len(onus) * len(huaweiColumns)
	perBatch := 50 / len(huaweiColumns) // whole rows of 4 in batches of at most 50
	if len(got) != want || ok.Varbinds != want || ok.Batches != len(batches) || len(batches) != (len(onus)+perBatch-1)/perBatch {
		t.Fatalf("%d distinct varbinds, succeeded says %d in %d batches (%d published), want %d", len(got), ok.Varbinds, ok.Batches, len(batches), want)
	}
	for _, onu := range onus {
		check := func(col, typ, value string) {
			t.Helper()
			oid := huaweiBase + col + "." + onu.Index
			vb, found := got[oid]
			if !found {
				t.Errorf("ONU %s: %s missing", onu.Index, oid)
				return
			}
			if vb.Type != typ || vb.Value != value {
				t.Errorf("ONU %s: %s = %s %q, want %s %q", onu.Index, oid, vb.Type, vb.Value, typ, value)
			}
		}
		serialRaw, err := hex.DecodeString(onu.Serial[4:])
		if err != nil {
			t.Fatal(err)
		}
		check(".43.1.3", streams.VTOctetString, hex.EncodeToString(append([]byte(onu.Serial[:4]), serialRaw...)))
		check(".43.1.9", streams.VTOctetString, hex.EncodeToString([]byte(onu.Description)))
		status, rx := "2", "2147483647"
		if onu.Online {
			status, rx = "1", strconv.Itoa(int(math.Round(onu.RxPowerDBm*100)))
		}
		check(".46.1.15", streams.VTInteger, status)
		check(".51.1.4", streams.VTInteger, rx)
	}
	waitFor(t, 10*time.Second, "lease release", func() bool {
		_, held := e.leaseHolder(t, "olt-a")
		return !held
	})
	e.assertNoCommunityAnywhere(t)
}

// Two pollers, one OLT, two jobs due at once: the lease must serialise the
// operations, so the OLT never sees two requests in flight.
func TestLeaseSerialisesOperationsOnOneOLT(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{Latency: 3 * time.Millisecond}))
	olt := e.fleet.OLT("olt-a")
	// Small GETBULKs make each walk long (about 70 requests), so the two
	// jobs are surely due while the other one runs.
	cfg := Config{Workers: 2, LeaseBusyDelay: 100 * time.Millisecond, MaxRepetitions: 2}

	t.Run("without the lease walks overlap", func(t *testing.T) {
		// The control: the same two walks run directly, without the
		// lease, do overlap on the OLT. Otherwise the assertion below
		// would prove nothing.
		olt.ResetRecord()
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				node := e.nodeDue("olt-a", fmt.Sprint("direct-", i), "job")
				op := snmpOp{cfg: cfg.WithDefaults(), target: node.Target, community: testCommunity}
				<-start
				errs[i] = op.run(context.Background(), node.Kind, node.OIDs, func(streams.Varbind) error { return nil })
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if mc := olt.Record().MaxConcurrent; mc < 2 {
			t.Fatalf("direct walks: max concurrent %d, want >= 2 (control failed)", mc)
		}
	})

	olt.ResetRecord()
	cfgA, cfgB := cfg, cfg
	cfgA.PollerID, cfgB.PollerID = "poller-a", "poller-b"
	_, regA := e.startPoller(t, cfgA)
	_, regB := e.startPoller(t, cfgB)
	e.publishNodeDue(t, e.nodeDue("olt-a", "exec-1", "job-serial"))
	e.publishNodeDue(t, e.nodeDue("olt-a", "exec-2", "job-status"))

	ev1 := e.waitEnded(t, "olt-a", "exec-1", 60*time.Second)
	ev2 := e.waitEnded(t, "olt-a", "exec-2", 60*time.Second)
	for i, ev := range []execEvents{ev1, ev2} {
		if len(ev.succeeded) != 1 || len(ev.failed) != 0 || len(ev.started) != 1 || ev.started[0].Attempt != 1 {
			t.Fatalf("exec-%d: %+v", i+1, ev)
		}
	}
	if ev1.started[0].LeaseRevision == ev2.started[0].LeaseRevision {
		t.Fatal("two executions under the same lease revision")
	}
	rec := olt.Record()
	if rec.MaxConcurrent != 1 {
		t.Fatalf("OLT saw %d requests in flight at once, want 1 (requests %d)", rec.MaxConcurrent, rec.Requests)
	}
	busy := counter(t, regA, "facho_poller_lease_busy_total") + counter(t, regB, "facho_poller_lease_busy_total")
	if busy < 1 {
		t.Fatal("no NodeDue ever found the OLT busy: the jobs did not contend")
	}
	t.Logf("pollers %s and %s; lease busy %v times; OLT requests %d, max concurrent %d",
		ev1.started[0].PollerID, ev2.started[0].PollerID, busy, rec.Requests, rec.MaxConcurrent)
}

func TestMalformedNodeDueGoesToDeadLetters(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1})

	e.publishRaw(t, streams.SubjectNodeDue("olt-a"), []byte("this is not json"))
	noOIDs := e.nodeDue("olt-a", "exec-bad", "job")
	noOIDs.OIDs = nil
	e.publishNodeDue(t, noOIDs)
	badOLT := e.nodeDue("olt-a", "exec-bad-olt", "job")
	badOLT.OLTID = "olt.*"
	b, err := streams.EncodeWithID("bad-olt", "test", time.Now(), badOLT)
	if err != nil {
		t.Fatal(err)
	}
	e.publishRaw(t, streams.SubjectNodeDue("olt-a"), b)
	// A NodeDue of olt-b on olt-a's subject: refused (streams.CheckSubject).
	other := e.nodeDue("olt-a", "exec-other", "job")
	other.OLTID = "olt-b"
	otherOLT, err := streams.EncodeWithID("other-olt", "test", time.Now(), other)
	if err != nil {
		t.Fatal(err)
	}
	e.publishRaw(t, streams.SubjectNodeDue("olt-a"), otherOLT)
	e.publishNodeDue(t, e.nodeDue("olt-a", "exec-good", "job"))

	ev := e.waitEnded(t, "olt-a", "exec-good", 30*time.Second)
	if len(ev.succeeded) != 1 {
		t.Fatalf("good node after bad ones: %+v", ev)
	}
	var dls []streams.DeadLetter
	waitFor(t, 10*time.Second, "four dead letters", func() bool {
		dls = dls[:0]
		for _, m := range e.streamMsgs(t, streams.StreamDLQ, streams.SubjectDLQ(streams.ConsumerPoller)) {
			_, dl, err := streams.Decode[streams.DeadLetter](m.Data)
			if err != nil {
				t.Fatal(err)
			}
			dls = append(dls, dl)
		}
		return len(dls) >= 4
	})
	if len(dls) != 4 {
		t.Fatalf("%d dead letters, want 4", len(dls))
	}
	for _, dl := range dls {
		if dl.Consumer != streams.ConsumerPoller || dl.Stream != streams.StreamSchedule || !strings.Contains(dl.Reason, "malformed") || dl.PayloadSize == 0 || dl.PayloadSHA256 == "" {
			t.Errorf("dead letter %+v", dl)
		}
	}
	// Workers handle them in parallel: find each by its reason.
	byReason := func(what string) streams.DeadLetter {
		for _, dl := range dls {
			if strings.Contains(dl.Reason, what) {
				return dl
			}
		}
		t.Errorf("no dead letter says %q: %+v", what, dls)
		return streams.DeadLetter{}
	}
	byReason("envelope")
	byReason("no oids")
	byReason(`olt_id "olt.*"`)
	if dl := byReason(`olt_id "olt-b" does not match the subject`); dl.ExecutionID != "exec-other" || dl.OLTID != "olt-b" || dl.OriginalType != streams.TypeNodeDue {
		t.Errorf("dead letter of a parseable envelope lacks its ids: %+v", dl)
	}
	if ev := e.execEvents(t, "olt-b", "exec-other"); len(ev.started) != 0 {
		t.Fatalf("a node due on another OLT's subject started: %+v", ev)
	}
	if ev := e.execEvents(t, "olt-a", "exec-bad"); len(ev.started) != 0 {
		t.Fatalf("a malformed node started: %+v", ev)
	}
}

func TestUnreachableOLTFailsWithTimeout(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-dead", oltsim.Faults{NoAnswer: true}))
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, SNMPTimeout: 200 * time.Millisecond, SNMPRetries: -1})
	e.publishNodeDue(t, e.nodeDue("olt-dead", "exec-1", "job"))

	ev := e.waitEnded(t, "olt-dead", "exec-1", 30*time.Second)
	if len(ev.failed) != 1 || len(ev.succeeded) != 0 {
		t.Fatalf("events %+v", ev)
	}
	f := ev.failed[0]
	if !strings.Contains(f.Error, "timeout") || strings.Contains(f.Error, testCommunity) || f.Attempt != 1 || !f.Retryable {
		t.Fatalf("failed event %+v", f)
	}
	if n := len(e.batches(t, "olt-dead", "exec-1")); n != 0 {
		t.Fatalf("%d batches from a dead OLT", n)
	}
	// Acknowledged (the planner owns retries) and the lease released.
	cons, err := e.JS.Consumer(e.ctx, streams.StreamSchedule, streams.ConsumerPoller)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "ack and release", func() bool {
		info, err := cons.Info(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, held := e.leaseHolder(t, "olt-dead")
		return info.NumAckPending == 0 && info.NumPending == 0 && !held
	})
	e.assertNoCommunityAnywhere(t)
}

// A holder whose lease is taken away mid-walk stops: no batch after the
// loss, and the execution fails with "lease lost".
func TestLostLeaseAbortsTheWalk(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage, LeaseTTL: time.Second},
		huaweiOLT("olt-a", oltsim.Faults{Latency: 100 * time.Millisecond}))
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, BatchSize: 4, RowBufferVarbinds: 4, MaxRepetitions: 2})
	e.publishNodeDue(t, e.nodeDue("olt-a", "exec-1", "job"))

	waitFor(t, 30*time.Second, "a first batch", func() bool { return len(e.batches(t, "olt-a", "exec-1")) > 0 })
	kv, err := e.JS.KeyValue(e.ctx, streams.BucketLeases)
	if err != nil {
		t.Fatal(err)
	}
	// An intruder overwrites the key: the holder's next renewal is refused.
	if _, err := kv.Put(e.ctx, "olt.olt-a", []byte(`{"holder":"intruder"}`)); err != nil {
		t.Fatal(err)
	}
	ev := e.waitEnded(t, "olt-a", "exec-1", 30*time.Second)
	if len(ev.failed) != 1 || !strings.HasPrefix(ev.failed[0].Error, "lease lost") {
		t.Fatalf("events %+v", ev)
	}
	n := len(e.batches(t, "olt-a", "exec-1"))
	time.Sleep(500 * time.Millisecond)
	for _, b := range e.batches(t, "olt-a", "exec-1") {
		if b.Last {
			t.Fatalf("aborted walk published a last batch: %+v", b)
		}
	}
	if m := len(e.batches(t, "olt-a", "exec-1")); m != n {
		t.Fatalf("batches went on after the loss: %d then %d", n, m)
	}
	if n*4 >= len(huaweiColumns)*32 {
		t.Fatalf("walk finished (%d batches) before the loss could abort it", n)
	}
	// The stale holder did not delete the intruder's key.
	if v, held := e.leaseHolder(t, "olt-a"); !held || !strings.Contains(v, "intruder") {
		t.Fatalf("lease after loss: %q held=%v", v, held)
	}
}

// A batch is cut by bytes too, below the connection's maximum payload:
// long values (descriptions of a few hundred characters are common) in a
// batch size Validate accepts would otherwise make every walk of the OLT
// fail to publish, attempt after attempt.
func TestBatchesStayUnderTheMaxPayload(t *testing.T) {
	const rows = 3000
	desc := strings.Repeat("cliente con una descripcion larga ", 12) // 408 bytes, 816 in hex
	var rec strings.Builder
	for i := range rows {
		fmt.Fprintf(&rec, "%s.43.1.9.4194312192.%d|4|%s-%d\n", huaweiBase, i, desc, i)
	}
	path := filepath.Join(t.TempDir(), "long.snmprec")
	if err := os.WriteFile(path, []byte(rec.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, oltsim.OLTConfig{Name: "olt-long", Recording: path})
	// 3,000 ONUs on one PON: above any real port, so this test's ceiling
	// allows them (bounds.go), the payload is what it is about.
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, BatchSize: 2000, MaxRepetitions: 50, Bounds: profiles.Bounds{ONUsPerPON: profiles.MaxONUsPerPON}})
	node := e.nodeDue("olt-long", "exec-long", "job-disc")
	node.OIDs = huaweiColumns[1:2] // descriptions
	e.publishNodeDue(t, node)

	ev := e.waitEnded(t, "olt-long", "exec-long", 60*time.Second)
	if len(ev.failed) > 0 {
		t.Fatalf("execution failed: %+v", ev.failed[0])
	}
	if ev.succeeded[0].Varbinds != rows {
		t.Fatalf("succeeded with %d varbinds, want %d", ev.succeeded[0].Varbinds, rows)
	}
	limit := int(e.NC.MaxPayload())
	total := 0
	for _, m := range e.streamMsgs(t, streams.StreamVarbinds, streams.SubjectVarbinds("olt-long")) {
		if len(m.Data) > limit {
			t.Errorf("batch of %d bytes, max payload %d", len(m.Data), limit)
		}
		_, b, err := streams.Decode[streams.VarbindBatch](m.Data)
		if err != nil {
			t.Fatal(err)
		}
		total += b.VarbindCount()
	}
	if total != rows {
		t.Fatalf("%d varbinds in the batches, want %d", total, rows)
	}
}
