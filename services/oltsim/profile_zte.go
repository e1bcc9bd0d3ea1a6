package oltsim

import "fmt"

// zteProfile is a ZTE C300/C320 with firmware 2.x ("1082" tree).
// Port index 0x11000000 | shelf<<16 | slot<<8 | port (shelf 1); optical raw
// values decode as raw*0.002-30 dBm; offline ONUs read 65535.
func zteProfile() *profile {
	onu := mustOID("1.3.6.1.4.1.3902.1082.500.10.2.3.3.1")
	phase := mustOID("1.3.6.1.4.1.3902.1082.500.10.2.3.8.1")
	const noReading = 65535
	raw := func(centi int) int64 { return int64(centi)*5 + 15000 } // (dBm+30)/0.002
	rxIndex := func(s *onuState) oid { return oid{uint32(s.ponIndex), uint32(s.id), 1} }
	port1012 := func(s *onuState) oid {
		return oid{uint32(0x10000000 | s.slot<<16 | s.port<<8), uint32(s.id)}
	}
	return &profile{
		name:         "zte-c300",
		sysDescr:     "C300 Version V2.1.0 Software, Copyright (c) by ZTE Corporation Compiled",
		sysObjectID:  "1.3.6.1.4.1.3902.1082.1001.300.2.1",
		serialVendor: "ZTEG",
		firstSlot:    1,
		firstPort:    1,
		firstONU:     1,
		ponIndex:     func(slot, port int) int64 { return int64(0x11000000 | 1<<16 | slot<<8 | port) },
		rowIndex:     func(s *onuState) oid { return oid{uint32(s.ponIndex), uint32(s.id)} },
		ifDescr:      func(slot, port int) string { return fmt.Sprintf("gpon_1/%d/%d", slot, port) },
		columns: []column{
			{oid: onu.join(2), value: always(func(s *onuState) value {
				return strValue(fmt.Sprintf("ONU-1/%d/%d:%d", s.slot, s.port, s.id))
			})},
			{oid: onu.join(3), value: always(func(s *onuState) value { return strValue(s.desc) })},
			{oid: onu.join(18), value: always(func(s *onuState) value { return strValue(s.serialString("ZTEG")) })},
			{oid: phase.join(4), value: always(func(s *onuState) value {
				if s.online {
					return intValue(4) // working
				}
				if s.downCause == 13 {
					return intValue(5) // dyingGasp
				}
				return intValue(2) // LOS
			})},
			{oid: phase.join(7), value: always(func(s *onuState) value { return intValue(int64(s.downCause)) })},
			{oid: mustOID("1.3.6.1.4.1.3902.1082.500.10.2.3.10.1.2"), value: always(func(s *onuState) value {
				if s.online {
					return intValue(int64(s.distance))
				}
				return intValue(-1)
			})},
			{oid: mustOID("1.3.6.1.4.1.3902.1082.500.20.2.2.2.1.10"), index: rxIndex, value: always(func(s *onuState) value {
				if !s.online {
					return intValue(noReading)
				}
				return intValue(raw(s.rxCenti))
			})},
			{oid: mustOID("1.3.6.1.4.1.3902.1012.3.50.12.1.1.14"), index: port1012, value: always(func(s *onuState) value {
				if !s.online {
					return intValue(noReading)
				}
				return intValue(raw(s.txCenti))
			})},
		},
	}
}
