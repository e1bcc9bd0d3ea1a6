// Package streams is Facho's public event contract: every JetStream stream,
// consumer and KV bucket, every subject and the payload published on it.
// Services import it instead of spelling subjects themselves, so the
// catalogue (CATALOGUE.md, schemas/) and the code cannot drift apart.
package streams

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
)

// Stream names.
const (
	StreamConfig   = "FACHO_CONFIG"
	StreamSchedule = "FACHO_SCHEDULE"
	StreamExec     = "FACHO_EXEC"
	StreamVarbinds = "FACHO_VARBINDS"
	StreamONU      = "FACHO_ONU"
	StreamAudit    = "FACHO_AUDIT"
	StreamDLQ      = "FACHO_DLQ"
)

// Subject filters, one per stream.
const (
	SubjectsConfig   = "facho.config.>"
	SubjectsSchedule = "facho.schedule.>"
	SubjectsExec     = "facho.exec.>"
	SubjectsVarbinds = "facho.varbinds.>"
	SubjectsONU      = "facho.onu.>"
	SubjectsAudit    = "facho.audit.>"
	SubjectsDLQ      = "facho.dlq.>"

	SubjectsNodeDue   = "facho.schedule.due.>"
	SubjectsManualRun = "facho.schedule.manual.>"
)

// Durable consumer names.
const (
	ConsumerPoller            = "poller"
	ConsumerProjectorConfig   = "projector-config"
	ConsumerProjectorSchedule = "projector-schedule"
	ConsumerProjectorExec     = "projector-exec"
	ConsumerProjectorVarbinds = "projector-varbinds"
	ConsumerAuditorExec       = "auditor-exec"
	ConsumerAuditorAudit      = "auditor-audit"
	// ConsumerProjectorDLQ reads the dead letters of
	// ConsumerProjectorVarbinds: an execution whose batches were
	// dead-lettered is FAILED, not SUCCESS.
	ConsumerProjectorDLQ = "projector-dlq"
)

// BucketLeases is the KV bucket holding one lease per OLT.
const BucketLeases = "facho_leases"

// BucketOLTSNMP is the KV bucket of what pollers learned about each OLT,
// shared by every poller replica: key "onus.<olt_id>" holds the OLT's
// discovered ONU instances (ONUSet, folded from facho.onu.<olt_id>.discovered)
// and "get.<olt_id>" the GET batch size that worked (GetSizes), so the next
// run, on any replica, starts from it.
const BucketOLTSNMP = "facho_olt_snmp"

// KV keys of BucketOLTSNMP.
func KeyONUSet(oltID string) string   { return "onus." + oltID }
func KeyGetSizes(oltID string) string { return "get." + oltID }

// BucketCancel is the KV bucket of cancelled executions: the planner puts
// an ExecutionCancel under CancelKey(execution_id); a poller checks it
// before it starts a NodeDue and watches it while the execution runs.
const BucketCancel = "facho_cancel"

// CancelKey is an execution's key in BucketCancel.
func CancelKey(executionID string) string { return "exec." + executionID }

// tokenRE is what an id must look like to be used as one subject token.
var tokenRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ValidID reports whether id can be used as a subject token (brand, OLT,
// job or OID id).
func ValidID(id string) bool { return tokenRE.MatchString(id) }

// Config subjects: one subject per entity, so the latest event on a subject
// is that entity's current state.
func SubjectBrand(id string) string { return "facho.config.brand." + id }
func SubjectOLT(id string) string   { return "facho.config.olt." + id }
func SubjectOID(id string) string   { return "facho.config.oid." + id }
func SubjectJob(id string) string   { return "facho.config.job." + id }

// SubjectOLTDisabled is where the planner disables an OLT after consecutive
// failures (its own subject: the planner never writes an OLT's
// configuration).
func SubjectOLTDisabled(id string) string { return "facho.config.olt_disabled." + id }
func SubjectWorkflow(id string) string {
	return "facho.config.workflow." + id
}
func SubjectAssignment(jobID, oltID string) string {
	return "facho.config.assignment." + jobID + "." + oltID
}

// SubjectNodeDueClass is where the planner says a node (job on OLT) is
// due, in queue class class (ClassDiscovery, ...):
// facho.schedule.due.<olt>.<class>.
func SubjectNodeDueClass(oltID, class string) string {
	return "facho.schedule.due." + oltID + "." + class
}

// SubjectNodeDue is the subject of a NodeDue without a class,
// facho.schedule.due.<olt>: where NodeDue went before queue classes. The
// pre-class durable ConsumerPoller still takes them (a poller's polling
// slots serve it), so a system upgraded with NodeDue pending drains them.
func SubjectNodeDue(oltID string) string { return "facho.schedule.due." + oltID }

// Queue classes of NodeDue (seed 001's Celery queues): each has its own
// durable consumer, so a flood of one class cannot starve another, and its
// own concurrency limit in every poller process.
const (
	// ClassDiscovery: nodes of kind discovery (walks of the ONU tables).
	ClassDiscovery = "discovery"
	// ClassPolling: nodes of kind get, walk or bulkwalk.
	ClassPolling = "polling"
	// ClassRetry: a retried execution (attempt > 1).
	ClassRetry = "retry"
	// ClassHigh: a manual run (high priority).
	ClassHigh = "high_priority"
)

// Classes are the queue classes in the order a poller starts them.
func Classes() []string { return []string{ClassHigh, ClassPolling, ClassDiscovery, ClassRetry} }

// ValidClass tells whether c is a queue class.
func ValidClass(c string) bool {
	switch c {
	case ClassDiscovery, ClassPolling, ClassRetry, ClassHigh:
		return true
	}
	return false
}

// ConsumerPollerClass is the durable consumer of class's NodeDue.
func ConsumerPollerClass(class string) string { return ConsumerPoller + "-" + class }

// SubjectsNodeDueClass is the filter of class's NodeDue.
func SubjectsNodeDueClass(class string) string { return "facho.schedule.due.*." + class }

// SubjectsNodeDueLegacy matches only NodeDue published before classes.
const SubjectsNodeDueLegacy = "facho.schedule.due.*"

// SubjectManualRun is where the API asks the planner to run a node now.
func SubjectManualRun(oltID string) string { return "facho.schedule.manual." + oltID }

// Execution lifecycle phases.
const (
	PhaseStarted   = "started"
	PhaseSucceeded = "succeeded"
	PhaseFailed    = "failed"
	// PhaseSkipped: the run was not made because a newer one supersedes it
	// (no catch-up).
	PhaseSkipped = "skipped"
	// PhaseAborted: the planner cancelled the execution before its next
	// attempt started (its task or OLT was disabled or deleted).
	PhaseAborted = "aborted"
	// PhaseInterrupted: the attempt ended without a succeeded or failed
	// event: its lease expired (its poller died or was cut off mid-walk),
	// or the planner cancelled it while it ran (its OLT was disabled or
	// deleted; ExecutionInterrupted.Cancelled), releasing the lease.
	PhaseInterrupted = "interrupted"
)

// SubjectExec is an execution lifecycle subject for one OLT.
func SubjectExec(oltID, phase string) string { return "facho.exec." + oltID + "." + phase }

// SubjectVarbinds carries raw varbind batches read from one OLT.
func SubjectVarbinds(oltID string) string { return "facho.varbinds." + oltID }

// ONU change kinds.
const (
	ONUDiscovered    = "discovered"
	ONUStatusChanged = "status"
	ONUUpdated       = "updated"
	// ONURemoved: a complete walk of the OLT's ONU table did not find the
	// ONU (onu_data.removed_at is set; seen again, it is present again).
	ONURemoved = "removed"
)

// SubjectONU carries ONU-change events for integrators.
func SubjectONU(oltID, kind string) string { return "facho.onu." + oltID + "." + kind }

// SubjectAudit carries audit events of one category (e.g. "planner").
func SubjectAudit(category string) string { return "facho.audit." + category }

// SubjectDLQ is the dead-letter subject of one consumer.
func SubjectDLQ(consumer string) string { return "facho.dlq." + consumer }

// MsgID builds a Nats-Msg-Id from parts that a retry recomputes identically.
func MsgID(parts ...any) string {
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += ":"
		}
		s += fmt.Sprint(p)
	}
	return s
}

// ProjectorPartitionsMax bounds the varbind projection's partitions
// (services/projector Config.Partitions): the NATS permissions of the
// projector name each partition's durable.
const ProjectorPartitionsMax = 8

// ConsumerProjectorVarbindsPartition is the durable of partition i of n
// of the varbind projection (n > 1; with one partition the durable is
// ConsumerProjectorVarbinds). Each reads the whole stream and applies the
// batches of its OLTs (VarbindPartition).
func ConsumerProjectorVarbindsPartition(i, n int) string {
	return fmt.Sprintf("%s-p%dof%d", ConsumerProjectorVarbinds, i, n)
}

// VarbindPartition is the partition (0..n-1) of an OLT's varbind batches.
func VarbindPartition(oltID string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte("partition:" + oltID))
	return int(h.Sum64() % uint64(n))
}

// OLTOfONUSubject is the OLT id of a facho.onu.<olt_id>.<change> subject
// (SubjectONU; "" when subject is not one).
func OLTOfONUSubject(subject string) string {
	rest, ok := strings.CutPrefix(subject, "facho.onu.")
	i := strings.LastIndexByte(rest, '.')
	if !ok || i <= 0 {
		return ""
	}
	return rest[:i]
}

// OLTOfVarbindsSubject is the OLT id of a facho.varbinds.<olt_id> subject
// ("" when subject is not one).
func OLTOfVarbindsSubject(subject string) string {
	const prefix = "facho.varbinds."
	if len(subject) <= len(prefix) || subject[:len(prefix)] != prefix {
		return ""
	}
	return subject[len(prefix):]
}
