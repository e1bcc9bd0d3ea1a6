package oltsim

import (
	"fmt"
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
// derive their column values.
type onuState struct {
	slot, port, id int
	ponIndex       int64
	serialRaw      [4]byte
	desc           string
	online         bool
	rxCenti        int // ONU Rx power, 0.01 dBm
	txCenti        int // ONU Tx power, 0.01 dBm
	oltRxCenti     int // OLT Rx power from this ONU, 0.01 dBm
	distance       int // metres
	downCause      int
	tempCenti      int // 0.01 C
	voltCenti      int // 0.01 V
	biasCenti      int // 0.01 mA
}

// newONUState draws one ONU's values from rng.
func newONUState(p *profile, rng *rand.Rand, slot, port, id int) onuState {
	var s onuState
	s.slot, s.port, s.id = slot, port, id
	s.ponIndex = p.ponIndex(slot, port)
	v := rng.Uint32()
	s.serialRaw = [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	s.desc = fmt.Sprintf("cliente-%d-%d-%d", slot, port, id)
	s.online = rng.Float64() >= 0.1
	s.rxCenti = -800 - rng.IntN(1901)
	s.txCenti = 150 + rng.IntN(200)
	s.oltRxCenti = -1800 - rng.IntN(1000)
	s.distance = 200 + rng.IntN(19800)
	s.downCause = []int{2, 13, 16}[rng.IntN(3)]
	s.tempCenti = 3000 + rng.IntN(3000)
	s.voltCenti = 320 + rng.IntN(20)
	s.biasCenti = 800 + rng.IntN(1200)
	return s
}

func (s *onuState) public(p *profile) ONU {
	o := ONU{
		Slot: s.slot, Port: s.port, PonIndex: s.ponIndex, ID: s.id,
		Index:       p.rowIndex(s).String(),
		Serial:      p.serialVendor + fmt.Sprintf("%02X%02X%02X%02X", s.serialRaw[0], s.serialRaw[1], s.serialRaw[2], s.serialRaw[3]),
		Description: s.desc,
		Online:      s.online,
		RxPowerDBm:  math.NaN(),
		TxPowerDBm:  math.NaN(),
		DistanceM:   -1,
	}
	if s.online {
		o.RxPowerDBm = float64(s.rxCenti) / 100
		o.TxPowerDBm = float64(s.txCenti) / 100
		o.DistanceM = s.distance
	}
	return o
}

// serialBytes is the 8-byte wire form: 4 ASCII vendor bytes + 4 raw bytes.
func (s *onuState) serialBytes(vendor string) []byte {
	b := make([]byte, 0, 8)
	b = append(b, vendor...)
	return append(b, s.serialRaw[:]...)
}

// serialString is the rendered form, e.g. "ZTEGC0A1B2C3".
func (s *onuState) serialString(vendor string) string {
	return fmt.Sprintf("%s%02X%02X%02X%02X", vendor, s.serialRaw[0], s.serialRaw[1], s.serialRaw[2], s.serialRaw[3])
}

// centiString renders 0.01 units as a decimal string, e.g. -1047 => "-10.47".
func centiString(v int) string {
	sign := ""
	if v < 0 {
		sign = "-"
		v = -v
	}
	return fmt.Sprintf("%s%d.%02d", sign, v/100, v%100)
}
