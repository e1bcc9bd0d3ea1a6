package oltsim

import "fmt"

// huaweiProfile is a Huawei MA5800 (same ONT tables as MA5600T/MA5603T).
// Row index <PON ifIndex>.<ONT id>, ifIndex = 4194304000 + slot*8192 + port*256.
func huaweiProfile() *profile {
	base := mustOID("1.3.6.1.4.1.2011.6.128.1.1.2")
	const noReading = 2147483647
	optical := func(f func(s *onuState) int64) func(s *onuState) (value, bool) {
		return func(s *onuState) (value, bool) {
			if !s.online {
				return intValue(noReading), true
			}
			return intValue(f(s)), true
		}
	}
	return &profile{
		name:         "huawei-ma5800",
		sysDescr:     "Huawei Integrated Access Software (MA5800). Copyright(C) Huawei Technologies Co., Ltd. 2002-2024. All rights reserved.",
		sysObjectID:  "1.3.6.1.4.1.2011.2.248",
		serialVendor: "HWTC",
		firstSlot:    1,
		firstPort:    0,
		firstONU:     0,
		ponIndex:     func(slot, port int) int64 { return 4194304000 + int64(slot)*8192 + int64(port)*256 },
		rowIndex:     func(s *onuState) oid { return oid{uint32(s.ponIndex), uint32(s.id)} },
		ifDescr:      func(slot, port int) string { return fmt.Sprintf("GPON 0/%d/%d", slot, port) },
		columns: []column{
			{oid: base.join(43, 1, 3), value: always(func(s *onuState) value { return bytesValue(s.serialBytes("HWTC")) })},
			{oid: base.join(43, 1, 9), value: always(func(s *onuState) value { return strValue(s.desc) })},
			{oid: base.join(43, 1, 10), value: always(func(s *onuState) value { return intValue(1) })},
			{oid: base.join(46, 1, 15), value: always(func(s *onuState) value {
				if s.online {
					return intValue(1)
				}
				return intValue(2)
			})},
			{oid: base.join(46, 1, 20), value: always(func(s *onuState) value {
				if s.online {
					return intValue(int64(s.distance))
				}
				return intValue(-1)
			})},
			{oid: base.join(46, 1, 24), value: always(func(s *onuState) value { return intValue(int64(s.downCause)) })},
			{oid: base.join(51, 1, 3), value: optical(func(s *onuState) int64 { return int64(s.txCenti) })},
			{oid: base.join(51, 1, 4), value: optical(func(s *onuState) int64 { return int64(s.rxCenti) })},
			{oid: base.join(51, 1, 6), value: optical(func(s *onuState) int64 { return int64(s.oltRxCenti) + 10000 })},
		},
	}
}
