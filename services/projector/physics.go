package projector

import (
	"math"
	"sort"

	"github.com/facho-olt/facho/streams"
)

// The physical range of each numeric ONU field: a decoded value outside it
// cannot be a reading (a forged batch, or a profile that decodes a
// sentinel as a number), and the batch carrying it is refused with the
// reason (trust.go). The ranges are wide on purpose: they refuse the
// impossible, not the unusual. A GPON receiver's sensitivity ends near
// -30 dBm and its overload near +8 dBm; no optical power of a PON is
// below -60 or above +20 dBm.
var physicalRange = map[string]struct {
	lo, hi float64
	unit   string
}{
	streams.FieldRxPower:     {-60, 20, "dBm"},
	streams.FieldTxPower:     {-60, 20, "dBm"},
	streams.FieldOLTRxPower:  {-60, 20, "dBm"},
	streams.FieldDistance:    {0, 200_000, "m"}, // GPON's logical reach is 60 km
	streams.FieldTemperature: {-70, 150, "°C"},
	streams.FieldVoltage:     {0, 100, "V"},
	streams.FieldBias:        {0, 1000, "mA"},
}

// PhysicalRange returns the range of a numeric ONU field and its unit (ok
// false: the field has none).
func PhysicalRange(field string) (lo, hi float64, unit string, ok bool) {
	r, ok := physicalRange[field]
	return r.lo, r.hi, r.unit, ok
}

// checkPhysics refuses a batch that carries a value outside its field's
// physical range, naming the first (in ONU order) in the reason.
func checkPhysics(b streams.VarbindBatch, d Decoded) *refusal {
	for _, k := range d.Keys() {
		f := d.ONUs[k]
		if f.RxPowerDBm != nil {
			if r := outside(b, k, streams.FieldRxPower, *f.RxPowerDBm); r != nil {
				return r
			}
		}
		fields := make([]string, 0, len(f.Num))
		for field := range f.Num {
			fields = append(fields, field)
		}
		sort.Strings(fields)
		for _, field := range fields {
			if v := f.Num[field]; v != nil {
				if r := outside(b, k, field, *v); r != nil {
					return r
				}
			}
		}
	}
	return nil
}

func outside(b streams.VarbindBatch, k ONUKey, field string, v float64) *refusal {
	lo, hi, unit, ok := PhysicalRange(field)
	if !ok || (v >= lo && v <= hi && !math.IsNaN(v)) {
		return nil
	}
	return refuse(RefuseImpossible, "varbind batch %d of execution %s: ONU %d.%d %s %g %s is outside %g..%g %s, not a reading",
		b.Batch, b.ExecutionID, k.PonIndex, k.ONUID, field, v, unit, lo, hi, unit)
}
