package oltsim

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// column is one data-driven ONU table column: its OID, how the row index is
// built and how a value is derived from an ONU. ok=false leaves the row out.
type column struct {
	oid   oid
	index func(s *onuState) oid // nil: the profile's rowIndex
	value func(s *onuState) (v value, ok bool)
}

// profile describes one vendor's agent: system group, PON ports and ONU
// tables. Profiles are data, not code branches.
type profile struct {
	name         string
	sysDescr     string
	sysObjectID  string
	serialVendor string
	firstSlot    int
	firstPort    int
	firstONU     int
	// flatPorts numbers PON ports 1..Slots*PortsPerSlot with slot 0 (V-SOL).
	flatPorts bool
	ponIndex  func(slot, port int) int64
	rowIndex  func(s *onuState) oid
	ifDescr   func(slot, port int) string
	columns   []column
}

// ProfileNames lists the built-in vendor profiles.
func ProfileNames() []string {
	return []string{"huawei-ma5800", "zte-c300", "fiberhome-an5516", "vsol-v1600g"}
}

func profileByName(name string) (*profile, error) {
	switch name {
	case "huawei-ma5800":
		return huaweiProfile(), nil
	case "zte-c300":
		return zteProfile(), nil
	case "fiberhome-an5516":
		return fiberhomeProfile(), nil
	case "vsol-v1600g":
		return vsolProfile(), nil
	}
	return nil, fmt.Errorf("unknown profile %q (known: %v)", name, ProfileNames())
}

// onlineInt returns a value only for online ONUs.
func onlineInt(f func(s *onuState) int64) func(s *onuState) (value, bool) {
	return func(s *onuState) (value, bool) {
		if !s.online {
			return value{}, false
		}
		return intValue(f(s)), true
	}
}

func always(f func(s *onuState) value) func(s *onuState) (value, bool) {
	return func(s *onuState) (value, bool) { return f(s), true }
}

// ponPort is one PON port of a shape.
type ponPort struct{ slot, port int }

func (p *profile) ports(sh Shape) []ponPort {
	var out []ponPort
	n := 0
	for si := 0; si < sh.Slots; si++ {
		for pi := 0; pi < sh.PortsPerSlot; pi++ {
			n++
			if p.flatPorts {
				out = append(out, ponPort{slot: 0, port: n})
				continue
			}
			out = append(out, ponPort{slot: p.firstSlot + si, port: p.firstPort + pi})
		}
	}
	return out
}

// generate draws the initial ONU population deterministically from seed.
func (p *profile) generate(sh Shape, seed int64) []onuState {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6f6c7473696d))
	var out []onuState
	for _, pp := range p.ports(sh) {
		for i := 0; i < sh.ONUsPerPort; i++ {
			out = append(out, newONUState(p, rng, pp.slot, pp.port, p.firstONU+i))
		}
	}
	return out
}

var (
	oidSystem  = mustOID("1.3.6.1.2.1.1")
	oidIfTable = mustOID("1.3.6.1.2.1.2.2.1")
	oidIfNum   = mustOID("1.3.6.1.2.1.2.1")
	oidIfName  = mustOID("1.3.6.1.2.1.31.1.1.1.1")
)

// buildMIB renders the system group, the ifTable of PON ports and the ONU
// tables into a sorted view.
func (p *profile) buildMIB(name string, sh Shape, onus []onuState) *mibView {
	b := &mibBuilder{strict: true}
	scalar := func(o oid, v value) {
		b.add(o.join(0), v)
		b.object(o)
	}
	scalar(oidSystem.join(1), strValue(p.sysDescr))
	scalar(oidSystem.join(2), oidValue(mustOID(p.sysObjectID)))
	b.addDyn(oidSystem.join(3, 0), dynUptime)
	b.object(oidSystem.join(3))
	scalar(oidSystem.join(4), strValue("noc@facho.example"))
	scalar(oidSystem.join(5), strValue(name))
	scalar(oidSystem.join(6), strValue("facho oltsim"))
	scalar(oidSystem.join(7), intValue(2))

	ports := p.ports(sh)
	scalar(oidIfNum, intValue(int64(len(ports))))
	for c := uint32(1); c <= 8; c++ {
		b.object(oidIfTable.join(c))
	}
	b.object(oidIfName)
	for _, pp := range ports {
		idx := uint32(p.ponIndex(pp.slot, pp.port))
		d := p.ifDescr(pp.slot, pp.port)
		b.add(oidIfTable.join(1, idx), intValue(int64(idx)))
		b.add(oidIfTable.join(2, idx), strValue(d))
		b.add(oidIfTable.join(3, idx), intValue(250)) // gpon
		b.add(oidIfTable.join(4, idx), intValue(2000))
		b.add(oidIfTable.join(5, idx), gaugeValue(2488320000&0xffffffff))
		b.add(oidIfTable.join(7, idx), intValue(1))
		b.add(oidIfTable.join(8, idx), intValue(1))
		b.add(oidIfName.join(idx), strValue(d))
	}
	for _, c := range p.columns {
		b.object(c.oid)
		for i := range onus {
			s := &onus[i]
			v, ok := c.value(s)
			if !ok {
				continue
			}
			idx := p.rowIndex
			if c.index != nil {
				idx = c.index
			}
			b.add(c.oid.join(idx(s)...), v)
		}
	}
	return b.build()
}

// sortONUs orders rows by slot, port, id.
func sortONUs(onus []onuState) {
	sort.SliceStable(onus, func(i, j int) bool {
		a, b := onus[i], onus[j]
		if a.slot != b.slot {
			return a.slot < b.slot
		}
		if a.port != b.port {
			return a.port < b.port
		}
		return a.id < b.id
	})
}
