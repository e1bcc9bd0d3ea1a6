package oltsim

import (
	"math"
	"math/rand/v2"
)

// ONU is the ground truth of one ONU row as a poller should read it.
type ONU struct {
	Slot, Port int
	// PonIndex is the vendor's PON-port index used in the row index
	// (Huawei: 4194304000 + slot*8192 + port*256).
	PonIndex int64
	ID       int
	// Index is the full row index as dotted decimal, e.g. "4194312192.3".
	Index string
	// Serial as a poller renders it, e.g. "HWTC1A2B3C4D".
	Serial      string
	Description string
	Online      bool
	// RxPowerDBm is the ONU's received optical power in dBm with 0.01 dB
	// resolution; NaN when offline (the agent reports "no reading").
	RxPowerDBm float64
	// TxPowerDBm is the ONU's transmitted power; NaN when offline.
	TxPowerDBm float64
	// DistanceM is the ranging distance in metres; -1 when offline.
	DistanceM int
}

// onuState is the simulator's internal row, from which vendor profiles
// derive their column values. It is a small fixed-size record with no
// pointers (26 bytes): everything else a column serves (row index, PON
// index, description, rendered serial, OIDs) is computed from it on demand,
// so a fleet of a million ONUs stays within a few tens of MB. The ranges
// of every field are bounded by Shape validation (64x32x256) and by the
// draws below.
type onuState struct {
	serialRaw  [4]byte
	id         uint16 // ONU id, firstONU .. firstONU+255
	port       uint16 // PON port (V-SOL numbers them 1..Slots*PortsPerSlot)
	slot       uint8
	downCause  uint8
	online     bool
	rxCenti    int16  // ONU Rx power, 0.01 dBm
	txCenti    int16  // ONU Tx power, 0.01 dBm
	oltRxCenti int16  // OLT Rx power from this ONU, 0.01 dBm
	distance   uint16 // metres
	tempCenti  int16  // 0.01 C
	voltCenti  int16  // 0.01 V
	biasCenti  int16  // 0.01 mA
}

func (s *onuState) Slot() int { return int(s.slot) }
func (s *onuState) Port() int { return int(s.port) }
func (s *onuState) ID() int   { return int(s.id) }

// newONUState draws one ONU's values from rng (always the same draws in
// the same order, so a seed gives the same fleet as before the compact
// layout).
func newONUState(rng *rand.Rand, slot, port, id int) onuState {
	var s onuState
	s.slot, s.port, s.id = uint8(slot), uint16(port), uint16(id)
	v := rng.Uint32()
	s.serialRaw = [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	s.online = rng.Float64() >= 0.1
	s.rxCenti = int16(-800 - rng.IntN(1901))
	s.txCenti = int16(150 + rng.IntN(200))
	s.oltRxCenti = int16(-1800 - rng.IntN(1000))
	s.distance = uint16(200 + rng.IntN(19800))
	s.downCause = [3]uint8{2, 13, 16}[rng.IntN(3)]
	s.tempCenti = int16(3000 + rng.IntN(3000))
	s.voltCenti = int16(320 + rng.IntN(20))
	s.biasCenti = int16(800 + rng.IntN(1200))
	return s
}

func (s *onuState) public(p *profile) ONU {
	desc := s.descCell()
	o := ONU{
		Slot: s.Slot(), Port: s.Port(), PonIndex: p.ponIndex(s.Slot(), s.Port()), ID: s.ID(),
		Index:       p.rowIndex(s).String(),
		Serial:      s.serialString(p.serialVendor),
		Description: string(desc.bytes()),
		Online:      s.online,
		RxPowerDBm:  math.NaN(),
		TxPowerDBm:  math.NaN(),
		DistanceM:   -1,
	}
	if s.online {
		o.RxPowerDBm = float64(s.rxCenti) / 100
		o.TxPowerDBm = float64(s.txCenti) / 100
		o.DistanceM = int(s.distance)
	}
	return o
}

// descCell is the description, "cliente-<slot>-<port>-<id>".
func (s *onuState) descCell() cell {
	c := cell{typ: tagOctetString}
	c.str("cliente-")
	c.num(int64(s.slot))
	c.str("-")
	c.num(int64(s.port))
	c.str("-")
	c.num(int64(s.id))
	return c
}

// serialBytesCell is the 8-byte wire form: 4 ASCII vendor bytes + 4 raw bytes.
func (s *onuState) serialBytesCell(vendor string) cell {
	c := cell{typ: tagOctetString}
	c.str(vendor)
	c.raw(s.serialRaw[:])
	return c
}

// serialCell is the rendered form, e.g. "ZTEGC0A1B2C3".
func (s *onuState) serialCell(vendor string) cell {
	c := cell{typ: tagOctetString}
	c.str(vendor)
	for _, x := range s.serialRaw {
		c.hex(x)
	}
	return c
}

func (s *onuState) serialString(vendor string) string {
	c := s.serialCell(vendor)
	return string(c.bytes())
}

// centiCell renders 0.01 units as a decimal string, e.g. -1047 => "-10.47".
func centiCell(v int) cell {
	c := cell{typ: tagOctetString}
	if v < 0 {
		c.str("-")
		v = -v
	}
	c.num(int64(v / 100))
	c.str(".")
	if v%100 < 10 {
		c.str("0")
	}
	c.num(int64(v % 100))
	return c
}

// centiString is centiCell as a string.
func centiString(v int) string {
	c := centiCell(v)
	return string(c.bytes())
}
