package profiles

import (
	"errors"
	"fmt"
)

// Bounds are the most one execution may read from an OLT. A poller ends an
// execution that reaches one FAILED (cause bound_exceeded, the bound named
// in its error) and publishes nothing past it, so one broken or hostile
// agent (an endless table, an OLT that answers forever) cannot flood the
// streams and the read models. ValueBytes is not a failure: a longer value
// is cut to it.
//
// A profile may set its own (YAML key bounds); a zero field takes the
// vendor's default (VendorBounds), and the poller's global ceiling
// (DefaultBounds, or its configuration) caps every field (Within).
type Bounds struct {
	// RowsPerTable: rows of one column (one table) a walk may read.
	RowsPerTable int `yaml:"rows_per_table,omitempty" json:"rows_per_table,omitempty"`
	// ONUsPerPON: distinct ONUs of one PON port a walk may read (a GPON
	// port carries at most 128).
	ONUsPerPON int `yaml:"onus_per_pon,omitempty" json:"onus_per_pon,omitempty"`
	// ONUsPerOLT: distinct ONUs of the OLT a walk may read, and a get may
	// read at once.
	ONUsPerOLT int `yaml:"onus_per_olt,omitempty" json:"onus_per_olt,omitempty"`
	// VarbindsPerExecution: varbinds one execution may read.
	VarbindsPerExecution int `yaml:"varbinds_per_execution,omitempty" json:"varbinds_per_execution,omitempty"`
	// BytesPerExecution: bytes of SNMP answers one execution may receive
	// (UDP payloads, every answer read counted, late or not).
	BytesPerExecution int64 `yaml:"bytes_per_execution,omitempty" json:"bytes_per_execution,omitempty"`
	// ValueBytes: the longest value kept; a longer one (a string) is cut
	// to this many bytes.
	ValueBytes int `yaml:"value_bytes,omitempty" json:"value_bytes,omitempty"`
}

// Limits of what a bound may be set to (Validate).
const (
	MaxRowsPerTable         = 1 << 20
	MaxONUsPerPON           = 4096
	MaxONUsPerOLT           = 1 << 20
	MaxVarbindsPerExecution = 1 << 24
	MaxBytesPerExecution    = 4 << 30
	MaxValueBytes           = 65535
)

// DefaultBounds is the global ceiling when nothing else is configured:
// above any OLT on sale (the largest chassis carry some 36,000 ONUs), far
// below what would hurt the system.
func DefaultBounds() Bounds {
	return Bounds{
		RowsPerTable:         65536,
		ONUsPerPON:           256,
		ONUsPerOLT:           65536,
		VarbindsPerExecution: 1 << 20,
		BytesPerExecution:    256 << 20,
		ValueBytes:           1024,
	}
}

// VendorBounds are the plausible maxima of the built-in profiles' OLT
// families: 128 ONUs per GPON port (the split ratio their GPON boards
// accept), 256 for the families whose chassis also take XGS-PON and
// combo boards (which register up to 256 ONUs per port), and per OLT the
// largest chassis's PON ports times that. A profile not listed (loaded
// from a folder, generic) has no bounds of its own: the ceiling applies.
func VendorBounds(profileID string) Bounds {
	perPON, ports := 0, 0
	switch profileID {
	case "huawei-ma5800": // MA5800-X17: 17 boards x 16 ports, XGS-PON boards
		perPON, ports = 256, 17*16
	case "zte-1082": // C600/C650: 17 boards x 16 ports, XGS-PON boards
		perPON, ports = 256, 17*16
	case "zte-1012": // C300/C320 GPON: 14 boards x 16 ports
		perPON, ports = 128, 14*16
	case "nokia-isam": // ISAM FX-16: 16 boards x 16 ports, XGS-PON boards
		perPON, ports = 256, 16*16
	case "fiberhome-an5516": // AN5516-01 GPON: 16 boards x 16 ports
		perPON, ports = 128, 16*16
	case "vsol-v1600", "cdata-fd16xx": // GPON pizza boxes of up to 16 ports
		perPON, ports = 128, 16
	default:
		return Bounds{}
	}
	return Bounds{RowsPerTable: perPON * ports, ONUsPerPON: perPON, ONUsPerOLT: perPON * ports}
}

// EffectiveBounds are the profile's bounds under ceiling: its own fields,
// else its vendor's, each capped by the ceiling's.
func (p Profile) EffectiveBounds(ceiling Bounds) Bounds {
	return p.Bounds.Or(VendorBounds(p.ID)).Within(ceiling)
}

// Or fills b's zero (unset) fields from d.
func (b Bounds) Or(d Bounds) Bounds {
	pick := func(x, y int) int {
		if x != 0 {
			return x // a negative one stays, for Validate to refuse
		}
		return y
	}
	out := Bounds{
		RowsPerTable:         pick(b.RowsPerTable, d.RowsPerTable),
		ONUsPerPON:           pick(b.ONUsPerPON, d.ONUsPerPON),
		ONUsPerOLT:           pick(b.ONUsPerOLT, d.ONUsPerOLT),
		VarbindsPerExecution: pick(b.VarbindsPerExecution, d.VarbindsPerExecution),
		BytesPerExecution:    b.BytesPerExecution,
		ValueBytes:           pick(b.ValueBytes, d.ValueBytes),
	}
	if out.BytesPerExecution == 0 {
		out.BytesPerExecution = d.BytesPerExecution
	}
	return out
}

// Within caps every field of b by ceiling's; a zero field of b takes the
// ceiling's.
func (b Bounds) Within(ceiling Bounds) Bounds {
	capped := func(x, c int) int {
		if x <= 0 || (c > 0 && x > c) {
			return c
		}
		return x
	}
	out := Bounds{
		RowsPerTable:         capped(b.RowsPerTable, ceiling.RowsPerTable),
		ONUsPerPON:           capped(b.ONUsPerPON, ceiling.ONUsPerPON),
		ONUsPerOLT:           capped(b.ONUsPerOLT, ceiling.ONUsPerOLT),
		VarbindsPerExecution: capped(b.VarbindsPerExecution, ceiling.VarbindsPerExecution),
		BytesPerExecution:    b.BytesPerExecution,
		ValueBytes:           capped(b.ValueBytes, ceiling.ValueBytes),
	}
	if out.BytesPerExecution <= 0 || (ceiling.BytesPerExecution > 0 && out.BytesPerExecution > ceiling.BytesPerExecution) {
		out.BytesPerExecution = ceiling.BytesPerExecution
	}
	return out
}

// Validate checks the fields set (zero: not set) against the limits.
func (b Bounds) Validate() error {
	var errs []error
	check := func(name string, v, limit int64) {
		if v < 0 || v > limit {
			errs = append(errs, fmt.Errorf("%s %d: want 0 (not set) or 1..%d", name, v, limit))
		}
	}
	check("rows_per_table", int64(b.RowsPerTable), MaxRowsPerTable)
	check("onus_per_pon", int64(b.ONUsPerPON), MaxONUsPerPON)
	check("onus_per_olt", int64(b.ONUsPerOLT), MaxONUsPerOLT)
	check("varbinds_per_execution", int64(b.VarbindsPerExecution), MaxVarbindsPerExecution)
	check("bytes_per_execution", b.BytesPerExecution, MaxBytesPerExecution)
	check("value_bytes", int64(b.ValueBytes), MaxValueBytes)
	if b.ValueBytes > 0 && b.ValueBytes < 16 {
		errs = append(errs, fmt.Errorf("value_bytes %d: want at least 16 (a GPON serial, a short name)", b.ValueBytes))
	}
	return errors.Join(errs...)
}

// Complete says whether every field is set (a ceiling must be).
func (b Bounds) Complete() error {
	if b.RowsPerTable <= 0 || b.ONUsPerPON <= 0 || b.ONUsPerOLT <= 0 || b.VarbindsPerExecution <= 0 || b.BytesPerExecution <= 0 || b.ValueBytes <= 0 {
		return fmt.Errorf("bounds %+v: every bound must be set (> 0)", b)
	}
	return nil
}
