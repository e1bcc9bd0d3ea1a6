package streams

import "time"

// OLT-level state events: what Facho knows about an OLT as a device (is it
// answering?), apart from its configuration (FACHO_CONFIG) and its ONUs
// (FACHO_ONU). One subject per OLT and kind, so the last message of
// facho.olt.<olt_id>.availability is the OLT's current availability.
const (
	StreamOLT   = "FACHO_OLT"
	SubjectsOLT = "facho.olt.>"
	// TypeOLTAvailability is the event of facho.olt.<olt_id>.availability.
	TypeOLTAvailability = "olt.availability"
)

// SubjectOLTAvailability is where the OLT's availability changes are
// published.
func SubjectOLTAvailability(oltID string) string { return "facho.olt." + oltID + ".availability" }

// SubjectsOLTAvailability is every OLT's availability subject.
const SubjectsOLTAvailability = "facho.olt.*.availability"

// OLT availability states (Zabbix-style): an OLT is available while it
// answers; unreachable from its first unanswered request (a failed
// operation or probe), rechecked every few seconds; unavailable when it
// stayed unreachable for the unavailable delay (45 s by default): no heavy
// work is dispatched to it until it answers again.
const (
	AvailabilityAvailable   = "available"
	AvailabilityUnreachable = "unreachable"
	AvailabilityUnavailable = "unavailable"
)

// ValidAvailability tells whether s is an availability state.
func ValidAvailability(s string) bool {
	switch s {
	case AvailabilityAvailable, AvailabilityUnreachable, AvailabilityUnavailable:
		return true
	}
	return false
}

// Sources of an availability change.
const (
	// AvailabilitySourceProbe: a light probe (sysUpTime GET) answered or not.
	AvailabilitySourceProbe = "probe"
	// AvailabilitySourceExecution: an execution's outcome (a request that
	// got no answer fails it; any answer proves the OLT is there).
	AvailabilitySourceExecution = "execution"
)

// OLTAvailability is published when an OLT's availability state changes
// (never twice for the same state in a row). Nats-Msg-Id
// avail:<olt_id>:<state>:<since unix nanoseconds>, so a re-publish after a
// restart is stored once.
type OLTAvailability struct {
	OLTID string `json:"olt_id"`
	// State is available, unreachable or unavailable; Previous the state
	// it left ("" for the first event of an OLT).
	State    string `json:"state"`
	Previous string `json:"previous,omitempty"`
	// Since is when the OLT entered State: for unreachable, the time of
	// the first unanswered request; for unavailable, the same time (the
	// outage started then); for available, the first answer.
	Since time.Time `json:"since"`
	// LastError is the error of the last unanswered request (bounded to
	// 512 bytes, never the community); empty when available.
	LastError string `json:"last_error,omitempty"`
	// Source says what decided the change (probe or execution);
	// ExecutionID names the execution when it was one.
	Source      string `json:"source"`
	ExecutionID string `json:"execution_id,omitempty"`
	// FailedChecks counts the consecutive unanswered requests and probes
	// of this outage (0 when available).
	FailedChecks int       `json:"failed_checks,omitempty"`
	ObservedAt   time.Time `json:"observed_at"`
}

func (OLTAvailability) EventType() string { return TypeOLTAvailability }
