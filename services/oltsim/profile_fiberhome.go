package oltsim

import "fmt"

// fiberhomeProfile is a FiberHome AN5516. Row index slot*2^25+pon*2^19+onu*2^8;
// optical values in 0.01 units; offline ONUs have no optical rows.
func fiberhomeProfile() *profile {
	auth := mustOID("1.3.6.1.4.1.5875.800.3.10.1.1")
	opt := mustOID("1.3.6.1.4.1.5875.800.3.9.3.3.1")
	pon := func(slot, port int) int64 { return int64(slot)<<25 | int64(port)<<19 }
	return (&profile{
		name:         "fiberhome-an5516",
		sysDescr:     "AN5516-06",
		sysObjectID:  "1.3.6.1.4.1.5875.800.1001.11",
		serialVendor: "FHTT",
		firstSlot:    1,
		firstPort:    1,
		firstONU:     1,
		ponIndex:     pon,
		rowIndex:     func(s *onuState) rowIdx { return idx1(uint32(pon(s.Slot(), s.Port()) | int64(s.id)<<8)) },
		ifDescr:      func(slot, port int) string { return fmt.Sprintf("PON %d/%d", slot, port) },
		columns: []column{
			{oid: auth.join(2), value: func(s *onuState) cell { return intCell(int64(s.slot)) }},
			{oid: auth.join(3), value: func(s *onuState) cell { return intCell(int64(s.port)) }},
			{oid: auth.join(4), value: func(s *onuState) cell { return intCell(int64(s.id)) }},
			{oid: auth.join(5), value: func(s *onuState) cell { return intCell(869) }},
			{oid: auth.join(7), value: func(s *onuState) cell { return s.descCell() }},
			{oid: auth.join(10), value: func(s *onuState) cell { return s.serialCell("FHTT") }},
			{oid: auth.join(11), value: func(s *onuState) cell {
				if s.online {
					return intCell(1)
				}
				return intCell(2)
			}},
			{oid: opt.join(6), has: online, value: func(s *onuState) cell { return intCell(int64(s.rxCenti)) }},
			{oid: opt.join(7), has: online, value: func(s *onuState) cell { return intCell(int64(s.txCenti)) }},
			{oid: opt.join(8), has: online, value: func(s *onuState) cell { return intCell(int64(s.voltCenti)) }},
			{oid: opt.join(9), has: online, value: func(s *onuState) cell { return intCell(int64(s.biasCenti)) }},
			{oid: opt.join(10), has: online, value: func(s *onuState) cell { return intCell(int64(s.tempCenti)) }},
		},
	}).init()
}
