package oltsim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Health is the simulated OLT's own state, the truth its health tables are
// served from: boards (CPU %, memory %, temperature), fans and power
// supplies, PON ports (state, SFP optics) and uplinks. Tests compare what
// Facho stores with it. A recording has none.
type Health struct {
	Boards  []Board   `json:"boards"`
	Fans    []Unit    `json:"fans"`
	PSUs    []Unit    `json:"psus"`
	PONs    []PONPort `json:"pons"`
	Uplinks []Uplink  `json:"uplinks"`
}

// Board is one card: its row index in the vendor's board table.
type Board struct {
	Index         string `json:"index"`
	CPUPercent    int    `json:"cpu_percent"`
	MemoryPercent int    `json:"memory_percent"`
	TemperatureC  int    `json:"temperature_c"`
}

// Unit is a fan or a power supply; Failed is what the control API sets.
type Unit struct {
	Index  string `json:"index"`
	Failed bool   `json:"failed"`
}

// PONPort is one PON port: Index is its ifIndex, the ONU tables' PON index.
type PONPort struct {
	Index        int64  `json:"index"`
	Name         string `json:"name"`
	AdminUp      bool   `json:"admin_up"`
	OperUp       bool   `json:"oper_up"`
	TxCenti      int    `json:"tx_centi_dbm"`
	RxCenti      int    `json:"rx_centi_dbm"`
	TemperatureC int    `json:"temperature_c"`
}

// Uplink is one Ethernet uplink port.
type Uplink struct {
	Index     uint32 `json:"index"`
	Name      string `json:"name"`
	OperUp    bool   `json:"oper_up"`
	InErrors  uint32 `json:"in_errors"`
	OutErrors uint32 `json:"out_errors"`
}

// healthLayout says where a vendor serves its health tables (the OIDs of
// the built-in Facho profiles' health sections) and how it encodes them.
type healthLayout struct {
	// Board table columns (empty: not served) and each board's index.
	cpu, mem, temp oid
	// scaled: CPU and memory in 0.01 % (FiberHome).
	scaled bool
	// tempScalar: the temperature is one scalar (the hottest board's),
	// at temp.0.
	tempScalar bool
	boardIndex func(i int) string
	// Fan and power supply status columns; index of unit i.
	fan, psu  oid
	unitIndex func(i int) string
	// PON SFP optics columns indexed by ifIndex (Huawei).
	ponTemp, ponTx, ponRx oid
	// uplinkIndex is the ifIndex of uplink i, uplinkName its name.
	uplinkIndex func(i int) uint32
	uplinkName  func(i int) string
	fans, psus  int
}

// huaweiNoReading is Huawei's "no reading" of its optical tables.
const huaweiNoReading = 2147483647

func healthLayoutOf(profile string) *healthLayout {
	switch profile {
	case "huawei-ma5800":
		ent := mustOID("1.3.6.1.4.1.2011.2.6.7.1.1.2.1")
		ddm := mustOID("1.3.6.1.4.1.2011.6.128.1.1.2.23.1")
		return &healthLayout{
			cpu: ent.join(5), mem: ent.join(6), temp: ent.join(10),
			boardIndex: func(i int) string { return "0." + strconv.Itoa(i) },
			fan:        mustOID("1.3.6.1.4.1.2011.5.25.31.1.1.10.1.7"), psu: mustOID("1.3.6.1.4.1.2011.5.25.31.1.1.18.1.6"),
			unitIndex: func(i int) string { return "0." + strconv.Itoa(i+1) },
			ponTemp:   ddm.join(1), ponTx: ddm.join(4), ponRx: ddm.join(5),
			uplinkIndex: func(i int) uint32 { return 4194320384 + uint32(i)*64 },
			uplinkName:  func(i int) string { return fmt.Sprintf("ethernet0/9/%d", i) },
			fans:        4, psus: 2,
		}
	case "zte-c300":
		return &healthLayout{
			cpu: mustOID("1.3.6.1.4.1.3902.1082.10.1.2.4.1.9"), mem: mustOID("1.3.6.1.4.1.3902.1082.10.1.2.4.1.11"),
			temp:       mustOID("1.3.6.1.4.1.3902.1082.10.10.2.1.6.1.2"),
			boardIndex: func(i int) string { return "1.1." + strconv.Itoa(i) },
			fan:        mustOID("1.3.6.1.4.1.3902.1082.10.10.2.3.11.1.3"), psu: mustOID("1.3.6.1.4.1.3902.1082.10.10.2.4.11.1.5"),
			unitIndex:   func(i int) string { return "1.1." + strconv.Itoa(i+1) },
			uplinkIndex: func(i int) uint32 { return 269418496 + uint32(i)*256 },
			uplinkName:  func(i int) string { return fmt.Sprintf("xgei_1/19/%d", i+1) },
			fans:        2, psus: 2,
		}
	case "fiberhome-an5516":
		return &healthLayout{
			cpu: mustOID("1.3.6.1.4.1.5875.800.3.9.8.1.1.5"), mem: mustOID("1.3.6.1.4.1.5875.800.3.9.8.1.1.6"),
			temp: mustOID("1.3.6.1.4.1.5875.800.3.9.4.5"), scaled: true, tempScalar: true,
			boardIndex:  func(i int) string { return strconv.Itoa(9 + i) },
			uplinkIndex: func(i int) uint32 { return 1 + uint32(i) },
			uplinkName:  func(i int) string { return fmt.Sprintf("GE 19/%d", i+1) },
		}
	}
	return nil
}

// newHealth draws a plausible health state for an OLT of p and shape sh.
func newHealth(p *profile, sh Shape, seed int64) Health {
	l := healthLayoutOf(p.name)
	if l == nil {
		return Health{}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6865616c7468))
	var h Health
	boards := 2
	if l.boardIndex != nil {
		for i := range boards {
			h.Boards = append(h.Boards, Board{Index: l.boardIndex(i), CPUPercent: 5 + rng.IntN(35),
				MemoryPercent: 25 + rng.IntN(40), TemperatureC: 30 + rng.IntN(18)})
		}
	}
	for i := range l.fans {
		h.Fans = append(h.Fans, Unit{Index: l.unitIndex(i)})
	}
	for i := range l.psus {
		h.PSUs = append(h.PSUs, Unit{Index: l.unitIndex(i)})
	}
	for _, pp := range p.ports(sh) {
		h.PONs = append(h.PONs, PONPort{Index: p.ponIndex(pp.slot, pp.port), Name: p.ifDescr(pp.slot, pp.port), AdminUp: true, OperUp: true,
			TxCenti: 250 + rng.IntN(300), RxCenti: -(1500 + rng.IntN(1200)), TemperatureC: 35 + rng.IntN(15)})
	}
	for i := range 2 {
		h.Uplinks = append(h.Uplinks, Uplink{Index: l.uplinkIndex(i), Name: l.uplinkName(i), OperUp: true, InErrors: uint32(rng.IntN(5))})
	}
	return h
}

// clone copies h so a change never touches a state a view was built from.
func (h Health) clone() Health {
	return Health{Boards: slices.Clone(h.Boards), Fans: slices.Clone(h.Fans), PSUs: slices.Clone(h.PSUs),
		PONs: slices.Clone(h.PONs), Uplinks: slices.Clone(h.Uplinks)}
}

// healthMIB adds the health tables of h to b: the board, fan and power
// supply tables, the PON ports' state in the ifTable and their optics, the
// uplinks in the ifTable and ifXTable. Added after staticMIB, so its ifTable
// rows win.
func (p *profile) healthMIB(b *mibBuilder, h Health) {
	l := healthLayoutOf(p.name)
	if l == nil || len(h.Boards)+len(h.Fans)+len(h.PSUs)+len(h.PONs)+len(h.Uplinks) == 0 {
		return
	}
	for _, c := range []oid{l.cpu, l.mem, l.fan, l.psu, l.ponTemp, l.ponTx, l.ponRx} {
		if len(c) > 0 {
			b.object(c)
		}
	}
	maxTemp := 0
	for _, bd := range h.Boards {
		idx := mustOID(bd.Index)
		cpu, mem := int64(bd.CPUPercent), int64(bd.MemoryPercent)
		if l.scaled {
			cpu, mem = cpu*100, mem*100
		}
		b.add(l.cpu.join(idx...), intValue(cpu))
		b.add(l.mem.join(idx...), intValue(mem))
		if !l.tempScalar {
			b.add(l.temp.join(idx...), intValue(int64(bd.TemperatureC)))
		}
		maxTemp = max(maxTemp, bd.TemperatureC)
	}
	if l.tempScalar {
		b.add(l.temp.join(0), intValue(int64(maxTemp)))
	} else {
		b.object(l.temp)
	}
	unit := func(col oid, us []Unit) {
		for _, u := range us {
			v := int64(1)
			if u.Failed {
				v = 2
			}
			b.add(col.join(mustOID(u.Index)...), intValue(v))
		}
	}
	unit(l.fan, h.Fans)
	unit(l.psu, h.PSUs)
	state := func(up bool) value {
		if up {
			return intValue(1)
		}
		return intValue(2)
	}
	for _, pp := range h.PONs {
		idx := uint32(pp.Index)
		b.add(oidIfTable.join(7, idx), state(pp.AdminUp))
		b.add(oidIfTable.join(8, idx), state(pp.OperUp && pp.AdminUp))
		if len(l.ponTx) > 0 {
			b.add(l.ponTemp.join(idx), intValue(int64(pp.TemperatureC)))
			tx, rx := int64(pp.TxCenti), int64(pp.RxCenti)
			if !pp.AdminUp {
				tx = huaweiNoReading
			}
			if !pp.OperUp || !pp.AdminUp {
				rx = huaweiNoReading
			}
			b.add(l.ponTx.join(idx), intValue(tx))
			b.add(l.ponRx.join(idx), intValue(rx))
		}
	}
	for _, u := range h.Uplinks {
		b.add(oidIfTable.join(1, u.Index), intValue(int64(u.Index)))
		b.add(oidIfTable.join(2, u.Index), strValue(u.Name))
		b.add(oidIfTable.join(3, u.Index), intValue(6)) // ethernetCsmacd
		b.add(oidIfTable.join(7, u.Index), intValue(1))
		b.add(oidIfTable.join(8, u.Index), state(u.OperUp))
		b.add(oidIfTable.join(14, u.Index), counterValue(uint64(u.InErrors)))
		b.add(oidIfTable.join(20, u.Index), counterValue(uint64(u.OutErrors)))
		b.add(oidIfName.join(u.Index), strValue(u.Name))
	}
	b.object(oidIfTable.join(14))
	b.object(oidIfTable.join(20))
	b.add(oidIfNum.join(0), intValue(int64(len(h.PONs)+len(h.Uplinks))))
}

// buildStaticHealth is buildStatic with the OLT's health tables.
func (p *profile) buildStaticHealth(name string, sh Shape, h Health) *mibView {
	b := &mibBuilder{strict: true}
	p.staticMIB(b, name, sh)
	p.healthMIB(b, h)
	for _, c := range p.columns {
		b.object(c.oid)
	}
	return b.build()
}

// Health returns the OLT's health state now (empty for a recording).
func (o *OLT) Health() Health {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.health.clone()
}

// HealthPatch changes the health state (control API PATCH
// /olts/{name}/health): a fan or power supply failed (false) or back (true)
// by index, a PON port's oper state by ifIndex (false: down, as a cut
// feeder fibre or a dead SFP), an uplink's oper state by ifIndex, a board's
// temperature by index. The ONUs are left as they are.
type HealthPatch struct {
	Fans         map[string]bool `json:"fans,omitempty"`
	PSUs         map[string]bool `json:"psus,omitempty"`
	PONs         map[string]bool `json:"pons,omitempty"`
	Uplinks      map[string]bool `json:"uplinks,omitempty"`
	TemperatureC map[string]int  `json:"temperature_c,omitempty"`
}

// PatchHealth applies p at once (no request sees half of it); an unknown
// index is an error and changes nothing.
func (o *OLT) PatchHealth(p HealthPatch) error {
	if o.prof == nil {
		return fmt.Errorf("olt %s serves a recording: its health cannot change", o.name)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.health.clone()
	units := func(what string, us []Unit, m map[string]bool) error {
		for idx, ok := range m {
			i := slices.IndexFunc(us, func(u Unit) bool { return u.Index == idx })
			if i < 0 {
				return fmt.Errorf("olt %s has no %s %q", o.name, what, idx)
			}
			us[i].Failed = !ok
		}
		return nil
	}
	if err := units("fan", h.Fans, p.Fans); err != nil {
		return err
	}
	if err := units("power supply", h.PSUs, p.PSUs); err != nil {
		return err
	}
	for idx, up := range p.PONs {
		i := slices.IndexFunc(h.PONs, func(pp PONPort) bool { return strconv.FormatInt(pp.Index, 10) == idx })
		if i < 0 {
			return fmt.Errorf("olt %s has no PON port %q", o.name, idx)
		}
		h.PONs[i].OperUp = up
	}
	for idx, up := range p.Uplinks {
		i := slices.IndexFunc(h.Uplinks, func(u Uplink) bool { return strconv.FormatUint(uint64(u.Index), 10) == idx })
		if i < 0 {
			return fmt.Errorf("olt %s has no uplink %q", o.name, idx)
		}
		h.Uplinks[i].OperUp = up
	}
	for idx, t := range p.TemperatureC {
		i := slices.IndexFunc(h.Boards, func(b Board) bool { return b.Index == idx })
		if i < 0 || t < -40 || t > 150 {
			return fmt.Errorf("olt %s: board %q temperature %d: want a board and -40..150", o.name, idx, t)
		}
		h.Boards[i].TemperatureC = t
	}
	o.health = h
	o.static.Store(nil) // rebuilt with the new health on the next request
	o.mib.Store(nil)
	return nil
}
