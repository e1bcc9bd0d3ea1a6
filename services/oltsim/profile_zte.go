package oltsim

import "fmt"

// zteProfile is a ZTE C300/C320 with firmware 2.x ("1082" tree).
// Port index 0x11000000 | shelf<<16 | slot<<8 | port (shelf 1); optical raw
// values decode as raw*0.002-30 dBm; offline ONUs read 65535.
func zteProfile() *profile {
	onu := mustOID("1.3.6.1.4.1.3902.1082.500.10.2.3.3.1")
	phase := mustOID("1.3.6.1.4.1.3902.1082.500.10.2.3.8.1")
	const noReading = 65535
	raw := func(centi int16) int64 { return int64(centi)*5 + 15000 } // (dBm+30)/0.002
	pon := func(slot, port int) int64 { return int64(0x11000000 | 1<<16 | slot<<8 | port) }
	rxIndex := func(s *onuState) rowIdx { return idx3(uint32(pon(s.Slot(), s.Port())), uint32(s.id), 1) }
	port1012 := func(s *onuState) rowIdx {
		return idx2(uint32(0x10000000|s.Slot()<<16|s.Port()<<8), uint32(s.id))
	}
	return (&profile{
		name:         "zte-c300",
		sysDescr:     "C300 Version V2.1.0 Software, Copyright (c) by ZTE Corporation Compiled",
		sysObjectID:  "1.3.6.1.4.1.3902.1082.1001.300.2.1",
		serialVendor: "ZTEG",
		firstSlot:    1,
		firstPort:    1,
		firstONU:     1,
		ponIndex:     pon,
		rowIndex:     func(s *onuState) rowIdx { return idx2(uint32(pon(s.Slot(), s.Port())), uint32(s.id)) },
		ifDescr:      func(slot, port int) string { return fmt.Sprintf("gpon_1/%d/%d", slot, port) },
		columns: []column{
			{oid: onu.join(2), value: func(s *onuState) cell {
				c := strCell("ONU-1/")
				c.num(int64(s.slot))
				c.str("/")
				c.num(int64(s.port))
				c.str(":")
				c.num(int64(s.id))
				return c
			}},
			{oid: onu.join(3), value: func(s *onuState) cell { return s.descCell() }},
			{oid: onu.join(18), value: func(s *onuState) cell { return s.serialCell("ZTEG") }},
			{oid: phase.join(4), value: func(s *onuState) cell {
				if s.online {
					return intCell(4) // working
				}
				if s.downCause == 13 {
					return intCell(5) // dyingGasp
				}
				return intCell(2) // LOS
			}},
			{oid: phase.join(7), value: func(s *onuState) cell { return intCell(int64(s.downCause)) }},
			{oid: mustOID("1.3.6.1.4.1.3902.1082.500.10.2.3.10.1.2"), value: func(s *onuState) cell {
				if s.online {
					return intCell(int64(s.distance))
				}
				return intCell(-1)
			}},
			{oid: mustOID("1.3.6.1.4.1.3902.1082.500.20.2.2.2.1.10"), index: rxIndex, value: func(s *onuState) cell {
				if !s.online {
					return intCell(noReading)
				}
				return intCell(raw(s.rxCenti))
			}},
			// Tx in the 1082 tree (firmware 2.x), same rows as Rx.
			{oid: mustOID("1.3.6.1.4.1.3902.1082.500.20.2.2.2.1.14"), index: rxIndex, value: func(s *onuState) cell {
				if !s.online {
					return intCell(noReading)
				}
				return intCell(raw(s.txCenti))
			}},
			{oid: mustOID("1.3.6.1.4.1.3902.1012.3.50.12.1.1.14"), index: port1012, value: func(s *onuState) cell {
				if !s.online {
					return intCell(noReading)
				}
				return intCell(raw(s.txCenti))
			}},
		},
	}).init()
}
