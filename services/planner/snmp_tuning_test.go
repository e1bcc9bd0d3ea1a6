package planner

import (
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// A node carries its OLT's SNMP tuning over its brand's, into its NodeDue.
func TestNodeCarriesTheSNMPTuning(t *testing.T) {
	k := NodeKey{JobID: "j1", OLTID: "olt-a"}
	st := newState(timeouts{discovery: 300, poll: 60})
	at := t0
	events := append(baseEvents(),
		streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu",
			SNMP: streams.SNMPTuning{WalkPDU: streams.WalkPDUGetNext, MaxRepetitions: 20, GetVarbinds: 30, GetConcurrency: 4}},
		streams.OLTUpserted{ID: "olt-a", Name: "A", IP: "10.0.0.1", Port: 161, BrandID: "huawei", CommunityEnc: "v1:x", Enabled: true,
			SNMP: streams.SNMPTuning{GetConcurrency: 1}},
	)
	for _, ev := range events {
		at = at.Add(time.Second)
		if _, err := st.apply(env(t, at, ev)); err != nil {
			t.Fatal(err)
		}
	}
	d, ok := st.desired()[k]
	if !ok {
		t.Fatalf("not plannable: %s", st.why(k))
	}
	want := streams.SNMPTuning{WalkPDU: streams.WalkPDUGetNext, MaxRepetitions: 20, GetVarbinds: 30, GetConcurrency: 1}
	if d.Spec.SNMP != want {
		t.Errorf("spec tuning %+v, want %+v", d.Spec.SNMP, want)
	}
	if n := nodeDue(DueNode{Key: k, Spec: d.Spec, ScheduledAt: at}); n.SNMP != want {
		t.Errorf("NodeDue tuning %+v, want %+v", n.SNMP, want)
	}
}
