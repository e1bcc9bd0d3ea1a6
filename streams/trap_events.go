package streams

import (
	"errors"
	"fmt"
	"time"
)

// The trap stream: what OLTs told Facho on their own, as SNMP traps and
// informs. The trap receiver (services/trapd) publishes every accepted
// trap raw (trap.received, the varbinds as received, for replay) and,
// where the OLT's vendor profile maps the trap OID, its meaning
// (trap.decoded: which ONU or PON, what happened). One subject per OLT:
// facho.trap.<olt_id>.
const (
	StreamTrap   = "FACHO_TRAP"
	SubjectsTrap = "facho.trap.>"

	TypeTrapReceived = "trap.received"
	TypeTrapDecoded  = "trap.decoded"
)

// SubjectTrap is where the traps of an OLT are published.
func SubjectTrap(oltID string) string { return "facho.trap." + oltID }

// SubjectsTrapAll is every OLT's trap subject.
const SubjectsTrapAll = "facho.trap.*"

// ConsumerProjectorTraps is the projector's durable on FACHO_TRAP: the
// traps read model, and the ONU status a decoded ONU-down/up trap sets at
// once.
const ConsumerProjectorTraps = "projector-traps"

// Trap kinds (TrapDecoded.Kind): what a vendor trap means.
const (
	TrapKindLOS               = "los"
	TrapKindDyingGasp         = "dying_gasp"
	TrapKindOnline            = "online"
	TrapKindOffline           = "offline"
	TrapKindOpticalAlarmRaise = "optical_alarm_raise"
	TrapKindOpticalAlarmClear = "optical_alarm_clear"
	TrapKindPONDown           = "pon_down"
	TrapKindPONUp             = "pon_up"
)

// TrapKinds lists every trap kind.
func TrapKinds() []string {
	return []string{TrapKindLOS, TrapKindDyingGasp, TrapKindOnline, TrapKindOffline,
		TrapKindOpticalAlarmRaise, TrapKindOpticalAlarmClear, TrapKindPONDown, TrapKindPONUp}
}

// ValidTrapKind tells whether k is a trap kind.
func ValidTrapKind(k string) bool {
	for _, x := range TrapKinds() {
		if x == k {
			return true
		}
	}
	return false
}

// TrapONUStatus is the ONU status a trap kind sets at once (the status
// texts of the profiles' status columns), "" for the kinds that do not
// change an ONU's status (optical alarms, PON port events).
func TrapONUStatus(kind string) string {
	switch kind {
	case TrapKindLOS:
		return "LOS"
	case TrapKindDyingGasp:
		return "DYING_GASP"
	case TrapKindOffline:
		return "OFFLINE"
	case TrapKindOnline:
		return "ONLINE"
	}
	return ""
}

// Trap PDU versions (TrapReceived.Version).
const (
	TrapV1        = "v1"
	TrapV2c       = "v2c"
	TrapV2cInform = "v2c-inform"
)

// Bounds of a trap event: a trap larger than these is dropped by the
// receiver before it is published.
const (
	TrapMaxVarbinds   = 64
	TrapMaxValueBytes = 1024
	TrapMaxOIDBytes   = 256
)

// TrapVarbind is one varbind as received: its OID, its SNMP type (gosnmp's
// names: Integer, OctetString, ObjectIdentifier, TimeTicks, ...) and its
// value as text (integers in decimal, an OctetString as hex when it is not
// printable UTF-8 with Hex set, an OID dotted).
type TrapVarbind struct {
	OID   string `json:"oid"`
	Type  string `json:"type"`
	Value string `json:"value"`
	Hex   bool   `json:"hex,omitempty"`
}

// TrapReceived is every trap accepted from a configured OLT (its source
// address and its community matched), as received. TrapOID is the
// snmpTrapOID.0 of a v2c trap or inform, or the RFC 3584 translation of a
// v1 trap (enterprise.0.specific, or the generic trap's snmpTraps OID).
// Nats-Msg-Id trap:<olt_id>:<receiver>:<received unix ns>:<counter>.
type TrapReceived struct {
	OLTID    string        `json:"olt_id"`
	Source   string        `json:"source"` // ip:port the trap came from
	Version  string        `json:"version"`
	TrapOID  string        `json:"trap_oid"`
	Uptime   uint32        `json:"uptime_ticks,omitempty"`
	Varbinds []TrapVarbind `json:"varbinds"`
	// Receiver names the trapd replica; ReceivedAt is when it read the
	// packet.
	Receiver   string    `json:"receiver"`
	ReceivedAt time.Time `json:"received_at"`
}

func (TrapReceived) EventType() string { return TypeTrapReceived }

// Validate bounds what a trap event may carry.
func (t TrapReceived) Validate() error {
	switch {
	case !ValidID(t.OLTID):
		return fmt.Errorf("olt_id %q", t.OLTID)
	case t.ReceivedAt.IsZero():
		return errors.New("received_at is required")
	case len(t.Varbinds) > TrapMaxVarbinds:
		return fmt.Errorf("%d varbinds: at most %d", len(t.Varbinds), TrapMaxVarbinds)
	case len(t.TrapOID) > TrapMaxOIDBytes:
		return errors.New("trap_oid too long")
	}
	return nil
}

// TrapDecoded is what a trap means, where the OLT's vendor profile maps
// its trap OID: published right after its trap.received, on the same
// subject. PonIndex and ONUID are the ONU's key in onu_data (absent for a
// PON port event whose index names no ONU, ONUID absent); Index and
// PortName are the row index and its human name as the profile reads
// them. ReceivedSeq is left 0 by the receiver (it does not know the
// sequence yet); TrapID is the trap.received's Nats-Msg-Id, which ties the
// two together. Nats-Msg-Id <trap id>:decoded.
type TrapDecoded struct {
	OLTID    string `json:"olt_id"`
	TrapID   string `json:"trap_id"`
	Profile  string `json:"profile"`
	Rule     string `json:"rule"` // the id of the profile's trap entry
	Kind     string `json:"kind"`
	TrapOID  string `json:"trap_oid"`
	PonIndex *int64 `json:"pon_index,omitempty"`
	ONUID    *int64 `json:"onu_id,omitempty"`
	Index    string `json:"onu_index,omitempty"`
	PortName string `json:"port_name,omitempty"`
	// At is when the trap was received (the OLT's own clock is not
	// trusted: its uptime is in the raw event).
	At time.Time `json:"at"`
}

func (TrapDecoded) EventType() string { return TypeTrapDecoded }

// Validate checks what the projector needs.
func (t TrapDecoded) Validate() error {
	switch {
	case !ValidID(t.OLTID):
		return fmt.Errorf("olt_id %q", t.OLTID)
	case !ValidTrapKind(t.Kind):
		return fmt.Errorf("kind %q: want one of %v", t.Kind, TrapKinds())
	case t.At.IsZero():
		return errors.New("at is required")
	case TrapONUStatus(t.Kind) != "" && (t.PonIndex == nil || t.ONUID == nil):
		return fmt.Errorf("kind %s names an ONU: pon_index and onu_id are required", t.Kind)
	}
	return nil
}
