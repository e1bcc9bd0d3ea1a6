package oltsim

import "fmt"

// huaweiProfile is a Huawei MA5800 (same ONT tables as MA5600T/MA5603T).
// Row index <PON ifIndex>.<ONT id>, ifIndex = 4194304000 + slot*8192 + port*256.
func huaweiProfile() *profile {
	base := mustOID("1.3.6.1.4.1.2011.6.128.1.1.2")
	const noReading = 2147483647
	pon := func(slot, port int) int64 { return 4194304000 + int64(slot)*8192 + int64(port)*256 }
	return (&profile{
		name:         "huawei-ma5800",
		sysDescr:     "Huawei Integrated Access Software (MA5800). Copyright(C) Huawei Technologies Co., Ltd. 2002-2024. All rights reserved.",
		sysObjectID:  "1.3.6.1.4.1.2011.2.248",
		serialVendor: "HWTC",
		firstSlot:    1,
		firstPort:    0,
		firstONU:     0,
		ponIndex:     pon,
		rowIndex:     func(s *onuState) rowIdx { return idx2(uint32(pon(s.Slot(), s.Port())), uint32(s.id)) },
		ifDescr:      func(slot, port int) string { return fmt.Sprintf("GPON 0/%d/%d", slot, port) },
		columns: []column{
			{oid: base.join(43, 1, 3), value: func(s *onuState) cell { return s.serialBytesCell("HWTC") }},
			{oid: base.join(43, 1, 9), value: func(s *onuState) cell { return s.descCell() }},
			{oid: base.join(43, 1, 10), value: func(s *onuState) cell { return intCell(1) }},
			{oid: base.join(46, 1, 15), value: func(s *onuState) cell {
				if s.online {
					return intCell(1)
				}
				return intCell(2)
			}},
			{oid: base.join(46, 1, 20), value: func(s *onuState) cell {
				if s.online {
					return intCell(int64(s.distance))
				}
				return intCell(-1)
			}},
			{oid: base.join(46, 1, 24), value: func(s *onuState) cell { return intCell(int64(s.downCause)) }},
			{oid: base.join(51, 1, 3), value: func(s *onuState) cell {
				if !s.online {
					return intCell(noReading)
				}
				return intCell(int64(s.txCenti))
			}},
			{oid: base.join(51, 1, 4), value: func(s *onuState) cell {
				if !s.online {
					return intCell(noReading)
				}
				return intCell(int64(s.rxCenti))
			}},
			{oid: base.join(51, 1, 6), value: func(s *onuState) cell {
				if !s.online {
					return intCell(noReading)
				}
				return intCell(int64(s.oltRxCenti) + 10000)
			}},
			// hwGponOntOpticalDdm*: temperature (C), bias (mA), voltage (0.001 V).
			{oid: base.join(51, 1, 1), value: func(s *onuState) cell {
				if !s.online {
					return intCell(noReading)
				}
				return intCell(int64(s.tempCenti) / 100)
			}},
			{oid: base.join(51, 1, 2), value: func(s *onuState) cell {
				if !s.online {
					return intCell(noReading)
				}
				return intCell(int64(s.biasCenti) / 100)
			}},
			{oid: base.join(51, 1, 5), value: func(s *onuState) cell {
				if !s.online {
					return intCell(noReading)
				}
				return intCell(int64(s.voltCenti) * 10)
			}},
		},
	}).init()
}
