package poller

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// Runs that end without an SNMP error but read nothing worth a success
// are failures with a cause of their own (verdict.go), not retryable, with
// an operator's text; against the simulator over UDP.
func TestHonestOutcomes(t *testing.T) {
	vsol := oltsim.OLTConfig{Name: "olt-v", Profile: "vsol-v1600g", Seed: 2, Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 4}}
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage},
		huaweiOLT("olt-a", oltsim.Faults{}), huaweiOLT("olt-b", oltsim.Faults{}), huaweiOLT("olt-n", oltsim.Faults{OIDNotIncreasing: true}), vsol)
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, SNMPTimeout: time.Second})
	e.publishDiscovered(t, "olt-b", e.fleet.OLT("olt-b").ONUs())
	missing := []streams.OIDSpec{{ID: "none", OID: huaweiBase + ".99.1.1", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01}}}

	for _, tc := range []struct {
		name     string
		olt      string
		node     func(n *streams.NodeDue)
		cause    string
		text     string // in the error
		requests bool   // SNMP requests were sent
	}{
		{"get before any discovery", "olt-a", func(n *streams.NodeDue) { n.Kind = streams.KindGet }, streams.ExecCauseNoONUsKnown, "no ONU of olt olt-a is known yet", false},
		{"get of OIDs the OLT does not have", "olt-b", func(n *streams.NodeDue) { n.Kind, n.OIDs = streams.KindGet, missing }, streams.ExecCauseEmptyRead,
			"read no value from the 32 known ONUs", true},
		{"discovery under another vendor's profile", "olt-v", func(n *streams.NodeDue) { n.Kind = streams.KindDiscovery }, streams.ExecCauseProfileMismatch,
			"the profile huawei matched but none of its tables answered", true},
		{"bulkwalk of an agent whose OIDs do not increase", "olt-n", func(n *streams.NodeDue) {}, streams.ExecCauseOIDNotIncreasing, "OIDs not increasing", true},
		{"walk (getnext) of an agent whose OIDs do not increase", "olt-n", func(n *streams.NodeDue) { n.Kind = streams.KindWalk }, streams.ExecCauseOIDNotIncreasing, "OIDs not increasing", true},
		{"discovery of an agent whose OIDs do not increase", "olt-n", func(n *streams.NodeDue) { n.Kind = streams.KindDiscovery }, streams.ExecCauseOIDNotIncreasing, "OIDs not increasing", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "exec-" + strings.ReplaceAll(tc.name, " ", "-")
			node := e.nodeDue(tc.olt, id, "job")
			tc.node(&node)
			sim := e.fleet.OLT(tc.olt)
			sim.ResetRecord()
			e.publishNodeDue(t, node)
			ev := e.waitEnded(t, tc.olt, id, 60*time.Second)
			if len(ev.succeeded) != 0 || len(ev.failed) != 1 {
				t.Fatalf("events %+v, want one failed", ev)
			}
			f := ev.failed[0]
			if f.Cause != tc.cause || f.Retryable || f.Redelivered || !strings.Contains(f.Error, tc.text) {
				t.Errorf("failed %+v, want cause %s, not retryable, error with %q", f, tc.cause, tc.text)
			}
			if got := sim.Record().Requests > 0; got != tc.requests {
				t.Errorf("SNMP requests sent: %v, want %v", got, tc.requests)
			}
			for _, b := range e.batches(t, tc.olt, id) {
				if b.Last {
					t.Errorf("a failed execution published a Last batch: %+v", b)
				}
			}
		})
	}

	// The same nodes where the OLT has what they read succeed.
	node := e.nodeDue("olt-a", "exec-discovery-ok", "job")
	node.Kind = streams.KindDiscovery
	e.publishNodeDue(t, node)
	if ev := e.waitEnded(t, "olt-a", node.ExecutionID, 60*time.Second); len(ev.succeeded) != 1 || ev.succeeded[0].Varbinds == 0 {
		t.Errorf("discovery of the right profile: %+v", ev)
	}
	got := e.runGet(t, "olt-b", "exec-get-ok", huaweiColumns, streams.SNMPTuning{})
	if got.succeeded.ONUs != 32 || got.count == 0 {
		t.Errorf("get of known ONUs: %+v, %d varbinds", got.succeeded, got.count)
	}
}

// A workflow of a new OLT, discovery then get: the chained get waits for
// the projector to publish the discovered ONUs (played here by the test,
// after the discovery's success) and reads them, instead of failing
// no_onus_known.
func TestChainedGetWaitsForItsDiscovery(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	node := e.nodeDue("olt-a", "m", "job-disc")
	node.Kind = streams.KindDiscovery
	node.Attempt = 1
	node.Chain = []streams.ChainedNode{{ExecutionID: "c-get", JobID: "job-get", Kind: streams.KindGet, OIDs: huaweiColumns, TimeoutSeconds: 60}}
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1})
	e.publishNodeDue(t, node)
	if ev := e.waitEnded(t, "olt-a", "m", 60*time.Second); len(ev.succeeded) != 1 {
		t.Fatalf("discovery: %+v", ev)
	}
	e.publishDiscovered(t, "olt-a", e.fleet.OLT("olt-a").ONUs())
	ev := e.waitEnded(t, "olt-a", "c-get", 60*time.Second)
	if len(ev.succeeded) != 1 || ev.succeeded[0].ONUs != 32 || ev.succeeded[0].Varbinds == 0 {
		t.Fatalf("chained get: %+v", ev)
	}
}
