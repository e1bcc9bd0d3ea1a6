package planner

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// Terminal statuses of an execution as the planner records them
// (last_status of a node).
const (
	statusSuccess = "SUCCESS"
	statusFailed  = "FAILED"
	statusSkipped = "SKIPPED"
	// statusAborted and statusInterrupted: the planner cancelled the
	// execution (before it started, or while it ran).
	statusAborted     = "ABORTED"
	statusInterrupted = "INTERRUPTED"
	// statusUnknown: the planner gave up waiting for a terminal event.
	statusUnknown = "UNKNOWN"
)

// finish is an execution's terminal event.
type finish struct {
	OLTID       string
	JobID       string
	ExecutionID string
	Status      string
	// End is when the run ended (the poller's finished_at or skipped_at):
	// the node's next run is End + interval, the same for every planner.
	End time.Time
	// Published is the event's envelope time (latency metrics).
	Published time.Time
	// Attempt is the attempt the event is of (0 when the event has none:
	// aborted, or a skipped published before the field). Of a skipped it
	// is the skipped NodeDue's attempt (the dispatch's number).
	Attempt int
	// NoRetry: a failure with a cause not worth a retry (the OLT answered
	// but the run read nothing worth a success: streams.ExecCauseRead).
	// It counts as a failure; the node's next run is end + interval.
	NoRetry bool
	// Lost marks an attempt interrupted because its poller died (its
	// lease expired: execution.interrupted without cancelled). It does
	// not end the execution: the NodeDue is redelivered and a later
	// attempt ends it. If none runs (the redelivery came stale, or the
	// flight is given up), the execution ended INTERRUPTED and is retried
	// like a failed one (see completeFlight).
	Lost bool
}

// terminalSubjects are the FACHO_EXEC subjects that end an execution.
func terminalSubjects() []string {
	return []string{
		streams.SubjectExec("*", streams.PhaseSucceeded),
		streams.SubjectExec("*", streams.PhaseFailed),
		streams.SubjectExec("*", streams.PhaseSkipped),
		streams.SubjectExec("*", streams.PhaseAborted),
		streams.SubjectExec("*", streams.PhaseInterrupted),
	}
}

// decodeFinish reads a terminal event. ok is false for an event that does
// not end its execution (a failed attempt the poller redelivers); an
// attempt lost with its poller comes with Lost set.
func decodeFinish(data []byte) (f finish, ok bool, err error) {
	env, err := streams.DecodeEnvelope(data)
	if err != nil {
		return f, false, err
	}
	f.Published = env.Time
	switch env.Type {
	case streams.TypeExecutionSucceeded:
		var e streams.ExecutionSucceeded
		if err := streams.DecodeData(env, &e); err != nil {
			return f, false, err
		}
		f.OLTID, f.JobID, f.ExecutionID, f.Status, f.End, f.Attempt = e.OLTID, e.JobID, e.ExecutionID, statusSuccess, e.FinishedAt, e.Attempt
	case streams.TypeExecutionFailed:
		var e streams.ExecutionFailed
		if err := streams.DecodeData(env, &e); err != nil {
			return f, false, err
		}
		if e.Redelivered {
			return f, false, nil
		}
		f.OLTID, f.JobID, f.ExecutionID, f.Status, f.End, f.Attempt = e.OLTID, e.JobID, e.ExecutionID, statusFailed, e.FinishedAt, e.Attempt
		f.NoRetry = streams.ExecCauseRead(e.Cause)
	case streams.TypeExecutionSkipped:
		var e streams.ExecutionSkipped
		if err := streams.DecodeData(env, &e); err != nil {
			return f, false, err
		}
		f.OLTID, f.JobID, f.ExecutionID, f.Status, f.End, f.Attempt = e.OLTID, e.JobID, e.ExecutionID, statusSkipped, e.SkippedAt, e.Attempt
	case streams.TypeExecutionAborted:
		var e streams.ExecutionAborted
		if err := streams.DecodeData(env, &e); err != nil {
			return f, false, err
		}
		f.OLTID, f.JobID, f.ExecutionID, f.Status, f.End = e.OLTID, e.JobID, e.ExecutionID, statusAborted, e.AbortedAt
	case streams.TypeExecutionInterrupted:
		var e streams.ExecutionInterrupted
		if err := streams.DecodeData(env, &e); err != nil {
			return f, false, err
		}
		// Without cancelled: a lease that expired under a dead poller; the
		// NodeDue is redelivered and its next attempt ends the execution
		// (Lost: the planner only notes it).
		f.Lost = !e.Cancelled
		f.OLTID, f.JobID, f.ExecutionID, f.Status, f.End, f.Attempt = e.OLTID, e.JobID, e.ExecutionID, statusInterrupted, e.InterruptedAt, e.Attempt
	default:
		return f, false, nil
	}
	if f.OLTID == "" || f.ExecutionID == "" {
		return f, false, fmt.Errorf("%w: %s without olt_id or execution_id", streams.ErrMalformed, env.Type)
	}
	if f.End.IsZero() {
		f.End = env.Time
	}
	return f, true, nil
}

// followExec starts an ordered consumer on the terminal execution events,
// from start (zero: only new ones), and forwards them to out until ctx ends.
// Ordered, not durable: every planner replica sees every event, and a
// restarted planner re-reads from its oldest flight.
func (p *planner) followExec(ctx context.Context, start time.Time, out chan<- finish) (stop func(), err error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: terminalSubjects(), DeliverPolicy: jetstream.DeliverNewPolicy}
	if !start.IsZero() {
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		cfg.OptStartTime = &start
	}
	return follow(ctx, p, streams.StreamExec, "execution events", cfg, decodeFinish, out)
}
