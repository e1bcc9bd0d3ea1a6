package poller

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// A get job reads instance OIDs in chunks; a missing instance comes back as
// NoSuchInstance rather than failing the node.
func TestGetReadsInstancesInChunks(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	olt := e.fleet.OLT("olt-a")
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, GetChunk: 5, BatchSize: 7})

	node := e.nodeDue("olt-a", "exec-get", "job-get")
	node.Kind = streams.KindGet
	node.OIDs = nil
	onus := olt.ONUs()[:12]
	for _, onu := range onus {
		node.OIDs = append(node.OIDs, streams.OIDSpec{ID: "hw-status", OID: huaweiBase + ".46.1.15." + onu.Index, Field: streams.FieldStatus})
	}
	missing := huaweiBase + ".46.1.15.1.999"
	node.OIDs = append(node.OIDs, streams.OIDSpec{ID: "hw-status", OID: missing, Field: streams.FieldStatus})
	olt.ResetRecord()
	e.publishNodeDue(t, node)

	ev := e.waitEnded(t, "olt-a", "exec-get", 30*time.Second)
	if len(ev.succeeded) != 1 || ev.succeeded[0].Varbinds != 13 || ev.succeeded[0].Batches != 2 {
		t.Fatalf("events %+v", ev)
	}
	got := map[string]streams.Varbind{}
	for _, b := range e.batches(t, "olt-a", "exec-get") {
		if b.Last {
			t.Errorf("get batch %d is marked last; a get reads no table", b.Batch)
		}
		for _, vb := range b.Varbinds {
			got[vb.OID] = vb
		}
	}
	for _, onu := range onus {
		want := "2"
		if onu.Online {
			want = "1"
		}
		if vb := got[huaweiBase+".46.1.15."+onu.Index]; vb.Type != streams.VTInteger || vb.Value != want {
			t.Errorf("ONU %s status %+v, want %s", onu.Index, vb, want)
		}
	}
	if vb := got[missing]; vb.Type != streams.VTNoSuchInstance {
		t.Errorf("missing instance %+v", vb)
	}
	if r := olt.Record().Requests; r != 3 {
		t.Errorf("%d GET requests for 13 OIDs in chunks of 5, want 3", r)
	}
}
