package trapd

import (
	"fmt"
	"testing"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// TestSimulatedVendors: each simulated vendor's OLT (its own community,
// all on 127.0.0.1) sends its trap when an ONU dies; the receiver tells
// the OLTs apart by community and decodes the trap through the vendor's
// profile to the same ONU.
func TestSimulatedVendors(t *testing.T) {
	e := newEnv(t)
	cat, err := profiles.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	vendors := []struct{ sim, profile string }{
		{"huawei-ma5800", "huawei-ma5800"}, {"zte-c300", "zte-1082"}, {"fiberhome-an5516", "fiberhome-an5516"}, {"vsol-v1600g", "vsol-v1600"},
	}
	var cfgs []oltsim.OLTConfig
	for i, v := range vendors {
		cfgs = append(cfgs, oltsim.OLTConfig{Name: fmt.Sprintf("olt-%d", i), Listen: "127.0.0.1:0", Community: fmt.Sprintf("community-%d", i),
			Profile: v.sim, Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 4}, Seed: 9})
	}
	fleet, err := oltsim.Start(e.ctx, oltsim.FleetConfig{OLTs: cfgs}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })
	for i, v := range vendors {
		p, _ := cat.Get(v.profile)
		e.publish(t, streams.SubjectBrand(p.ID), "brand-"+p.ID, streams.BrandUpserted{ID: p.ID, Name: p.Name, IndexScheme: p.IndexScheme, Index: &p.Index, Profile: p.ID})
		enc, err := e.box.Seal(cfgs[i].Community)
		if err != nil {
			t.Fatal(err)
		}
		id := cfgs[i].Name
		e.publish(t, streams.SubjectOLT(id), "olt-"+id, streams.OLTUpserted{ID: id, Name: id, IP: "127.0.0.1", Port: fleet.OLT(id).Addr().Port, BrandID: p.ID, CommunityEnc: enc, Enabled: true})
	}
	e.start(t, Config{})
	for i, v := range vendors {
		t.Run(v.sim, func(t *testing.T) {
			o := fleet.OLT(cfgs[i].Name)
			if err := o.SetTrapTarget(oltsim.TrapTarget{Dest: e.addr.String()}); err != nil {
				t.Fatal(err)
			}
			var u oltsim.ONU
			for _, x := range o.ONUs() {
				if x.Online {
					u = x
					break
				}
			}
			before := len(e.trapEvents(t))
			off := false
			if err := o.PatchONU(u.Index, oltsim.ONUPatch{Online: &off, DownCause: oltsim.DownCauseDyingGasp}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the trap's events", func() bool { return len(e.trapEvents(t)) >= before+2 })
			evs := e.trapEvents(t)[before:]
			dec := decodeData[streams.TrapDecoded](t, evs[1])
			if dec.OLTID != cfgs[i].Name || dec.Kind != streams.TrapKindDyingGasp || dec.ONUID == nil || int(*dec.ONUID) != u.ID || dec.Index != u.Index {
				t.Fatalf("decoded %+v, want olt %s dying_gasp of onu %d (index %s)", dec, cfgs[i].Name, u.ID, u.Index)
			}
		})
	}
}
