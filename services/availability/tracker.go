package availability

import (
	"time"

	"github.com/facho-olt/facho/streams"
)

// maxErrorBytes bounds the last error kept and published.
const maxErrorBytes = 512

// Timings are the rules of the state machine.
type Timings struct {
	// Recheck is the probe period of an unreachable or unavailable OLT.
	Recheck time.Duration
	// ProbeInterval is the probe period of an available OLT.
	ProbeInterval time.Duration
	// UnavailableAfter is how long an OLT stays unreachable before it is
	// unavailable.
	UnavailableAfter time.Duration
}

// Tracker is one OLT's availability: the pure state machine (no clock, no
// I/O), driven by observations and ticks.
//
//	""/available --no answer--> unreachable --UnavailableAfter--> unavailable
//	unreachable/unavailable/"" --answer--> available
type Tracker struct {
	State string // "" until the first observation
	// Previous is the state before State.
	Previous string
	// Since is when State began (for unavailable, when the outage began).
	Since        time.Time
	LastError    string
	Source       string
	ExecutionID  string
	FailedChecks int
	// Answers counts consecutive answered probes (for the recovery of an
	// auto-disabled OLT); an unanswered request resets it.
	Answers int
	// NextProbe is when the OLT is due for a probe (zero: at once).
	NextProbe time.Time
	// Published is the last state published (restored from the stream at
	// start); State != Published means a change waits to be published.
	Published string
}

// Restore sets the tracker from the OLT's last published event.
func (t *Tracker) Restore(ev streams.OLTAvailability) {
	t.State, t.Previous, t.Since = ev.State, ev.Previous, ev.Since
	t.LastError, t.Source, t.ExecutionID, t.FailedChecks = ev.LastError, ev.Source, ev.ExecutionID, ev.FailedChecks
	t.Published = ev.State
	t.NextProbe = time.Time{} // probe a restored OLT at once
}

// NoAnswer records an unanswered request (a probe, or an execution
// attempt whose error says the OLT did not answer) at at: the OLT is
// unreachable at once unless it already is (or is unavailable).
func (t *Tracker) NoAnswer(tm Timings, at time.Time, errText, source, executionID string) {
	t.FailedChecks++
	t.Answers = 0
	t.LastError = bound(errText)
	if t.State != streams.AvailabilityUnreachable && t.State != streams.AvailabilityUnavailable {
		t.move(streams.AvailabilityUnreachable, at, source, executionID)
	}
	t.NextProbe = at.Add(tm.Recheck)
}

// Answer records an answer at at: the OLT is available.
func (t *Tracker) Answer(tm Timings, at time.Time, source, executionID string) {
	t.Answers++
	t.FailedChecks = 0
	if t.State != streams.AvailabilityAvailable {
		t.LastError = ""
		t.move(streams.AvailabilityAvailable, at, source, executionID)
	}
	t.NextProbe = at.Add(tm.ProbeInterval)
}

// Skipped records a probe that was not sent at at because the OLT was
// busy (a walk held its lease) or its lease could not be checked: no
// evidence either way, so nothing but the next probe changes (one Recheck
// later; a walk's outcome, if it comes first, counts as an observation).
func (t *Tracker) Skipped(tm Timings, at time.Time) {
	t.NextProbe = at.Add(tm.Recheck)
}

// Tick moves an OLT unreachable for UnavailableAfter to unavailable; it
// reports whether it did.
func (t *Tracker) Tick(tm Timings, now time.Time) bool {
	if t.State == streams.AvailabilityUnreachable && !now.Before(t.Since.Add(tm.UnavailableAfter)) {
		since := t.Since
		t.move(streams.AvailabilityUnavailable, now, t.Source, t.ExecutionID)
		t.Since = since // the outage began then
		return true
	}
	return false
}

// Due tells whether the OLT should be probed at now.
func (t *Tracker) Due(now time.Time) bool { return !now.Before(t.NextProbe) }

func (t *Tracker) move(state string, at time.Time, source, executionID string) {
	t.Previous = t.State
	t.State = state
	t.Since = at
	t.Source = source
	t.ExecutionID = executionID
}

// Event is the OLTAvailability of the tracker's current state.
func (t *Tracker) Event(oltID string, observed time.Time) streams.OLTAvailability {
	ev := streams.OLTAvailability{OLTID: oltID, State: t.State, Previous: t.Published, Since: t.Since.UTC(),
		Source: t.Source, ExecutionID: t.ExecutionID, ObservedAt: observed.UTC()}
	if t.State != streams.AvailabilityAvailable {
		ev.LastError = t.LastError
		ev.FailedChecks = t.FailedChecks
	}
	return ev
}

// MsgID is the Nats-Msg-Id of an availability event (streams/olt_events.go).
func MsgID(ev streams.OLTAvailability) string {
	return streams.MsgID("avail", ev.OLTID, ev.State, ev.Since.UnixNano())
}

func bound(s string) string {
	if len(s) <= maxErrorBytes {
		return s
	}
	s = s[:maxErrorBytes]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 { // do not cut a rune
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xC0 {
		s = s[:len(s)-1]
	}
	return s
}
