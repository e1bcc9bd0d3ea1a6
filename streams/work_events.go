package streams

import (
	"errors"
	"fmt"
	"time"
)

// Event types of the schedule, execution, varbind, ONU, audit and
// dead-letter streams.
const (
	TypeNodeDue              = "node.due"
	TypeNodeRunRequested     = "node.run_requested"
	TypeExecutionStarted     = "execution.started"
	TypeExecutionSucceeded   = "execution.succeeded"
	TypeExecutionFailed      = "execution.failed"
	TypeExecutionSkipped     = "execution.skipped"
	TypeExecutionAborted     = "execution.aborted"
	TypeExecutionInterrupted = "execution.interrupted"
	TypeVarbindBatch         = "varbind.batch"
	TypeONUChanged           = "onu.changed"
	TypeAudit                = "audit"
	TypeDeadLetter           = "dead_letter"
)

// OIDSpec is one OID a node reads, with what it means and how to decode it.
// NodeDue and every varbind batch carry the specs, so a batch can be decoded
// on replay without the configuration of the day.
type OIDSpec struct {
	ID      string  `json:"id"`
	OID     string  `json:"oid"`
	Field   string  `json:"field"`
	Decoder Decoder `json:"decoder"`
	// IndexSuffix: see OIDUpserted.IndexSuffix.
	IndexSuffix string `json:"index_suffix,omitempty"`
	// Index: see OIDUpserted.Index.
	Index *IndexSpec `json:"index,omitempty"`
}

// Target is where and how to reach an OLT.
type Target struct {
	Host         string `json:"host"`
	Port         int    `json:"port"`
	CommunityEnc string `json:"community_enc"`
}

// NodeDue says a node (a job on an OLT) is due now.
type NodeDue struct {
	ExecutionID string `json:"execution_id"`
	NodeID      string `json:"node_id"`
	JobID       string `json:"job_id"`
	JobName     string `json:"job_name"`
	OLTID       string `json:"olt_id"`
	BrandID     string `json:"brand_id"`
	IndexScheme string `json:"index_scheme"`
	// Index is the brand's index definition (IndexSpec) when it has one.
	Index             *IndexSpec `json:"index,omitempty"`
	Kind              string     `json:"kind"`
	Target            Target     `json:"target"`
	OIDs              []OIDSpec  `json:"oids"`
	Priority          int        `json:"priority"`
	IntervalSeconds   int        `json:"interval_seconds"`
	TimeoutSeconds    int        `json:"timeout_seconds"`
	MaxRetries        int        `json:"max_retries"`
	RetryDelaySeconds int        `json:"retry_delay_seconds"`
	ScheduledAt       time.Time  `json:"scheduled_at"`
	DelaySeconds      float64    `json:"delay_seconds"`
	// SNMP is the OLT's tuning over its brand's (SNMPTuning.Over); zero
	// fields take the poller's defaults.
	SNMP SNMPTuning `json:"snmp,omitzero"`
	// Chain lists the chained nodes of a composite node (seed 004), run
	// after the master, in order, under the same lease, each as its own
	// execution. Empty for a plain node.
	Chain []ChainedNode `json:"chain,omitempty"`
	// StopOnFailure: a failed element ends the chain; the rest are
	// published as skipped.
	StopOnFailure bool `json:"stop_on_failure,omitempty"`
	// DispatchedAt is when the planner released the node to the pollers
	// (after it waited in its OLT's queue, or at ScheduledAt when the OLT
	// was free). Staleness counts from it: a node that waited behind its
	// OLT's other work is not stale for that. Absent in older events.
	DispatchedAt time.Time `json:"dispatched_at,omitzero"`
	// Attempt is the attempt this dispatch makes, as the planner knows it
	// (1, or 1 + the failed attempts of a retried execution); 0 when
	// unknown. A poller counts the attempts from the stream when an attempt
	// may have started since the dispatch (a redelivery).
	Attempt int `json:"attempt,omitempty"`
	// Class is the node's queue class (ClassDiscovery, ClassPolling,
	// ClassRetry, ClassHigh), the last token of its subject; empty in
	// events published before classes (on SubjectNodeDueLegacy).
	Class string `json:"class,omitempty"`
}

func (NodeDue) EventType() string { return TypeNodeDue }

// ChainedNode is one chained node of a composite NodeDue: its own job,
// what it reads and its own execution id.
type ChainedNode struct {
	ExecutionID    string    `json:"execution_id"`
	JobID          string    `json:"job_id"`
	JobName        string    `json:"job_name"`
	Kind           string    `json:"kind"`
	OIDs           []OIDSpec `json:"oids"`
	TimeoutSeconds int       `json:"timeout_seconds"`
}

// Validate checks what a poller needs.
func (n NodeDue) Validate() error {
	switch {
	case n.ExecutionID == "" || n.JobID == "" || n.OLTID == "":
		return errors.New("execution_id, job_id and olt_id are required")
	case n.Target.Host == "" || n.Target.Port <= 0:
		return errors.New("target host and port are required")
	case len(n.OIDs) == 0:
		return errors.New("no oids")
	}
	if err := n.SNMP.Validate(); err != nil {
		return fmt.Errorf("snmp: %w", err)
	}
	for _, o := range n.OIDs {
		if err := ValidIndexSuffix(o.IndexSuffix); err != nil {
			return fmt.Errorf("oid %s: %w", o.ID, err)
		}
	}
	return nil
}

// NodeRunRequested asks the planner to run a node now (a manual run, seed
// 004): ahead of its OLT's queue, without moving the node's schedule. The
// API chooses the execution id and answers it at once.
type NodeRunRequested struct {
	ExecutionID string    `json:"execution_id"`
	NodeID      string    `json:"node_id"`
	JobID       string    `json:"job_id"`
	OLTID       string    `json:"olt_id"`
	RequestedAt time.Time `json:"requested_at"`
}

func (NodeRunRequested) EventType() string { return TypeNodeRunRequested }

// ExecutionStarted: a poller holds the OLT's lease and starts the SNMP work.
type ExecutionStarted struct {
	ExecutionID   string    `json:"execution_id"`
	JobID         string    `json:"job_id"`
	OLTID         string    `json:"olt_id"`
	PollerID      string    `json:"poller_id"`
	Attempt       int       `json:"attempt"`
	LeaseRevision uint64    `json:"lease_revision"`
	StartedAt     time.Time `json:"started_at"`
}

func (ExecutionStarted) EventType() string { return TypeExecutionStarted }

// ExecutionSucceeded: the SNMP work ended and every batch was published.
type ExecutionSucceeded struct {
	ExecutionID   string    `json:"execution_id"`
	JobID         string    `json:"job_id"`
	OLTID         string    `json:"olt_id"`
	PollerID      string    `json:"poller_id"`
	Attempt       int       `json:"attempt"`
	LeaseRevision uint64    `json:"lease_revision"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at"`
	DurationMS    int64     `json:"duration_ms"`
	Varbinds      int       `json:"varbinds"`
	Batches       int       `json:"batches"`
	// Of a get: ONUs is how many ONUs it read (the OLT's discovered set);
	// FailedONUs and FailedVarbinds count what it could not read even one
	// OID per PDU (progressive subdivision), ONUFailures lists the first
	// MaxONUFailuresListed of those ONUs. Never dropped silently: each is
	// also in a coordinator log (audit ONU_READ_FAILED).
	ONUs           int          `json:"onus,omitempty"`
	FailedONUs     int          `json:"failed_onus,omitempty"`
	FailedVarbinds int          `json:"failed_varbinds,omitempty"`
	ONUFailures    []ONUFailure `json:"onu_failures,omitempty"`
	// Kind is the job's kind (discovery, get, walk, bulkwalk, health);
	// absent in events from before the field.
	Kind string `json:"kind,omitempty"`
}

func (ExecutionSucceeded) EventType() string { return TypeExecutionSucceeded }

// ExecutionFailed: the SNMP work failed; Retryable says whether another
// attempt may follow.
type ExecutionFailed struct {
	ExecutionID   string    `json:"execution_id"`
	JobID         string    `json:"job_id"`
	OLTID         string    `json:"olt_id"`
	PollerID      string    `json:"poller_id"`
	Attempt       int       `json:"attempt"`
	LeaseRevision uint64    `json:"lease_revision"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at"`
	DurationMS    int64     `json:"duration_ms"`
	Error         string    `json:"error"`
	Retryable     bool      `json:"retryable"`
	// Redelivered says the poller put the NodeDue back in the queue: another
	// attempt of this execution follows, so the execution has not ended.
	// Absent (false): this failure ends the execution.
	Redelivered bool `json:"redelivered,omitempty"`
	// Cause says why, machine readable: one of the ExecCause* constants
	// (ExecCauses lists them). Absent in events from before the field
	// (read them as ExecCauseSNMPError). Error is the operator's text.
	Cause string `json:"cause,omitempty" jsonschema:"enum=timeout,enum=snmp_error,enum=oid_not_increasing,enum=empty_read,enum=no_onus_known,enum=profile_mismatch,enum=lease_lost,enum=shutdown,enum=config,enum=publish,enum=bound_exceeded"`
	// Kind: see ExecutionSucceeded.Kind.
	Kind string `json:"kind,omitempty"`
}

func (ExecutionFailed) EventType() string { return TypeExecutionFailed }

// Causes of an execution.failed (ExecutionFailed.Cause). The first three
// are the OLT not answering or answering badly; the next three are runs
// that ended without an SNMP error but read nothing worth a success (they
// are failures like the others: they count towards the OLT's consecutive
// failures and the quotas); the next four are Facho's own trouble; the
// last is an OLT that sent more than its bounds allow.
const (
	// ExecCauseTimeout: the node's own deadline passed.
	ExecCauseTimeout = "timeout"
	// ExecCauseSNMPError: the OLT did not answer, or answered with an
	// agent error or a malformed message.
	ExecCauseSNMPError = "snmp_error"
	// ExecCauseOIDNotIncreasing: a walk got an OID not after the one it
	// asked from (a broken agent: the walk cannot go on).
	ExecCauseOIDNotIncreasing = "oid_not_increasing"
	// ExecCauseEmptyRead: a get read no value at all from ONUs the OLT is
	// known to have (every OID of every ONU missing or failed).
	ExecCauseEmptyRead = "empty_read"
	// ExecCauseNoONUsKnown: a get ran before any discovery of the OLT
	// found an ONU: it has nothing to read.
	ExecCauseNoONUsKnown = "no_onus_known"
	// ExecCauseProfileMismatch: a complete discovery walk found no row in
	// any of the tables its profile (brand) expects: the OLT answers, but
	// not these OIDs (a wrong profile, or an OLT without a single ONU).
	ExecCauseProfileMismatch = "profile_mismatch"
	// ExecCauseLeaseLost: another holder took the OLT's lease.
	ExecCauseLeaseLost = "lease_lost"
	// ExecCauseShutdown: the poller stopped mid-operation (another
	// attempt follows on another poller).
	ExecCauseShutdown = "shutdown"
	// ExecCauseConfig: the NodeDue cannot work (unknown kind, a community
	// that does not open).
	ExecCauseConfig = "config"
	// ExecCausePublish: a varbind batch could not be published (NATS).
	ExecCausePublish = "publish"
	// ExecCauseBoundExceeded: the OLT sent more than a bound allows (rows
	// of a table, ONUs of a PON or of the OLT, varbinds or bytes of the
	// execution); the error names the bound. Nothing past the bound is
	// published.
	ExecCauseBoundExceeded = "bound_exceeded"
)

// ExecCauses lists the causes of an execution.failed, in the order above.
func ExecCauses() []string {
	return []string{ExecCauseTimeout, ExecCauseSNMPError, ExecCauseOIDNotIncreasing, ExecCauseEmptyRead, ExecCauseNoONUsKnown,
		ExecCauseProfileMismatch, ExecCauseLeaseLost, ExecCauseShutdown, ExecCauseConfig, ExecCausePublish, ExecCauseBoundExceeded}
}

// ExecCauseRead says whether cause is a run that read nothing worth a
// success (empty_read, no_onus_known, profile_mismatch, oid_not_increasing)
// or read more than its bounds allow (bound_exceeded): the OLT answered, so asking it again the same way soon would read the
// same; such a failure is not retryable.
func ExecCauseRead(cause string) bool {
	switch cause {
	case ExecCauseEmptyRead, ExecCauseNoONUsKnown, ExecCauseProfileMismatch, ExecCauseOIDNotIncreasing, ExecCauseBoundExceeded:
		return true
	}
	return false
}

// ExecutionSkipped: a poller did not run a NodeDue because it came too late
// (now > ScheduledAt + interval): by then the planner has emitted the node's
// next run, so running this one would replay a missed run (no catch-up). No
// lease was taken and no SNMP request sent. It is what the QuotaTracker's
// quota_skipped (executions omitted) is to count, once it exists.
type ExecutionSkipped struct {
	ExecutionID string `json:"execution_id"`
	JobID       string `json:"job_id"`
	OLTID       string `json:"olt_id"`
	PollerID    string `json:"poller_id"`
	// Attempt is the skipped NodeDue's attempt (NodeDue.Attempt: the
	// planner's number of the dispatch; a retry re-dispatches the same
	// execution id with a higher one). A skip of a lower attempt than the
	// dispatch in flight is a stale delivery of an earlier dispatch and
	// does not end the execution. Absent (0): an event from before the
	// field, or a NodeDue without an attempt; it ends the execution
	// whatever attempt is in flight.
	Attempt     int       `json:"attempt,omitempty"`
	ScheduledAt time.Time `json:"scheduled_at"`
	SkippedAt   time.Time `json:"skipped_at"`
	Reason      string    `json:"reason"`
}

func (ExecutionSkipped) EventType() string { return TypeExecutionSkipped }

// ExecutionAborted: the planner cancelled the execution before its next
// attempt started (its task or its OLT was disabled or deleted, see
// BucketCancel): no SNMP request was sent for that attempt; a retry's
// earlier attempts did run, and their events stand. Final: the execution
// is ABORTED.
type ExecutionAborted struct {
	ExecutionID string    `json:"execution_id"`
	JobID       string    `json:"job_id"`
	OLTID       string    `json:"olt_id"`
	PollerID    string    `json:"poller_id"`
	Reason      string    `json:"reason"`
	AbortedAt   time.Time `json:"aborted_at"`
}

func (ExecutionAborted) EventType() string { return TypeExecutionAborted }

// ExecutionInterrupted: the lease of a started attempt expired (its holder
// stopped renewing it: killed, frozen or cut off) without a succeeded or
// failed event. Every poller watches the lease bucket and publishes it for
// the attempt that held the expired lease, with the Nats-Msg-Id
// "<execution_id>:<attempt>:interrupted", so N pollers record it once. It is
// final for the attempt: a late succeeded or failed of the same attempt does
// not replace it, and an attempt that already ended keeps its outcome; a
// newer attempt of the execution (its NodeDue redelivered) still runs.
//
// The poller running the attempt also publishes it, with Cancelled, when the
// planner cancels the execution while it runs (its OLT was disabled or
// deleted): the walk stopped between two requests, the lease was released
// and no other attempt follows (the NodeDue is acknowledged).
type ExecutionInterrupted struct {
	ExecutionID string `json:"execution_id"`
	JobID       string `json:"job_id"`
	OLTID       string `json:"olt_id"`
	// PollerID is the holder whose lease expired (from its started event).
	PollerID      string    `json:"poller_id"`
	Attempt       int       `json:"attempt"`
	LeaseRevision uint64    `json:"lease_revision"`
	StartedAt     time.Time `json:"started_at"`
	// InterruptedAt is when the lease was seen expired (the expiry marker's
	// time when known).
	InterruptedAt time.Time `json:"interrupted_at"`
	// DetectedBy is the poller that published the event.
	DetectedBy string `json:"detected_by"`
	Reason     string `json:"reason"`
	// Cancelled: the planner cancelled the execution; final for the
	// execution, not only the attempt.
	Cancelled bool `json:"cancelled,omitempty"`
}

func (ExecutionInterrupted) EventType() string { return TypeExecutionInterrupted }

// Cancel modes of an ExecutionCancel.
const (
	// CancelPending: abort the execution if it has not started; a running
	// one goes on (a disabled task).
	CancelPending = "pending"
	// CancelAll: abort it if it has not started, interrupt it if it runs
	// (a disabled or deleted OLT).
	CancelAll = "all"
)

// ExecutionCancel is the value of an execution's key in BucketCancel.
type ExecutionCancel struct {
	ExecutionID string    `json:"execution_id"`
	OLTID       string    `json:"olt_id"`
	JobID       string    `json:"job_id"`
	Mode        string    `json:"mode"`
	Reason      string    `json:"reason"`
	At          time.Time `json:"at"`
}

// Varbind is one raw SNMP variable binding. Value is decimal for numeric
// types, lower-case hex for OctetString (binary-safe), dotted for
// ObjectIdentifier and IpAddress, empty for Null and the exceptions.
type Varbind struct {
	OID   string `json:"oid"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// Varbind types.
const (
	VTInteger        = "Integer"
	VTOctetString    = "OctetString"
	VTOID            = "ObjectIdentifier"
	VTIPAddress      = "IpAddress"
	VTCounter32      = "Counter32"
	VTGauge32        = "Gauge32"
	VTTimeTicks      = "TimeTicks"
	VTCounter64      = "Counter64"
	VTNull           = "Null"
	VTNoSuchObject   = "NoSuchObject"
	VTNoSuchInstance = "NoSuchInstance"
	VTEndOfMibView   = "EndOfMibView"
	VTOpaque         = "Opaque"
)

// VarbindBatch is one chunk of raw varbinds read in one execution.
type VarbindBatch struct {
	ExecutionID string `json:"execution_id"`
	JobID       string `json:"job_id"`
	OLTID       string `json:"olt_id"`
	BrandID     string `json:"brand_id"`
	IndexScheme string `json:"index_scheme"`
	// Index: NodeDue.Index, so a replay decodes the batch as it was read.
	Index         *IndexSpec `json:"index,omitempty"`
	LeaseRevision uint64     `json:"lease_revision"`
	Batch         int        `json:"batch"`
	Columns       []OIDSpec  `json:"columns"`
	CollectedAt   time.Time  `json:"collected_at"`
	Varbinds      []Varbind  `json:"varbinds"`
	// Rows (version 2): varbinds grouped by table row, see VarbindRow. A
	// batch may carry both; Varbinds then holds what is under no column.
	Rows []VarbindRow `json:"rows,omitempty"`
	// Last marks the final batch of this execution: every column was
	// walked to its end, so an ONU row absent from all of the execution's
	// batches is absent from the OLT's table (FiberHome and V-SOL omit
	// the optical row of an offline ONU). Only a successful walk sets it,
	// on exactly one batch, which may have no varbinds (an empty table).
	// A get never sets it: it reads an explicit list of OIDs, not tables.
	Last bool `json:"last,omitempty"`
	// JobKind is the kind of the job that read the batch (NodeDue.Kind):
	// a complete discovery walk lists every ONU of the OLT even without a
	// serial column (an IF-MIB table). Empty in batches from before it.
	JobKind string `json:"job_kind,omitempty"`
}

func (VarbindBatch) EventType() string { return TypeVarbindBatch }

// Validate checks what a projector needs. A batch without varbinds is
// valid: the Last batch of a walk that found nothing has none.
func (b VarbindBatch) Validate() error {
	switch {
	case b.ExecutionID == "" || b.OLTID == "":
		return errors.New("execution_id and olt_id are required")
	case len(b.Columns) == 0:
		return errors.New("no columns")
	}
	return b.validateRows()
}

// ONUState is what Facho knows of one ONU.
type ONUState struct {
	Serial      string   `json:"serial,omitempty"`
	Description string   `json:"description,omitempty"`
	Status      string   `json:"status,omitempty"`
	RxPowerDBm  *float64 `json:"rx_power_dbm,omitempty"`
	// Fields of vendor profiles (issue 9); empty or absent where the
	// vendor has no such column or no reading.
	Index         string     `json:"onu_index,omitempty"`
	PortName      string     `json:"port_name,omitempty"`
	Name          string     `json:"name,omitempty"`
	TxPowerDBm    *float64   `json:"tx_power_dbm,omitempty"`
	OLTRxPowerDBm *float64   `json:"olt_rx_power_dbm,omitempty"`
	DistanceM     *float64   `json:"distance_m,omitempty"`
	TemperatureC  *float64   `json:"temperature_c,omitempty"`
	VoltageV      *float64   `json:"voltage_v,omitempty"`
	BiasMA        *float64   `json:"bias_ma,omitempty"`
	LastDownCause string     `json:"last_down_cause,omitempty"`
	LastDownAt    *time.Time `json:"last_down_at,omitempty"`
	LastUpAt      *time.Time `json:"last_up_at,omitempty"`
	Model         string     `json:"model,omitempty"`
	Firmware      string     `json:"firmware,omitempty"`
}

// ONUChanged is published by the projector when an ONU appears or changes.
type ONUChanged struct {
	OLTID       string    `json:"olt_id"`
	PonIndex    int64     `json:"pon_index"`
	ONUID       int64     `json:"onu_id"`
	Change      string    `json:"change"`
	Previous    *ONUState `json:"previous,omitempty"`
	Current     ONUState  `json:"current"`
	ExecutionID string    `json:"execution_id"`
	ObservedAt  time.Time `json:"observed_at"`
	// Source is what saw the change: empty for a poll (ExecutionID names
	// it), "trap" for an SNMP trap (TrapID names it; ExecutionID empty).
	Source string `json:"source,omitempty"`
	TrapID string `json:"trap_id,omitempty"`
}

// ONUChangeSourceTrap is ONUChanged.Source of a change an SNMP trap made.
const ONUChangeSourceTrap = "trap"

func (ONUChanged) EventType() string { return TypeONUChanged }

// Audit event types (seed 002 CoordinatorLog.event_type).
const (
	AuditTaskAdded       = "TASK_ADDED"
	AuditTaskRemoved     = "TASK_REMOVED"
	AuditPlanAdjusted    = "PLAN_ADJUSTED"
	AuditOLTDisabled     = "OLT_DISABLED"
	AuditQuotaViolation  = "QUOTA_VIOLATION"
	AuditExecStarted     = "EXECUTION_STARTED"
	AuditExecSucceeded   = "EXECUTION_SUCCEEDED"
	AuditExecFailed      = "EXECUTION_FAILED"
	AuditExecSkipped     = "EXECUTION_SKIPPED"
	AuditExecInterrupted = "EXECUTION_INTERRUPTED"
	AuditConfigChanged   = "CONFIG_CHANGED"
	AuditNodeDue         = "NODE_DUE"
	// AuditONUReadFailed: a get could not read some OIDs of some ONUs
	// (ExecutionSucceeded.ONUFailures).
	AuditONUReadFailed = "ONU_READ_FAILED"
	// AuditVarbindsUnplaced: a complete walk placed none or few of its
	// varbinds in ONU fields (published by the projector, WARNING).
	AuditVarbindsUnplaced = "VARBINDS_UNPLACED"
	AuditExecAborted      = "EXECUTION_ABORTED"
	AuditOLTEnabled       = "OLT_ENABLED"
	AuditManualRun        = "MANUAL_RUN"
	AuditTakeover         = "PLANNER_TAKEOVER"
)

// Audit levels.
const (
	LevelDebug    = "DEBUG"
	LevelInfo     = "INFO"
	LevelWarning  = "WARNING"
	LevelError    = "ERROR"
	LevelCritical = "CRITICAL"
)

// AuditEvent is a decision or notable fact worth a coordinator log row.
type AuditEvent struct {
	OLTID   string         `json:"olt_id,omitempty"`
	Kind    string         `json:"event_type"`
	Level   string         `json:"level"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func (AuditEvent) EventType() string { return TypeAudit }

// Bounds of a dead letter, so that one can always be published whatever
// the message it records (up to the server's maximum payload): the payload
// itself stays in its stream (LimitsPolicy) and is fetched by Stream and
// StreamSeq; the dead letter carries an excerpt, its size and its digest.
const (
	DeadLetterExcerptBytes = 4096
	DeadLetterReasonBytes  = 1024
	DeadLetterFieldBytes   = 256 // subject, ids and event type
)

// DeadLetterVersion is the current version of dead_letter. Version 1
// embedded the whole payload, so a message close to the maximum payload
// could not be dead-lettered.
const DeadLetterVersion = 2

// DeadLetter records a message a consumer could not process, and why. The
// original stays in Stream at StreamSeq until the stream's retention
// removes it. Text fields are bounded (see the DeadLetter* constants).
type DeadLetter struct {
	Consumer  string `json:"consumer"`
	Stream    string `json:"stream"`
	StreamSeq uint64 `json:"stream_seq"`
	Subject   string `json:"subject"`
	// Reason says why: the decode or database error, or "gave up after N
	// deliveries: <last error>" for a message that kept failing while its
	// dependency was healthy.
	Reason string `json:"reason"`
	// Deliveries is how many times the consumer had received the message.
	Deliveries uint64 `json:"deliveries"`
	// MsgID is the original's Nats-Msg-Id, when it had one.
	MsgID string `json:"msg_id,omitempty"`
	// OriginalType (the envelope's type), OLTID and ExecutionID are read,
	// best effort, from the original when it is a parseable envelope
	// (olt_id and execution_id of its data); empty otherwise.
	OriginalType string `json:"event_type,omitempty"`
	OLTID        string `json:"olt_id,omitempty"`
	ExecutionID  string `json:"execution_id,omitempty"`
	// PayloadSize is the original's size in bytes, PayloadSHA256 its
	// digest (lower-case hex).
	PayloadSize   int    `json:"payload_size"`
	PayloadSHA256 string `json:"payload_sha256"`
	// PayloadExcerpt is the start of the original (at most
	// DeadLetterExcerptBytes) as text: invalid UTF-8 and NUL bytes become
	// U+FFFD. PayloadTruncated says the excerpt is not the whole payload.
	PayloadExcerpt   string    `json:"payload_excerpt"`
	PayloadTruncated bool      `json:"payload_truncated,omitempty"`
	ReceivedAt       time.Time `json:"received_at"`
}

func (DeadLetter) EventType() string { return TypeDeadLetter }

// EventVersion: see DeadLetterVersion.
func (DeadLetter) EventVersion() int { return DeadLetterVersion }
