package oltsim

import "fmt"

// vsolProfile is a V-SOL V1600G. PON ports are numbered 1..N with no slot;
// row index <pon>.<onu>. The optical table holds strings ("-10.47") and only
// online ONUs; the status column (3 online, 2 offline) matches the
// recording, the name/serial columns (.6.1.1.2.1.{3,5}) are assumed.
func vsolProfile() *profile {
	status := mustOID("1.3.6.1.4.1.37950.1.1.6.1.1.1.1.5")
	info := mustOID("1.3.6.1.4.1.37950.1.1.6.1.1.2.1")
	opt := mustOID("1.3.6.1.4.1.37950.1.1.6.1.1.3.1")
	optStr := func(f func(s *onuState) int) func(s *onuState) (value, bool) {
		return func(s *onuState) (value, bool) {
			if !s.online {
				return value{}, false
			}
			return strValue(centiString(f(s))), true
		}
	}
	return &profile{
		name:         "vsol-v1600g",
		sysDescr:     "V1600G",
		sysObjectID:  "1.3.6.1.4.1.37950.1.1.5.10.14.1",
		serialVendor: "GPON",
		firstONU:     1,
		flatPorts:    true,
		ponIndex:     func(slot, port int) int64 { return int64(port) },
		rowIndex:     func(s *onuState) oid { return oid{uint32(s.port), uint32(s.id)} },
		ifDescr:      func(slot, port int) string { return fmt.Sprintf("PON0/%d", port) },
		columns: []column{
			{oid: status, value: always(func(s *onuState) value {
				if s.online {
					return intValue(3)
				}
				return intValue(2)
			})},
			{oid: info.join(3), value: always(func(s *onuState) value { return strValue(s.desc) })},
			{oid: info.join(5), value: always(func(s *onuState) value { return strValue(s.serialString("GPON")) })},
			{oid: opt.join(3), value: optStr(func(s *onuState) int { return s.tempCenti })},
			{oid: opt.join(4), value: optStr(func(s *onuState) int { return s.voltCenti })},
			{oid: opt.join(5), value: optStr(func(s *onuState) int { return s.biasCenti })},
			{oid: opt.join(6), value: optStr(func(s *onuState) int { return s.txCenti })},
			{oid: opt.join(7), value: optStr(func(s *onuState) int { return s.rxCenti })},
		},
	}
}
