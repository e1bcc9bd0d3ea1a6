package streams

import "time"

// What the availability service adds to the contract besides
// OLTAvailability (olt_events.go): the automatic re-enable of an
// auto-disabled OLT that answers again, the audit kinds of availability
// changes and the notification of an enabled OLT.

// TypeOLTAutoEnabled is published on facho.config.olt_disabled.<olt_id>
// (the subject of olt.auto_disabled, so the subject's last message says
// whether the OLT is auto-disabled) when the availability service saw an
// auto-disabled OLT answer its recovery probes.
const TypeOLTAutoEnabled = "olt.auto_enabled"

// OLTAutoEnabled ends an auto-disable: the OLT answered Probes consecutive
// probes after it was auto-disabled. It never ends a disable by a person
// (olt.upserted enabled=false). Nats-Msg-Id
// auto-enable:<olt_id>:<execution id of the auto-disable>, so one
// auto-disable is ended at most once.
type OLTAutoEnabled struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
	Probes int    `json:"probes"`
	// DisabledExecutionID is the ExecutionID of the olt.auto_disabled it
	// ends.
	DisabledExecutionID string    `json:"disabled_execution_id"`
	EnabledAt           time.Time `json:"enabled_at"`
}

func (OLTAutoEnabled) EventType() string { return TypeOLTAutoEnabled }

// Audit kinds of availability changes (category availability).
const (
	AuditOLTUnreachable = "OLT_UNREACHABLE"
	AuditOLTUnavailable = "OLT_UNAVAILABLE"
	AuditOLTAvailable   = "OLT_AVAILABLE"
)

// AuditCategoryAvailability is the audit category (facho.audit.<category>)
// of the availability service.
const AuditCategoryAvailability = "availability"

// NotifyOLTEnabled: an OLT_ENABLED audit event (an OLT re-enabled by its
// configuration or by the recovery probes).
const NotifyOLTEnabled = "olt_enabled"

// BucketAvailabilityLeader is the KV bucket of the availability service's
// leader lease: one replica probes, the others stand by.
const BucketAvailabilityLeader = "facho_availability_leader"

// AvailabilityLeaderKey is the leader's key (pkg/lease: "olt.<id>").
const AvailabilityLeaderKey = "availability"

// SkipReasonOLTUnavailable is the reason of an execution.skipped the
// planner publishes instead of dispatching a due node to an unavailable
// OLT.
const SkipReasonOLTUnavailable = "olt unavailable"

// ConsumerProjectorOLT is the projector's durable on FACHO_OLT: the
// olt_availability read model.
const ConsumerProjectorOLT = "projector-olt"
