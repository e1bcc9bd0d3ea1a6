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
	return (&profile{
		name:         "vsol-v1600g",
		sysDescr:     "V1600G",
		sysObjectID:  "1.3.6.1.4.1.37950.1.1.5.10.14.1",
		serialVendor: "GPON",
		firstONU:     1,
		flatPorts:    true,
		ponIndex:     func(slot, port int) int64 { return int64(port) },
		rowIndex:     func(s *onuState) rowIdx { return idx2(uint32(s.port), uint32(s.id)) },
		ifDescr:      func(slot, port int) string { return fmt.Sprintf("PON0/%d", port) },
		columns: []column{
			{oid: status, value: func(s *onuState) cell {
				if s.online {
					return intCell(3)
				}
				return intCell(2)
			}},
			{oid: info.join(3), value: func(s *onuState) cell { return s.descCell() }},
			{oid: info.join(5), value: func(s *onuState) cell { return s.serialCell("GPON") }},
			{oid: opt.join(3), has: online, value: func(s *onuState) cell { return centiCell(int(s.tempCenti)) }},
			{oid: opt.join(4), has: online, value: func(s *onuState) cell { return centiCell(int(s.voltCenti)) }},
			{oid: opt.join(5), has: online, value: func(s *onuState) cell { return centiCell(int(s.biasCenti)) }},
			{oid: opt.join(6), has: online, value: func(s *onuState) cell { return centiCell(int(s.txCenti)) }},
			{oid: opt.join(7), has: online, value: func(s *onuState) cell { return centiCell(int(s.rxCenti)) }},
		},
	}).init()
}
