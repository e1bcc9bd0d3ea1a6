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
	id := d.ExecutionID
	if id == "" {
		id = ExecutionID(d.Key, d.ScheduledAt)
	}
	return streams.NodeDue{
		ExecutionID:       id,
		NodeID:            d.Key.NodeID(),
		JobID:             d.Key.JobID,
		JobName:           s.JobName,
		OLTID:             d.Key.OLTID,
		BrandID:           s.BrandID,
		IndexScheme:       s.IndexScheme,
		Index:             s.Index,
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
		Chain:             chainOf(id, s.Chain),
		StopOnFailure:     s.StopOnFailure && len(s.Chain) > 0,
	}
}

// ChainExecutionID is the execution id of a chained node of the composite
// execution master: derived, so a re-dispatch (a retry) gives the same.
func ChainExecutionID(master, jobID string) string {
	return uuid.NewSHA1(executionNamespace, []byte(master+":chain:"+jobID)).String()
}

func chainOf(master string, chain []ChainSpec) []streams.ChainedNode {
	if len(chain) == 0 {
		return nil
	}
	out := make([]streams.ChainedNode, len(chain))
	for i, c := range chain {
		out[i] = streams.ChainedNode{ExecutionID: ChainExecutionID(master, c.JobID), JobID: c.JobID, JobName: c.JobName,
			Kind: c.Kind, OIDs: c.OIDs, TimeoutSeconds: c.TimeoutSeconds}
	}
	return out
}

// executionIDs are every execution of a dispatched (composite) node.
func executionIDs(nd streams.NodeDue) []string {
	ids := []string{nd.ExecutionID}
	for _, c := range nd.Chain {
		ids = append(ids, c.ExecutionID)
	}
	return ids
}
