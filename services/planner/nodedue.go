package planner

import (
	"time"

	"github.com/google/uuid"

	"github.com/facho-olt/facho/streams"
)

// executionNamespace scopes the name-based (SHA-1) execution ids.
var executionNamespace = uuid.MustParse("6f1c9a52-4f0e-4d7c-9a57-2b8d6c1e0a11")

// dueMsgID is the Nats-Msg-Id of a NodeDue: the same (job, OLT, scheduled
// time) always gives the same id, so a second emission (a restarted or a
// second planner) inside the duplicate window is dropped by the stream.
func dueMsgID(k NodeKey, scheduled time.Time) string {
	return streams.MsgID("due", k.JobID, k.OLTID, scheduled.UnixMilli())
}

// ExecutionID is the deterministic execution id of a node's run scheduled at
// scheduled (a UUID derived from job, OLT and scheduled time).
func ExecutionID(k NodeKey, scheduled time.Time) string {
	return uuid.NewSHA1(executionNamespace, []byte(dueMsgID(k, scheduled))).String()
}

// nodeDue builds the NodeDue of a due node. The community stays sealed as
// the OLT event carried it: the planner never opens it.
func nodeDue(d DueNode) streams.NodeDue {
	s := d.Spec
	return streams.NodeDue{
		ExecutionID:       ExecutionID(d.Key, d.ScheduledAt),
		NodeID:            d.Key.NodeID(),
		JobID:             d.Key.JobID,
		JobName:           s.JobName,
		OLTID:             d.Key.OLTID,
		BrandID:           s.BrandID,
		IndexScheme:       s.IndexScheme,
		Kind:              s.Kind,
		Target:            s.Target,
		OIDs:              s.OIDs,
		Priority:          s.Priority,
		IntervalSeconds:   s.IntervalSeconds,
		TimeoutSeconds:    s.TimeoutSeconds,
		MaxRetries:        s.MaxRetries,
		RetryDelaySeconds: s.RetryDelaySeconds,
		ScheduledAt:       d.ScheduledAt.UTC(),
		DelaySeconds:      d.Delay.Seconds(),
		SNMP:              s.SNMP,
	}
}
