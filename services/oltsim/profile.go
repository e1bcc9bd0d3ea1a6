package oltsim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
)

// column is one data-driven ONU table column: its OID, how the row index is
// built, which ONUs have a row and how a value is derived from an ONU.
// Index and value are computed on demand for each request; nothing per ONU
// is stored but the onuState.
type column struct {
	oid   oid
	index func(s *onuState) rowIdx // nil: the profile's rowIndex
	has   func(s *onuState) bool   // nil: every ONU has a row
	value func(s *onuState) cell
	// enc is the BER content of oid (set by profile.init); a row's OID is
	// enc followed by the index sub-identifiers.
	enc []byte
}

// profile describes one vendor's agent: system group, PON ports and ONU
// tables. Profiles are data, not code branches, and immutable once built:
// every OLT of a profile shares one.
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
	rowIndex  func(s *onuState) rowIdx
	ifDescr   func(slot, port int) string
	// columns are sorted by OID (init); no column OID is a prefix of
	// another.
	columns []column
}

// init sorts the columns and pre-encodes their OIDs.
func (p *profile) init() *profile {
	slices.SortFunc(p.columns, func(a, b column) int { return compareOID(a.oid, b.oid) })
	for i := range p.columns {
		c := &p.columns[i]
		if c.index == nil {
			c.index = p.rowIndex
		}
		tlv := appendOID(nil, c.oid)
		d := decoder{b: tlv}
		_, content, _ := d.next()
		c.enc = content
		if i > 0 && c.oid.hasPrefix(p.columns[i-1].oid) {
			panic(fmt.Sprintf("profile %s: column %s nests in %s", p.name, c.oid, p.columns[i-1].oid))
		}
	}
	return p
}

// ProfileNames lists the built-in vendor profiles.
func ProfileNames() []string {
	return []string{"huawei-ma5800", "zte-c300", "fiberhome-an5516", "vsol-v1600g"}
}

var profileCache = sync.OnceValue(func() map[string]*profile {
	return map[string]*profile{
		"huawei-ma5800":    huaweiProfile(),
		"zte-c300":         zteProfile(),
		"fiberhome-an5516": fiberhomeProfile(),
		"vsol-v1600g":      vsolProfile(),
	}
})

// profileByName returns the shared, immutable profile.
func profileByName(name string) (*profile, error) {
	if p, ok := profileCache()[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown profile %q (known: %v)", name, ProfileNames())
}

// online is a column's has for rows only online ONUs have.
func online(s *onuState) bool { return s.online }

// hasRow tells whether s has a row in column c.
func (c *column) hasRow(s *onuState) bool { return c.has == nil || c.has(s) }

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
	ports := p.ports(sh)
	out := make([]onuState, 0, len(ports)*sh.ONUsPerPort)
	for _, pp := range ports {
		for i := 0; i < sh.ONUsPerPort; i++ {
			out = append(out, newONUState(rng, pp.slot, pp.port, p.firstONU+i))
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

// staticMIB adds the system group and the ifTable of PON ports: the part of
// a generated agent that is the same whatever its ONUs do.
func (p *profile) staticMIB(b *mibBuilder, name string, sh Shape) {
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
}

// buildStatic encodes the static part of the agent (a few hundred
// varbinds at most, whatever the number of ONUs).
func (p *profile) buildStatic(name string, sh Shape) *mibView {
	b := &mibBuilder{strict: true}
	p.staticMIB(b, name, sh)
	for _, c := range p.columns {
		b.object(c.oid)
	}
	return b.build()
}

// buildMIB returns the agent's view: the encoded static part and the ONU
// tables served from onus (sorted by slot, port, id; not modified
// afterwards) by index arithmetic.
func (p *profile) buildMIB(name string, sh Shape, onus []onuState) *mibView {
	return p.buildStatic(name, sh).withTable(p, onus)
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
