package poller

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// publishDiscovered publishes, as the projector does, onu.changed
// "discovered" for each ONU of onus.
func (e *testEnv) publishDiscovered(t testing.TB, olt string, onus []oltsim.ONU) {
	t.Helper()
	e.publishChange(t, olt, streams.ONUDiscovered, onus)
}

// publishChange publishes, as the projector does, onu.changed of kind
// change for each ONU of onus.
func (e *testEnv) publishChange(t testing.TB, olt, change string, onus []oltsim.ONU) {
	t.Helper()
	// Published together, as the projector's outbox publishes a batch's
	// events, not one round trip apart.
	var acks []jetstream.PubAckFuture
	for _, o := range onus {
		ev := streams.ONUChanged{OLTID: olt, PonIndex: o.PonIndex, ONUID: int64(o.ID), Change: change,
			Current: streams.ONUState{Serial: o.Serial}, ExecutionID: "discovery", ObservedAt: time.Now().UTC()}
		b, err := streams.Encode("test", time.Now(), ev)
		if err != nil {
			t.Fatal(err)
		}
		f, err := e.JS.PublishAsync(streams.SubjectONU(olt, change), b)
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, f)
	}
	for _, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatal(err)
		case <-time.After(30 * time.Second):
			t.Fatal("publish of onu changes not acknowledged")
		}
	}
}

// truth reads cols at every ONU of olt straight from the simulator (one
// GET per varbind, no faults), in the contract's raw form.
func truth(t *testing.T, olt *oltsim.OLT, onus []oltsim.ONU, cols []streams.OIDSpec) map[string]streams.Varbind {
	t.Helper()
	g := &gosnmp.GoSNMP{Target: olt.Addr().IP.String(), Port: uint16(olt.Addr().Port), Community: testCommunity,
		Version: gosnmp.Version2c, Timeout: 2 * time.Second, Retries: 2}
	if err := g.Connect(); err != nil {
		t.Fatal(err)
	}
	defer g.Conn.Close()
	faults := olt.Faults()
	olt.SetFaults(oltsim.Faults{})
	defer olt.SetFaults(faults)
	out := map[string]streams.Varbind{}
	for _, o := range onus {
		for _, c := range cols {
			pkt, err := g.Get([]string{c.OID + "." + o.Index})
			if err != nil || len(pkt.Variables) != 1 {
				t.Fatalf("truth %s.%s: %v", c.OID, o.Index, err)
			}
			vb := toVarbind(pkt.Variables[0])
			out[vb.OID] = vb
		}
	}
	return out
}

// getRun is one get execution as a test sees it.
type getOutcome struct {
	succeeded streams.ExecutionSucceeded
	varbinds  map[string]streams.Varbind
	count     int // varbinds published, duplicates included
	record    oltsim.Record
}

func (e *testEnv) runGet(t *testing.T, olt, execID string, cols []streams.OIDSpec, tuning streams.SNMPTuning) getOutcome {
	t.Helper()
	node := e.nodeDue(olt, execID, "job-get")
	node.Kind = streams.KindGet
	node.OIDs = cols
	node.SNMP = tuning
	sim := e.fleet.OLT(olt)
	sim.ResetRecord()
	e.publishNodeDue(t, node)
	ev := e.waitEnded(t, olt, execID, 60*time.Second)
	if len(ev.succeeded) != 1 {
		t.Fatalf("get %s: %+v", execID, ev)
	}
	out := getOutcome{succeeded: ev.succeeded[0], varbinds: map[string]streams.Varbind{}, record: sim.Record()}
	for _, b := range e.batches(t, olt, execID) {
		if b.Last {
			t.Errorf("get batch %d is marked last: a get reads no table", b.Batch)
		}
		for _, vb := range b.AllVarbinds() {
			out.varbinds[vb.OID] = vb
			out.count++
		}
	}
	return out
}

func (e *testEnv) rememberedSize(t *testing.T, olt string) int {
	t.Helper()
	kv, err := e.JS.KeyValue(e.ctx, streams.BucketOLTSNMP)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(e.ctx, streams.KeyGetSizes(olt))
	if err != nil {
		t.Fatalf("remembered get size of %s: %v", olt, err)
	}
	var gs streams.GetSizes
	if err := json.Unmarshal(entry.Value(), &gs); err != nil {
		t.Fatal(err)
	}
	return gs.Varbinds
}

// A get reads its columns at every discovered ONU: exactly the
// simulator's values, each once, in PDUs of the configured size, and the
// ONU set comes from the discovered events alone (an ONU the OLT has but
// nobody discovered is not read).
func TestGetReadsEveryDiscoveredONU(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	sim := e.fleet.OLT("olt-a")
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, GetChunk: 8, GetConcurrency: 1})
	all := sim.ONUs()
	known := all[:len(all)-2]
	e.publishDiscovered(t, "olt-a", known)
	e.publishDiscovered(t, "olt-a", known[:3]) // rediscovered: still once

	got := e.runGet(t, "olt-a", "exec-get-1", huaweiColumns, streams.SNMPTuning{})
	want := truth(t, sim, known, huaweiColumns)
	if got.count != len(want) || len(got.varbinds) != len(want) {
		t.Fatalf("%d varbinds (%d distinct), want %d", got.count, len(got.varbinds), len(want))
	}
	for oid, vb := range want {
		if got.varbinds[oid] != vb {
			t.Errorf("%s = %+v, want %+v", oid, got.varbinds[oid], vb)
		}
	}
	s := got.succeeded
	if s.ONUs != len(known) || s.FailedONUs != 0 || s.FailedVarbinds != 0 || s.Varbinds != len(want) {
		t.Errorf("succeeded %+v", s)
	}
	if pdus := (len(want) + 7) / 8; got.record.Requests != pdus || got.record.MaxConcurrent != 1 {
		t.Errorf("record %+v, want %d requests one at a time", got.record, pdus)
	}
	if n := e.rememberedSize(t, "olt-a"); n != 8 {
		t.Errorf("remembered size %d, want 8", n)
	}

	// A second get folds only the new events (the snapshot in the KV
	// bucket holds the rest) and reads the ONUs discovered since.
	e.publishDiscovered(t, "olt-a", all[len(all)-2:])
	got = e.runGet(t, "olt-a", "exec-get-2", huaweiColumns[:1], streams.SNMPTuning{})
	if got.succeeded.ONUs != len(all) || len(got.varbinds) != len(all) {
		t.Errorf("second get read %d varbinds of %d ONUs, want %d", len(got.varbinds), got.succeeded.ONUs, len(all))
	}

	// ONUs a complete walk found removed are no longer read; one
	// discovered again is.
	e.publishChange(t, "olt-a", streams.ONURemoved, all[:3])
	e.publishDiscovered(t, "olt-a", all[:1])
	got = e.runGet(t, "olt-a", "exec-get-3", huaweiColumns[:1], streams.SNMPTuning{})
	if got.succeeded.ONUs != len(all)-2 || len(got.varbinds) != len(all)-2 {
		t.Errorf("get after removals read %d varbinds of %d ONUs, want %d", len(got.varbinds), got.succeeded.ONUs, len(all)-2)
	}
	for _, o := range all[1:3] {
		if _, read := got.varbinds[huaweiColumns[0].OID+"."+o.Index]; read {
			t.Errorf("removed onu %s read", o.Index)
		}
	}
	// Each get's consumer of FACHO_ONU is gone with it: left to the
	// inactivity threshold, a fleet's gets reach the server's consumer
	// limit.
	st, err := e.JS.Stream(context.Background(), streams.StreamONU)
	if err != nil {
		t.Fatal(err)
	}
	// (Durable consumers of other services, e.g. the alerter's, stay.)
	ephemeral := 0
	lister := st.ListConsumers(context.Background())
	for ci := range lister.Info() {
		if ci.Config.Durable == "" {
			ephemeral++
		}
	}
	if err := lister.Err(); err != nil || ephemeral != 0 {
		t.Errorf("FACHO_ONU ephemeral consumers after 3 gets: %d (err %v), want 0", ephemeral, err)
	}
}

// Faults: whatever the OLT does, every (ONU, OID) is either read, with the
// simulator's value, or listed failed for its ONU; nothing is lost and the
// poller does not crash.
func TestGetUnderFaults(t *testing.T) {
	tests := []struct {
		name     string
		faults   oltsim.Faults
		maxBytes int
		cfg      Config
		tuning   streams.SNMPTuning
		check    func(t *testing.T, got getOutcome, remembered int)
	}{
		{
			name:   "30% loss",
			faults: oltsim.Faults{LossPercent: 30},
			cfg:    Config{GetChunk: 10, GetConcurrency: 2},
			check: func(t *testing.T, got getOutcome, _ int) {
				if got.record.Dropped == 0 {
					t.Errorf("no request lost: %+v", got.record)
				}
			},
		},
		{
			name:   "latency, 4 PDUs in flight",
			faults: oltsim.Faults{Latency: 20 * time.Millisecond},
			tuning: streams.SNMPTuning{GetVarbinds: 4, GetConcurrency: 4},
			check: func(t *testing.T, got getOutcome, remembered int) {
				if got.record.MaxConcurrent > 4 || got.record.MaxConcurrent < 2 {
					t.Errorf("max concurrent %d, want 2..4", got.record.MaxConcurrent)
				}
				if remembered != 4 {
					t.Errorf("remembered %d, want the brand's 4", remembered)
				}
			},
		},
		{
			name:   "an OLT that takes no concurrency",
			faults: oltsim.Faults{Latency: 5 * time.Millisecond},
			cfg:    Config{GetConcurrency: 4},
			tuning: streams.SNMPTuning{GetConcurrency: 1},
			check: func(t *testing.T, got getOutcome, _ int) {
				if got.record.MaxConcurrent != 1 {
					t.Errorf("max concurrent %d, want 1 (the OLT's tuning)", got.record.MaxConcurrent)
				}
			},
		},
		{
			name:     "small max response size: tooBig",
			maxBytes: 400,
			cfg:      Config{GetChunk: 40, GetConcurrency: 2},
			check: func(t *testing.T, got getOutcome, remembered int) {
				if remembered >= 40 || remembered < 1 {
					t.Errorf("remembered %d, want below the tooBig 40", remembered)
				}
			},
		},
		{
			name:   "times out above 6 varbinds",
			faults: oltsim.Faults{MaxVarbinds: 6},
			cfg:    Config{GetChunk: 20, GetConcurrency: 2},
			check: func(t *testing.T, got getOutcome, remembered int) {
				if remembered > 6 {
					t.Errorf("remembered %d, want at most 6", remembered)
				}
				if got.record.Dropped == 0 {
					t.Errorf("no PDU above 6 varbinds was sent: %+v", got.record)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := huaweiOLT("olt-f", tc.faults)
			cfg.MaxResponseBytes = tc.maxBytes
			e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, cfg)
			sim := e.fleet.OLT("olt-f")
			pc := tc.cfg
			pc.PollerID, pc.Workers = "p1", 1
			pc.SNMPTimeout, pc.SNMPRetries = 150*time.Millisecond, 1
			pc.PDUBackoff, pc.PDURetries = 5*time.Millisecond, 6
			_, _ = e.startPoller(t, pc)
			onus := sim.ONUs()
			e.publishDiscovered(t, "olt-f", onus)
			got := e.runGet(t, "olt-f", "exec-"+strings.ReplaceAll(tc.name[:4], " ", "-"), huaweiColumns, tc.tuning)
			want := truth(t, sim, onus, huaweiColumns)
			failed := map[string]bool{}
			for _, f := range got.succeeded.ONUFailures {
				for _, oid := range f.OIDs {
					failed[oid] = true
				}
			}
			for oid, vb := range want {
				if g, ok := got.varbinds[oid]; ok == failed[oid] || (ok && g != vb) {
					t.Errorf("%s: read %v (%+v), failed %v; want %+v read or failed", oid, ok, g, failed[oid], vb)
				}
			}
			if got.count != len(got.varbinds) || got.count+got.succeeded.FailedVarbinds != len(want) {
				t.Errorf("%d varbinds published (%d distinct) + %d failed, want %d", got.count, len(got.varbinds), got.succeeded.FailedVarbinds, len(want))
			}
			if got.succeeded.FailedVarbinds != 0 {
				t.Errorf("%d varbinds failed: %+v", got.succeeded.FailedVarbinds, got.succeeded.ONUFailures)
			}
			tc.check(t, got, e.rememberedSize(t, "olt-f"))
		})
	}
}

// An OID that fails even alone (here: a description too big for the
// agent's response size, which still fits a status) is a per-ONU failure:
// listed in the succeeded event, in a coordinator log, and every other OID
// is read.
func TestGetPerONUFailures(t *testing.T) {
	cfg := huaweiOLT("olt-t", oltsim.Faults{})
	cfg.Shape = oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 8}
	cols := []streams.OIDSpec{huaweiColumns[2], huaweiColumns[1]} // status, description
	// Probe a twin of the OLT for the largest answer a status GET needs,
	// which is less than any description answer: under that response
	// size the agent answers the first and tooBig the second.
	probe := startFleet(t, cfg).OLT("olt-t")
	onus := probe.ONUs()
	status, desc := 0, 1<<20
	for _, o := range onus {
		status = max(status, responseSize(t, probe, cols[0].OID+"."+o.Index))
		desc = min(desc, responseSize(t, probe, cols[1].OID+"."+o.Index))
	}
	if status >= desc {
		t.Fatalf("a status answer (%d bytes) is not smaller than a description answer (%d)", status, desc)
	}
	// The agent keeps 48 bytes + community + request id for the headers,
	// 29 more than they take: a response of n bytes fits a limit of n+29.
	t.Logf("status answers up to %d bytes, description answers from %d", status, desc)
	if desc-status < 10 {
		t.Fatalf("status answers up to %d bytes, description answers from %d: too close", status, desc)
	}
	cfg.MaxResponseBytes = (status+desc)/2 + 29
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, cfg)
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, GetChunk: 4, GetConcurrency: 2})
	e.publishDiscovered(t, "olt-t", onus)
	got := e.runGet(t, "olt-t", "exec-tooBig", cols, streams.SNMPTuning{})

	s := got.succeeded
	if s.ONUs != len(onus) || s.FailedONUs != len(onus) || s.FailedVarbinds != len(onus) || len(s.ONUFailures) != len(onus) {
		t.Fatalf("succeeded %+v", s)
	}
	for i, f := range s.ONUFailures {
		o := onus[i]
		if f.Instance != o.Index || f.PonIndex != o.PonIndex || f.ONUID != int64(o.ID) ||
			len(f.OIDs) != 1 || f.OIDs[0] != cols[1].OID+"."+o.Index || f.Error != "tooBig" {
			t.Errorf("failure %d: %+v", i, f)
		}
		if vb := got.varbinds[cols[0].OID+"."+o.Index]; vb.Type != streams.VTInteger {
			t.Errorf("status of %s not read: %+v", o.Index, vb)
		}
	}
	// The coordinator log.
	var audits []streams.AuditEvent
	for _, m := range e.streamMsgs(t, streams.StreamAudit, streams.SubjectAudit("poller")) {
		_, a, err := streams.Decode[streams.AuditEvent](m.Data)
		if err != nil {
			t.Fatal(err)
		}
		audits = append(audits, a)
	}
	if len(audits) != 1 || audits[0].Kind != streams.AuditONUReadFailed || audits[0].OLTID != "olt-t" || audits[0].Level != streams.LevelWarning ||
		audits[0].Details["failed_onus"] != float64(len(onus)) {
		t.Errorf("audit %+v", audits)
	}
}

// responseSize is the size of the agent's answer to a GET of oid.
func responseSize(t *testing.T, sim *oltsim.OLT, oid string) int {
	t.Helper()
	g := &gosnmp.GoSNMP{Target: sim.Addr().IP.String(), Port: uint16(sim.Addr().Port), Community: testCommunity,
		Version: gosnmp.Version2c, Timeout: 2 * time.Second, Retries: 1}
	if err := g.Connect(); err != nil {
		t.Fatal(err)
	}
	defer g.Conn.Close()
	sim.ResetRecord()
	if _, err := g.Get([]string{oid}); err != nil {
		t.Fatal(err)
	}
	return sim.Record().BytesOut
}

// An OLT that answers nothing, or answers tooBig to every single OID,
// fails the get: it is not a success with every ONU failed.
func TestGetThatReadsNothingFails(t *testing.T) {
	tests := []struct {
		name     string
		faults   oltsim.Faults
		maxBytes int
		want     string
	}{
		{"no answer", oltsim.Faults{NoAnswer: true}, 0, "timeout"},
		{"tooBig for every OID", oltsim.Faults{}, 60, "get read none of 128 OIDs of 32 ONUs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := huaweiOLT("olt-d", tc.faults)
			cfg.MaxResponseBytes = tc.maxBytes
			e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, cfg)
			_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, GetChunk: 4, SNMPTimeout: 50 * time.Millisecond, SNMPRetries: -1, PDUBackoff: time.Millisecond, PDURetries: 1})
			e.publishDiscovered(t, "olt-d", e.fleet.OLT("olt-d").ONUs())
			node := e.nodeDue("olt-d", "exec-dead", "job-get")
			node.Kind = streams.KindGet
			e.publishNodeDue(t, node)
			ev := e.waitEnded(t, "olt-d", "exec-dead", 60*time.Second)
			if len(ev.failed) != 1 || len(ev.succeeded) != 0 || !strings.Contains(ev.failed[0].Error, tc.want) {
				t.Fatalf("events %+v, want a failure with %q", ev, tc.want)
			}
		})
	}
}

// walk uses GETNEXT, bulkwalk GETBULK; a brand's walk_pdu overrides.
func TestWalkPDUByKindAndTuning(t *testing.T) {
	cfg := huaweiOLT("olt-w", oltsim.Faults{})
	cfg.Shape = oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 8}
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, cfg)
	sim := e.fleet.OLT("olt-w")
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, MaxRepetitions: 50})
	tests := []struct {
		kind     string
		tuning   streams.SNMPTuning
		requests int // for one column of 8 rows
	}{
		{streams.KindWalk, streams.SNMPTuning{}, 9},                                    // 8 rows + the one past the end
		{streams.KindBulkWalk, streams.SNMPTuning{}, 1},                                // 50 repetitions
		{streams.KindDiscovery, streams.SNMPTuning{MaxRepetitions: 3}, 3},              // 3+3+3 (the third past the end)
		{streams.KindWalk, streams.SNMPTuning{WalkPDU: streams.WalkPDUGetBulk}, 1},     // the brand says GETBULK
		{streams.KindBulkWalk, streams.SNMPTuning{WalkPDU: streams.WalkPDUGetNext}, 9}, // the brand says GETNEXT
	}
	for i, tc := range tests {
		node := e.nodeDue("olt-w", "exec-walk-"+strconv.Itoa(i), "job-walk")
		node.Kind, node.SNMP, node.OIDs = tc.kind, tc.tuning, huaweiColumns[:1]
		sim.ResetRecord()
		e.publishNodeDue(t, node)
		ev := e.waitEnded(t, "olt-w", node.ExecutionID, 30*time.Second)
		if len(ev.succeeded) != 1 || ev.succeeded[0].Varbinds != 8 {
			t.Fatalf("%s %+v: %+v", tc.kind, tc.tuning, ev)
		}
		if r := sim.Record().Requests; r != tc.requests {
			t.Errorf("%s %+v: %d requests, want %d", tc.kind, tc.tuning, r, tc.requests)
		}
	}
}

// The size that worked is remembered per OLT in the KV bucket: the next
// get, on another poller replica, starts from it and sends no PDU the OLT
// times out on.
func TestGetRemembersTheSizePerOLT(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage},
		huaweiOLT("olt-r", oltsim.Faults{MaxVarbinds: 5}), huaweiOLT("olt-s", oltsim.Faults{}))
	cfg := Config{Workers: 1, GetChunk: 16, GetConcurrency: 1, SNMPTimeout: 100 * time.Millisecond, SNMPRetries: -1,
		PDUBackoff: time.Millisecond}
	cfg.PollerID = "p1"
	stop, _ := e.startPoller(t, cfg)
	for _, olt := range []string{"olt-r", "olt-s"} {
		e.publishDiscovered(t, olt, e.fleet.OLT(olt).ONUs())
	}
	first := e.runGet(t, "olt-r", "exec-r1", huaweiColumns, streams.SNMPTuning{})
	if first.record.Dropped == 0 || first.succeeded.FailedVarbinds != 0 {
		t.Fatalf("first get: %+v, %d failed", first.record, first.succeeded.FailedVarbinds)
	}
	if n := e.rememberedSize(t, "olt-r"); n > 5 {
		t.Fatalf("remembered %d for an OLT that times out above 5", n)
	}
	other := e.runGet(t, "olt-s", "exec-s1", huaweiColumns, streams.SNMPTuning{})
	if n := e.rememberedSize(t, "olt-s"); n != 16 || other.record.Dropped != 0 {
		t.Fatalf("the other OLT remembered %d (want its own 16), record %+v", n, other.record)
	}
	stop()
	cfg.PollerID = "p2"
	_, _ = e.startPoller(t, cfg)
	second := e.runGet(t, "olt-r", "exec-r2", huaweiColumns, streams.SNMPTuning{})
	if second.record.Dropped != 0 || second.succeeded.FailedVarbinds != 0 || second.count != len(huaweiColumns)*len(e.fleet.OLT("olt-r").ONUs()) {
		t.Fatalf("second get from the remembered size: record %+v, %d read, %d failed", second.record, second.count, second.succeeded.FailedVarbinds)
	}
	if second.record.Requests >= first.record.Requests {
		t.Errorf("second get sent %d requests, the first %d", second.record.Requests, first.record.Requests)
	}
}

// A column indexed below the ONU (ZTE's optical table, <pon>.<onu>.1) is
// read with its OID's index suffix.
func TestGetReadsSubIndexedColumns(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, oltsim.OLTConfig{
		Name: "zte", Profile: "zte-c300", Seed: 3, Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 10}})
	sim := e.fleet.OLT("zte")
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1})
	onus := sim.ONUs()
	e.publishDiscovered(t, "zte", onus)
	const zte = "1.3.6.1.4.1.3902.1082.500"
	cols := []streams.OIDSpec{
		{ID: "zte-phase", OID: zte + ".10.2.3.8.1.4", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "int"}},
		{ID: "zte-rx", OID: zte + ".20.2.2.2.1.10", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "int"}, IndexSuffix: "1"},
	}
	got := e.runGet(t, "zte", "exec-zte", cols, streams.SNMPTuning{})
	if got.count != 2*len(onus) || got.succeeded.FailedVarbinds != 0 {
		t.Fatalf("%d varbinds, %d failed, want %d read", got.count, got.succeeded.FailedVarbinds, 2*len(onus))
	}
	for _, o := range onus {
		for _, oid := range []string{cols[0].OID + "." + o.Index, cols[1].OID + "." + o.Index + ".1"} {
			if vb, ok := got.varbinds[oid]; !ok || vb.Type != streams.VTInteger {
				t.Errorf("%s: %+v", oid, vb)
			}
		}
	}
}

// A GETNEXT walk (kind walk) on a lossy OLT reads every row once, as the
// GETBULK walk does: a lost GETNEXT is sent again from the last OID.
func TestGetNextWalkUnderLoss(t *testing.T) {
	fleet := startFleet(t, huaweiOLT("lossy-next", oltsim.Faults{LossPercent: 30}))
	sim := fleet.OLT("lossy-next")
	cfg := Config{SNMPTimeout: 100 * time.Millisecond, SNMPRetries: -1, PDURetries: 10, PDUBackoff: time.Millisecond, PDURetryBudget: 1000}.WithDefaults()
	addr := sim.Addr()
	op := snmpOp{cfg: cfg, target: streams.Target{Host: addr.IP.String(), Port: addr.Port}, community: testCommunity}.
		tuned(streams.NodeDue{Kind: streams.KindWalk})
	if !op.getNext {
		t.Fatal("kind walk does not walk with GETNEXT")
	}
	got := map[string]streams.Varbind{}
	n := 0
	err := op.run(context.Background(), streams.KindWalk, huaweiColumns, func(vb streams.Varbind) error {
		got[vb.OID] = vb
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := huaweiTruth(t, sim)
	if n != len(want) || len(got) != len(want) {
		t.Fatalf("%d varbinds (%d distinct), want %d", n, len(got), len(want))
	}
	for oid, vb := range want {
		if got[oid] != vb {
			t.Errorf("%s = %+v, want %+v", oid, got[oid], vb)
		}
	}
	if rec := sim.Record(); rec.Dropped == 0 {
		t.Errorf("nothing was lost: %+v", rec)
	}
}

// The ONU set of a FACHO_ONU that was since recreated (sequences restart)
// is folded again from the start, even once the new stream is past the
// snapshot's sequence, instead of missing the new discoveries.
func TestONUSetOfARecreatedStreamIsRebuilt(t *testing.T) {
	opts := streams.Options{Storage: jetstream.MemoryStorage}
	e := newTestEnv(t, opts, huaweiOLT("olt-a", oltsim.Faults{}))
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1})
	onus := e.fleet.OLT("olt-a").ONUs()
	e.publishDiscovered(t, "olt-a", onus)
	if got := e.runGet(t, "olt-a", "exec-1", huaweiColumns[:1], streams.SNMPTuning{}); got.succeeded.ONUs != len(onus) {
		t.Fatalf("first get read %d ONUs", got.succeeded.ONUs)
	}
	if err := e.JS.DeleteStream(e.ctx, streams.StreamONU); err != nil {
		t.Fatal(err)
	}
	if err := streams.Provision(e.ctx, e.JS, opts); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= len(onus)/3; i++ { // past the snapshot's sequence
		e.publishDiscovered(t, "olt-a", onus[:3])
	}
	if got := e.runGet(t, "olt-a", "exec-2", huaweiColumns[:1], streams.SNMPTuning{}); got.succeeded.ONUs != 3 {
		t.Fatalf("get after the stream was recreated read %d ONUs, want the 3 discovered since", got.succeeded.ONUs)
	}
}

// Each OID a get sends pre-encoded is the encoding of its dotted form; an
// index that does not encode after a column is sent dotted (no BER).
func TestGetItemsBER(t *testing.T) {
	onus := []onuInstance{{pon: 1, onu: 2, index: "4194304000.2"}, {pon: 0, onu: 1, index: "7.1"}, {index: "5..1"}, {index: ".5"}, {index: "4294967296"}}
	cols := []streams.OIDSpec{{OID: ".1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3"}, {OID: "1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4.", IndexSuffix: "0"}}
	r := newGetRun(snmpOp{}, onus, cols, 10, 10, nil)
	for _, it := range r.items {
		want, err := appendOID(nil, r.oid(it))
		switch {
		case err != nil && it.ber != nil:
			t.Errorf("%s: ber %x, but the dotted oid does not encode: %v", r.oid(it), it.ber, err)
		case err == nil && !bytes.Equal(it.ber, want):
			t.Errorf("%s: ber %x, want %x", r.oid(it), it.ber, want)
		}
	}
	if !r.cols[0].direct || !r.cols[1].direct {
		t.Errorf("columns %+v: want both direct", r.cols)
	}
	r = newGetRun(snmpOp{}, onus[:1], []streams.OIDSpec{{OID: "1.3.6.1.4.1"}, {OID: "1.3.6.1.4.1.2011"}, {OID: "1.3.6.1.2"}}, 10, 10, nil)
	if r.cols[0].direct || !r.cols[1].direct || !r.cols[2].direct {
		t.Errorf("columns %+v: want the first, a prefix of the second, not direct", r.cols)
	}
}
