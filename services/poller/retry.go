package poller

import (
	"time"

	"github.com/facho-olt/facho/streams"
)

// FailureCause classifies why an execution failed; its value is the
// execution.failed event's cause (streams.ExecCause*).
type FailureCause string

const (
	CauseSNMP      FailureCause = streams.ExecCauseSNMPError // the OLT did not answer or answered badly
	CauseTimeout   FailureCause = streams.ExecCauseTimeout   // the node's own deadline passed
	CauseLeaseLost FailureCause = streams.ExecCauseLeaseLost // another holder took the OLT
	CauseShutdown  FailureCause = streams.ExecCauseShutdown  // this poller stopped mid-operation
	CauseConfig    FailureCause = streams.ExecCauseConfig    // the NodeDue cannot work (e.g. community does not open)
	CausePublish   FailureCause = streams.ExecCausePublish   // a varbind batch could not be published
	// CauseInterrupted: the planner cancelled the running execution (its
	// OLT was disabled or deleted); published as execution.interrupted.
	CauseInterrupted FailureCause = "interrupted"
	// The runs that answered but read nothing worth a success (see
	// outcome.go): not retryable.
	CauseOIDNotIncreasing FailureCause = streams.ExecCauseOIDNotIncreasing
	CauseEmptyRead        FailureCause = streams.ExecCauseEmptyRead
	CauseNoONUsKnown      FailureCause = streams.ExecCauseNoONUsKnown
	CauseProfileMismatch  FailureCause = streams.ExecCauseProfileMismatch
	// CauseBoundExceeded: the OLT sent more than a bound allows (bounds.go);
	// not retryable either: it would send the same.
	CauseBoundExceeded FailureCause = streams.ExecCauseBoundExceeded
)

// Outcome is what an attempt ended with, as a RetryPolicy sees it.
type Outcome struct {
	Node    streams.NodeDue
	Attempt int
	Cause   FailureCause
	Err     error
}

// Decision says what happens to the NodeDue message after a failed attempt.
type Decision struct {
	// Redeliver NAKs the NodeDue (after Delay) so an attempt follows;
	// otherwise it is acknowledged and the planner owns what comes next.
	Redeliver bool
	Delay     time.Duration
	// Retryable is published in ExecutionFailed.
	Retryable bool
}

// RetryPolicy is the decision point after a failed attempt. The planner's
// retry, backoff and disable-the-OLT policy plugs in here (Deps.Retry), or
// consumes ExecutionFailed.Retryable when it re-plans itself.
type RetryPolicy interface {
	Decide(Outcome) Decision
}

// DefaultRetryPolicy acknowledges failures (the planner re-plans), except
// work this poller interrupted by shutting down, which goes straight back
// to the queue for another instance.
type DefaultRetryPolicy struct{}

func (DefaultRetryPolicy) Decide(o Outcome) Decision {
	switch o.Cause {
	case CauseShutdown:
		return Decision{Redeliver: true, Retryable: true}
	case CauseConfig:
		return Decision{Retryable: false}
	case CauseOIDNotIncreasing, CauseEmptyRead, CauseNoONUsKnown, CauseProfileMismatch, CauseBoundExceeded:
		// The OLT answered: another attempt in a minute reads the same
		// (outcome.go). The node's next run tries again.
		return Decision{Retryable: false}
	case CausePublish:
		// NATS trouble, not the OLT's fault: try again soon.
		return Decision{Redeliver: true, Delay: 5 * time.Second, Retryable: true}
	default:
		return Decision{Retryable: o.Attempt <= o.Node.MaxRetries}
	}
}
