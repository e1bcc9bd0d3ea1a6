package poller

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// A health node reads the OLT's health tables under its lease and publishes
// one olt.health reading (no varbind batch); an OLT without any of the
// tables fails it as empty_read.
func TestHealthNodePublishesOneReading(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	_, reg := e.startPoller(t, Config{PollerID: "p1", Workers: 2, BatchSize: 50})
	cat, err := profiles.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cat.Get("huawei-ma5800")
	sim := e.fleet.OLT("olt-a")
	if err := sim.PatchHealth(oltsim.HealthPatch{PSUs: map[string]bool{sim.Health().PSUs[0].Index: false}}); err != nil {
		t.Fatal(err)
	}
	truth := sim.Health()

	node := e.nodeDue("olt-a", "exec-h", "huawei-ma5800-health")
	node.Kind, node.OIDs = streams.KindHealth, p.HealthSpecs()
	e.publishNodeDue(t, node)
	ev := e.waitEnded(t, "olt-a", "exec-h", 30*time.Second)
	if len(ev.failed) > 0 || len(ev.succeeded) != 1 {
		t.Fatalf("execution: %+v", ev)
	}
	if b := e.batches(t, "olt-a", "exec-h"); len(b) != 0 {
		t.Errorf("%d varbind batches, want none", len(b))
	}
	msgs := e.streamMsgs(t, streams.StreamOLT, streams.SubjectOLTHealth("olt-a"))
	if len(msgs) != 1 {
		t.Fatalf("%d health readings, want 1", len(msgs))
	}
	if id := msgs[0].Header.Get(jetstream.MsgIDHeader); id != streams.MsgID("exec-h", 1, "health") {
		t.Errorf("msg id %q", id)
	}
	_, h, err := streams.Decode[streams.OLTHealth](msgs[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	if h.ExecutionID != "exec-h" || len(h.PSUs) != len(truth.PSUs) || len(h.PONs) != len(truth.PONs) || len(h.Uplinks) != len(truth.Uplinks) {
		t.Fatalf("reading %+v, truth %+v", h, truth)
	}
	for i, u := range truth.PSUs {
		want := streams.UnitOK
		if u.Failed {
			want = streams.UnitFailed
		}
		if h.PSUs[i].Index != u.Index || h.PSUs[i].Status != want {
			t.Errorf("psu %d: %+v, want %s %s", i, h.PSUs[i], u.Index, want)
		}
	}
	if got := counter(t, reg, "facho_poller_health_readings_total"); got != 1 {
		t.Errorf("health readings counter %g, want 1", got)
	}

	// The V-SOL simulator has none of the Huawei health tables.
	e2 := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, oltsim.OLTConfig{Name: "olt-v", Profile: "vsol-v1600g", Seed: 1,
		Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 2}})
	e2.startPoller(t, Config{PollerID: "p2", Workers: 1})
	n2 := e2.nodeDue("olt-v", "exec-v", "huawei-ma5800-health")
	n2.Kind, n2.OIDs = streams.KindHealth, p.HealthSpecs()[:3] // the board table only
	e2.publishNodeDue(t, n2)
	ev2 := e2.waitEnded(t, "olt-v", "exec-v", 30*time.Second)
	if len(ev2.failed) != 1 || ev2.failed[0].Cause != streams.ExecCauseEmptyRead {
		t.Fatalf("health of an OLT without the tables: %+v", ev2)
	}
}
