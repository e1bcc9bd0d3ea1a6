package poller

import (
	"context"
	"fmt"
	"strings"

	"github.com/facho-olt/facho/streams"
)

// tuned applies a node's SNMP tuning (its OLT's over its brand's) to op:
// the walk PDU and the GETBULK max-repetitions. `walk` uses GETNEXT (v1-style
// agents, OLTs that misbehave on GETBULK), `bulkwalk` and `discovery` use
// GETBULK, unless the tuning's walk_pdu says which one the OLT needs.
func (op snmpOp) tuned(node streams.NodeDue) snmpOp {
	switch node.SNMP.WalkPDU {
	case streams.WalkPDUGetNext:
		op.getNext = true
	case streams.WalkPDUGetBulk:
		op.getNext = false
	default:
		op.getNext = node.Kind == streams.KindWalk
	}
	op.maxReps = node.SNMP.MaxRepetitions
	return op
}

// withGetResult adds to ev what a get read and could not read (nothing for
// a walk).
func (ex *execution) withGetResult(ev streams.ExecutionSucceeded) streams.ExecutionSucceeded {
	r := ex.get
	if r == nil {
		return ev
	}
	ev.ONUs = r.onus
	ev.FailedONUs = len(r.failures)
	ev.FailedVarbinds = r.failedVarbinds
	if len(r.failures) > 0 {
		ev.ONUFailures = r.failures[:min(len(r.failures), streams.MaxONUFailuresListed)]
	}
	return ev
}

// auditGetFailures publishes one coordinator log (audit ONU_READ_FAILED,
// level WARNING) for a get that could not read some OIDs of some ONUs, and
// logs it; a failed publish is logged and does not fail the execution
// (the failures are in its succeeded event as well).
func (ex *execution) auditGetFailures(ctx context.Context) {
	r := ex.get
	if r == nil || len(r.failures) == 0 {
		return
	}
	listed := r.failures[:min(len(r.failures), streams.MaxONUFailuresListed)]
	onus := make([]string, 0, len(listed))
	for _, f := range listed {
		onus = append(onus, f.Instance)
	}
	ex.log.Warn().Int("failed_onus", len(r.failures)).Int("failed_varbinds", r.failedVarbinds).Int("onus", r.onus).
		Str("first_failed", strings.Join(onus[:min(len(onus), 10)], ",")).Msg("get: some ONUs not read")
	ev := streams.AuditEvent{
		OLTID: ex.node.OLTID,
		Kind:  streams.AuditONUReadFailed,
		Level: streams.LevelWarning,
		Message: fmt.Sprintf("get %s: %d of %d ONUs not fully read (%d of %d OIDs), even one OID per request",
			ex.node.JobID, len(r.failures), r.onus, r.failedVarbinds, r.varbinds),
		Details: map[string]any{
			"execution_id":    ex.node.ExecutionID,
			"job_id":          ex.node.JobID,
			"attempt":         ex.attempt,
			"onus":            r.onus,
			"failed_onus":     len(r.failures),
			"failed_varbinds": r.failedVarbinds,
			"varbinds":        r.varbinds,
			"splits":          r.splits,
			"pdu_size_start":  r.startSize,
			"pdu_size_end":    r.finalSize,
			"concurrency":     r.concurrency,
			"onu_failures":    listed,
		},
	}
	if err := ex.publish(ctx, streams.SubjectAudit("poller"), "onu-read-failed", ev); err != nil {
		ex.log.Warn().Err(err).Msg("publish onu read failures")
	}
}
