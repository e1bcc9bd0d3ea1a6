package poller

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// A get whose OLT has no ONU event since its snapshot creates no consumer
// on FACHO_ONU: creating one makes the server count the pending messages
// over every block since the snapshot's sequence, which grows with the
// whole fleet's events (at 1,000 OLTs most of the embedded NATS's CPU in a
// steady cycle). Events of other OLTs do not count; the snapshot moves to
// the stream's end, so the next fold starts there.
func TestGetWithNothingNewCreatesNoConsumer(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}), huaweiOLT("olt-b", oltsim.Faults{}))
	var creates atomic.Int64
	sub, err := e.NC.Subscribe("$JS.API.CONSUMER.CREATE.>", func(m *nats.Msg) {
		if strings.Contains(m.Subject, "."+streams.StreamONU) {
			creates.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := e.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, GetConcurrency: 1})
	all := e.fleet.OLT("olt-a").ONUs()
	e.publishDiscovered(t, "olt-a", all)

	flush := func() {
		t.Helper()
		if err := e.NC.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	get := func(id string, wantONUs int) {
		t.Helper()
		got := e.runGet(t, "olt-a", id, huaweiColumns[:1], streams.SNMPTuning{})
		if got.succeeded.ONUs != wantONUs || len(got.varbinds) != wantONUs {
			t.Fatalf("%s read %d varbinds of %d ONUs, want %d", id, len(got.varbinds), got.succeeded.ONUs, wantONUs)
		}
		flush()
	}
	get("exec-1", len(all))
	if creates.Load() == 0 {
		t.Fatal("the first get folded the discovered events without a consumer: the count below proves nothing")
	}

	// Nothing new for olt-a, plenty for olt-b: no consumer.
	before := creates.Load()
	e.publishDiscovered(t, "olt-b", e.fleet.OLT("olt-b").ONUs())
	get("exec-2", len(all))
	get("exec-3", len(all))
	if n := creates.Load() - before; n != 0 {
		t.Errorf("%d consumers created by gets with no new event of their OLT, want 0", n)
	}

	// An event of olt-a, then more of olt-b: folded, with a consumer.
	e.publishChange(t, "olt-a", streams.ONURemoved, all[:2])
	e.publishDiscovered(t, "olt-b", e.fleet.OLT("olt-b").ONUs()[:3])
	get("exec-4", len(all)-2)
	if creates.Load() == before {
		t.Error("a get with new events of its OLT folded them without a consumer")
	}

	// The snapshot's sequence is the stream's end as the fold saw it, not
	// the last event of olt-a: later events of other OLTs are behind it.
	kv, err := e.JS.KeyValue(e.ctx, streams.BucketOLTSNMP)
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.JS.Stream(e.ctx, streams.StreamONU)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(e.ctx, streams.KeyONUSet("olt-a"))
	if err != nil {
		t.Fatal(err)
	}
	var set streams.ONUSet
	if err := json.Unmarshal(entry.Value(), &set); err != nil {
		t.Fatal(err)
	}
	if last := st.CachedInfo().State.LastSeq; set.Seq != last {
		t.Errorf("snapshot at sequence %d, want the stream's end %d", set.Seq, last)
	}
}
