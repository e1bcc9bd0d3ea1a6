package planner

import (
	"fmt"
	"time"

	"github.com/facho-olt/facho/streams"
)

// auditOf turns a plan change into an audit event for the coordinator log.
func auditOf(c Change, reason string) streams.AuditEvent {
	details := map[string]any{
		"node_id":          c.Key.NodeID(),
		"job_id":           c.Key.JobID,
		"job_name":         c.Spec.JobName,
		"kind":             c.Spec.Kind,
		"priority":         c.Spec.Priority,
		"interval_seconds": c.Spec.IntervalSeconds,
	}
	ev := streams.AuditEvent{OLTID: c.Key.OLTID, Kind: c.Kind, Level: streams.LevelInfo, Details: details}
	switch c.Kind {
	case streams.AuditTaskAdded:
		details["next_run_at"] = c.Next.UTC().Format(time.RFC3339Nano)
		ev.Message = fmt.Sprintf("task %q added to the plan", c.Spec.JobName)
	case streams.AuditTaskRemoved:
		details["reason"] = reason
		ev.Level = streams.LevelWarning
		ev.Message = fmt.Sprintf("task %q removed from the plan: %s", c.Spec.JobName, reason)
	case streams.AuditPlanAdjusted:
		details["old_interval_seconds"] = c.OldInterval
		details["next_run_at"] = c.Next.UTC().Format(time.RFC3339Nano)
		ev.Message = fmt.Sprintf("task %q interval changed from %ds to %ds", c.Spec.JobName, c.OldInterval, c.Spec.IntervalSeconds)
	}
	return ev
}

// why says why a node is not plannable (for TASK_REMOVED).
func (s *state) why(k NodeKey) string {
	a, ok := s.assigns[k]
	switch {
	case !ok:
		return "job unassigned from the OLT"
	case !a.enabled:
		return "assignment disabled"
	}
	if wf, ok := s.chainedIn(k); ok {
		return fmt.Sprintf("chained after %s in workflow %s", wf.MasterJobID, wf.ID)
	}
	job, ok := s.jobs[k.JobID]
	switch {
	case !ok:
		return "job deleted"
	case !job.Enabled:
		return "job disabled"
	}
	olt, ok := s.olts[k.OLTID]
	switch {
	case !ok:
		return "OLT deleted"
	case !olt.Enabled:
		return "OLT disabled"
	case !s.oltEnabled(k.OLTID):
		return "OLT disabled: " + s.autoDisabled[k.OLTID].Reason
	case olt.BrandID != job.BrandID:
		return "job brand differs from the OLT brand"
	}
	if _, ok := s.brands[job.BrandID]; !ok {
		return "brand unknown"
	}
	return "no known OID of the job's brand"
}
