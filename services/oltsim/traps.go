package oltsim

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gosnmp/gosnmp"
)

// TrapTarget is where a generated OLT sends SNMPv2c traps when one of its
// ONUs goes offline or comes back (a Life tick, SetONUOnline, PATCH
// /olts/{name}/onus/{index}), with its vendor's trap OIDs and varbinds
// (the trap maps of Facho's vendor profiles). The traps leave from the
// OLT's own socket, so their source is the OLT's address. Empty Dest: no
// traps.
type TrapTarget struct {
	// Dest is the receiver, host:port.
	Dest string `json:"dest" yaml:"dest"`
	// Community of the traps; empty: the OLT's community.
	Community string `json:"-" yaml:"community"`
	// Inform sends informs instead of traps (the acknowledgement is not
	// awaited: a simulator never retries).
	Inform bool `json:"inform" yaml:"inform"`
}

// trapState is an OLT's current target and what it sent.
type trapState struct {
	target atomic.Pointer[trapDest]
	sent   atomic.Uint64
	failed atomic.Uint64
	reqID  atomic.Uint32
}

type trapDest struct {
	cfg  TrapTarget
	addr *net.UDPAddr
}

// SetTrapTarget changes where the OLT sends its traps (empty Dest: none).
func (o *OLT) SetTrapTarget(t TrapTarget) error {
	if t.Dest == "" {
		o.traps.target.Store(nil)
		return nil
	}
	addr, err := net.ResolveUDPAddr("udp", t.Dest)
	if err != nil {
		return fmt.Errorf("olt %s: trap destination %q: %w", o.name, t.Dest, err)
	}
	if t.Community == "" {
		t.Community = o.cfg.Community
	}
	o.traps.target.Store(&trapDest{cfg: t, addr: addr})
	return nil
}

// TrapsSent is how many traps the OLT sent (and failed to send).
func (o *OLT) TrapsSent() (sent, failed uint64) { return o.traps.sent.Load(), o.traps.failed.Load() }

// onuChanged sends the trap of an ONU that went offline or came back,
// when the OLT has a trap target. Called with o.mu held (the socket write
// does not block on a UDP socket with room in its buffer).
func (o *OLT) onuChanged(s *onuState) {
	d := o.traps.target.Load()
	if d == nil || o.prof == nil || o.conn == nil {
		return
	}
	trapOID, vbs, err := vendorTrap(o.prof, s)
	if err != nil {
		o.traps.failed.Add(1)
		return
	}
	typ := gosnmp.SNMPv2Trap
	if d.cfg.Inform {
		typ = gosnmp.InformRequest
	}
	up := o.uptimeTicks(time.Now())
	p := &gosnmp.SnmpPacket{Version: gosnmp.Version2c, Community: d.cfg.Community, PDUType: typ, RequestID: o.traps.reqID.Add(1),
		Variables: append([]gosnmp.SnmpPDU{
			{Name: ".1.3.6.1.2.1.1.3.0", Type: gosnmp.TimeTicks, Value: up},
			{Name: ".1.3.6.1.6.3.1.1.4.1.0", Type: gosnmp.ObjectIdentifier, Value: "." + trapOID},
		}, vbs...)}
	b, err := p.MarshalMsg()
	if err == nil {
		_, err = o.conn.WriteToUDP(b, d.addr)
	}
	if err != nil {
		o.traps.failed.Add(1)
		return
	}
	o.traps.sent.Add(1)
}

// Vendor trap OIDs, as the trap maps of Facho's shipped profiles read
// them (pkg/profiles/profiles/*.yaml).
const (
	huaweiTrapState     = "1.3.6.1.4.1.2011.6.128.1.1.2.0.6"
	huaweiTrapDyingGasp = "1.3.6.1.4.1.2011.6.128.1.1.2.0.22"
	huaweiTrapLOS       = "1.3.6.1.4.1.2011.6.128.1.1.2.0.23"
	huaweiRunStatus     = "1.3.6.1.4.1.2011.6.128.1.1.2.46.1.15"
	huaweiSerial        = "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3"
	zteTrapState        = "1.3.6.1.4.1.3902.1082.500.10.2.3.0.1"
	ztePhase            = "1.3.6.1.4.1.3902.1082.500.10.2.3.8.1.4"
	fiberhomeTrapState  = "1.3.6.1.4.1.5875.800.3.10.0.1"
	fiberhomeStatus     = "1.3.6.1.4.1.5875.800.3.10.1.1.11"
	vsolDataAlarmTrap   = "1.3.6.1.4.1.37950.1.1.5.10.12.0.1"
	vsolDataPon         = "1.3.6.1.4.1.37950.1.1.5.10.12.1.1.0"
	vsolDataOnu         = "1.3.6.1.4.1.37950.1.1.5.10.12.1.2.0"
	vsolDataAlarmType   = "1.3.6.1.4.1.37950.1.1.5.10.12.1.3.0"
)

// Down causes of onuState (Huawei's last-down-cause numbering).
const (
	causeLOS       = 2
	causeDyingGasp = 13
)

// vendorTrap is the trap OID and varbinds the OLT's vendor sends for s's
// new state.
func vendorTrap(p *profile, s *onuState) (string, []gosnmp.SnmpPDU, error) {
	idx := "." + p.rowIndex(s).String()
	integer := func(oid string, v int) gosnmp.SnmpPDU {
		return gosnmp.SnmpPDU{Name: "." + oid, Type: gosnmp.Integer, Value: v}
	}
	serial := s.serialBytesCell(p.serialVendor)
	switch p.name {
	case "huawei-ma5800":
		switch {
		case s.online:
			return huaweiTrapState, []gosnmp.SnmpPDU{integer(huaweiRunStatus+idx, 1)}, nil
		case s.downCause == causeDyingGasp:
			return huaweiTrapDyingGasp, []gosnmp.SnmpPDU{{Name: "." + huaweiSerial + idx, Type: gosnmp.OctetString, Value: append([]byte(nil), serial.bytes()...)}}, nil
		case s.downCause == causeLOS:
			return huaweiTrapLOS, []gosnmp.SnmpPDU{{Name: "." + huaweiSerial + idx, Type: gosnmp.OctetString, Value: append([]byte(nil), serial.bytes()...)}}, nil
		}
		return huaweiTrapState, []gosnmp.SnmpPDU{integer(huaweiRunStatus+idx, 2)}, nil
	case "zte-c300":
		phase := 7 // offline
		switch {
		case s.online:
			phase = 4
		case s.downCause == causeDyingGasp:
			phase = 5
		case s.downCause == causeLOS:
			phase = 2
		}
		return zteTrapState, []gosnmp.SnmpPDU{integer(ztePhase+idx, phase)}, nil
	case "fiberhome-an5516":
		st := 2 // offline
		switch {
		case s.online:
			st = 1
		case s.downCause == causeDyingGasp:
			st = 4
		case s.downCause == causeLOS:
			st = 0
		}
		return fiberhomeTrapState, []gosnmp.SnmpPDU{integer(fiberhomeStatus+idx, st)}, nil
	case "vsol-v1600g":
		alarm := 19 // onu-deregister
		switch {
		case s.online:
			alarm = 41
		case s.downCause == causeDyingGasp:
			alarm = 26
		case s.downCause == causeLOS:
			alarm = 20
		}
		return vsolDataAlarmTrap, []gosnmp.SnmpPDU{
			{Name: "." + vsolDataPon, Type: gosnmp.OctetString, Value: []byte(strconv.Itoa(s.Port()))},
			{Name: "." + vsolDataOnu, Type: gosnmp.OctetString, Value: []byte(strconv.Itoa(s.ID()))},
			integer(vsolDataAlarmType, alarm),
		}, nil
	}
	return "", nil, errors.New("profile " + p.name + " sends no traps")
}
