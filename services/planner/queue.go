package planner

import (
	"sort"
	"time"
)

// Flight is the one composite node of an OLT between its dispatch and its
// execution's terminal event.
type Flight struct {
	Key         NodeKey
	ExecutionID string
	// Class is the queue class the node was dispatched in (QueueClass);
	// the flight holds one slot of it until it ends (see ReadyIn).
	Class        string
	ScheduledAt  time.Time
	DispatchedAt time.Time
	// Manual marks a manual run: its end does not move the schedule.
	Manual bool
	// Attempt is the lowest attempt number of the execution this
	// dispatch can run (see SetAttempt); 0: unknown.
	Attempt int
	// Dispatch is the attempt the dispatch's NodeDue carries (1 + the
	// failed attempts before it: NodeDue.Attempt); 0: unknown. Every
	// attempt a dispatch runs is numbered at least this, so a terminal
	// event of a lower attempt is an earlier dispatch's (see Earlier).
	Dispatch int
	// MasterStatus is how the master's execution ended and End the latest
	// end of the composite's executions so far.
	MasterStatus string
	End          time.Time
	// MasterNoRetry: the master failed with a cause not worth a retry
	// (streams.ExecCauseRead: the OLT answered, and would the same).
	MasterNoRetry bool
	// open holds the executions of the composite (the master and its
	// chained nodes) that have not ended.
	open map[string]struct{}
}

type oltQueue struct {
	flight  *Flight
	waiting []DueNode
}

// Queues holds, per OLT, the node in flight and the due nodes waiting for
// it to end (seed 004: one composite node per OLT at a time; when it ends
// the OLT's next waiting node starts at once). It knows no clock: callers
// pass now. Not safe for concurrent use.
type Queues struct {
	delayedAfter time.Duration
	olts         map[string]*oltQueue
	waiting      int
	inFlight     int
	// classFlights counts the flights per queue class.
	classFlights map[string]int
	// hold, when set, keeps a waiting node in its queue while it says so
	// (a get of an OLT with no ONU known yet: getfirst.go); the OLT's
	// other nodes go ahead of it.
	hold func(d DueNode, now time.Time) bool
	// cands is ReadyIn's candidate buffer, kept between calls.
	cands []cand
}

// SetHold sets the rule that keeps waiting nodes in their queue (nil: none).
func (q *Queues) SetHold(hold func(d DueNode, now time.Time) bool) { q.hold = hold }

// NewQueues returns empty queues; a waiting node counts as delayed once it
// is late by delayedAfter or more.
func NewQueues(delayedAfter time.Duration) *Queues {
	return &Queues{delayedAfter: delayedAfter, olts: map[string]*oltQueue{}, classFlights: map[string]int{}}
}

// Waiting is the number of due nodes waiting for their OLT.
func (q *Queues) Waiting() int { return q.waiting }

// InFlight is the number of OLTs with a node in flight.
func (q *Queues) InFlight() int { return q.inFlight }

// Delayed counts the waiting nodes late by delayedAfter or more at now.
func (q *Queues) Delayed(now time.Time) int {
	n := 0
	for _, o := range q.olts {
		for _, d := range o.waiting {
			if q.aged(d, now).Delayed {
				n++
			}
		}
	}
	return n
}

// Push adds a due node to its OLT's queue.
func (q *Queues) Push(d DueNode) {
	o := q.olts[d.Key.OLTID]
	if o == nil {
		o = &oltQueue{}
		q.olts[d.Key.OLTID] = o
	}
	o.waiting = append(o.waiting, d)
	q.waiting++
}

// Flight returns the node in flight on an OLT.
func (q *Queues) Flight(olt string) (Flight, bool) {
	o := q.olts[olt]
	if o == nil || o.flight == nil {
		return Flight{}, false
	}
	return *o.flight, true
}

// SetFlight records a node already in flight (restored after a restart)
// with the ids of its executions (master first).
func (q *Queues) SetFlight(f Flight, ids []string) {
	f.ExecutionID = ids[0]
	f.open = openSet(ids)
	o := q.olts[f.Key.OLTID]
	if o == nil {
		o = &oltQueue{}
		q.olts[f.Key.OLTID] = o
	}
	if o.flight == nil {
		q.inFlight++
	} else {
		q.classFlights[o.flight.Class]--
	}
	q.classFlights[f.Class]++
	o.flight = &f
}

// Ready takes, on every OLT without a node in flight, its first waiting
// node (see Pop) and returns them most urgent first.
func (q *Queues) Ready(now time.Time) []DueNode { return q.ReadyIn(now, nil) }

// Pop takes the first waiting node of a free OLT: delayed first, the most
// delayed first, then by priority (discovery 90 before get 40), then by
// scheduled time and id (seed 004); a manual run goes before all of them.
// A node the hold rule keeps (SetHold) is passed over.
// The caller dispatches it and calls Dispatched, or Unpop.
func (q *Queues) Pop(olt string, now time.Time) (DueNode, bool) { return q.PopIn(olt, now, nil) }

// Dispatched records the execution ids of the node Pop returned: the
// master's, then its chained nodes'.
func (q *Queues) Dispatched(olt string, ids ...string) {
	if o := q.olts[olt]; o != nil && o.flight != nil && len(ids) > 0 {
		o.flight.ExecutionID = ids[0]
		o.flight.open = openSet(ids)
	}
}

// SetAttempt records the lowest attempt number the OLT's flight can run:
// an event of a lower attempt of the same execution is an earlier
// dispatch's (a retry reuses its execution id).
func (q *Queues) SetAttempt(olt string, attempt int) {
	if o := q.olts[olt]; o != nil && o.flight != nil {
		o.flight.Attempt = attempt
	}
}

func openSet(ids []string) map[string]struct{} {
	m := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	return m
}

// Unpop puts back a node whose dispatch failed, first in its OLT's queue.
func (q *Queues) Unpop(d DueNode) {
	o := q.olts[d.Key.OLTID]
	if o == nil || o.flight == nil || o.flight.Key != d.Key {
		return
	}
	q.classFlights[o.flight.Class]--
	o.flight = nil
	q.inFlight--
	o.waiting = append([]DueNode{d}, o.waiting...)
	q.waiting++
}

// Earlier reports whether an event of attempt of the execution executionID
// belongs to a dispatch before the OLT's flight: the execution is the
// flight's (its master or a chained node) and attempt, when known (> 0), is
// below the flight's Dispatch. A retry re-dispatches the same execution
// ids, so such an event (a stale delivery of the earlier NodeDue skipped,
// an earlier attempt's end read again) must not end the flight.
func (q *Queues) Earlier(olt, executionID string, attempt int) bool {
	o := q.olts[olt]
	if o == nil || o.flight == nil || attempt <= 0 || attempt >= o.flight.Dispatch {
		return false
	}
	_, open := o.flight.open[executionID]
	return open
}

// Finish records the end of one execution of an OLT's flight (the master
// or a chained node). ok is false when it is none of them; done says the
// whole composite has ended: the OLT is then free for its next waiting
// node, and the flight returned carries the master's status and the
// latest end.
func (q *Queues) Finish(olt, executionID, status string, end time.Time) (f Flight, done, ok bool) {
	o := q.olts[olt]
	if o == nil || o.flight == nil {
		return Flight{}, false, false
	}
	if _, open := o.flight.open[executionID]; !open {
		return Flight{}, false, false
	}
	delete(o.flight.open, executionID)
	if executionID == o.flight.ExecutionID {
		o.flight.MasterStatus = status
	}
	if end.After(o.flight.End) {
		o.flight.End = end
	}
	if len(o.flight.open) > 0 {
		return *o.flight, false, true
	}
	return q.Abandon(olt)
}

// MarkNoRetry notes that the master of olt's flight, executionID, failed
// with a cause not worth a retry (Flight.MasterNoRetry).
func (q *Queues) MarkNoRetry(olt, executionID string) {
	if o := q.olts[olt]; o != nil && o.flight != nil && o.flight.ExecutionID == executionID {
		o.flight.MasterNoRetry = true
	}
}

// Abandon ends an OLT's flight whatever is still open (its terminal
// events never came).
func (q *Queues) Abandon(olt string) (f Flight, done, ok bool) {
	o := q.olts[olt]
	if o == nil || o.flight == nil {
		return Flight{}, false, false
	}
	f = *o.flight
	q.classFlights[f.Class]--
	o.flight = nil
	q.inFlight--
	q.gc(olt, o)
	return f, true, true
}

// Drop removes the waiting runs of k (its scheduled one and any manual
// run) and returns them.
func (q *Queues) Drop(k NodeKey) []DueNode {
	o := q.olts[k.OLTID]
	if o == nil {
		return nil
	}
	var dropped []DueNode
	kept := o.waiting[:0]
	for _, d := range o.waiting {
		if d.Key == k {
			dropped = append(dropped, d)
			continue
		}
		kept = append(kept, d)
	}
	o.waiting = kept
	q.waiting -= len(dropped)
	q.gc(k.OLTID, o)
	return dropped
}

// Stuck returns the flights dispatched before cutoff(flight): their
// terminal event never came (the safety net; the poller ends every
// NodeDue, so this takes a lost stream message or a purged queue).
func (q *Queues) Stuck(cutoff func(Flight) time.Time, now time.Time) []Flight {
	var out []Flight
	for _, o := range q.olts {
		if o.flight != nil && o.flight.ExecutionID != "" && o.flight.DispatchedAt.Before(cutoff(*o.flight)) {
			out = append(out, *o.flight)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.String() < out[j].Key.String() })
	return out
}

// Next returns the k most urgent waiting nodes, aged at now, most urgent
// first, and calls each (when not nil) with every waiting node aged at now,
// in no order. The queue report wants the head of a backlog of thousands
// each tick, not all of it sorted.
func (q *Queues) Next(now time.Time, k int, each func(d DueNode)) []DueNode {
	top := make([]DueNode, 0, k+1)
	for _, o := range q.olts {
		for i := range o.waiting {
			d := q.aged(o.waiting[i], now)
			if each != nil {
				each(d)
			}
			if len(top) == k && (k == 0 || !lessDue(d, top[k-1])) {
				continue
			}
			at := sort.Search(len(top), func(j int) bool { return lessDue(d, top[j]) })
			top = append(top, DueNode{})
			copy(top[at+1:], top[at:])
			top[at] = d
			if len(top) > k {
				top = top[:k]
			}
		}
	}
	return top
}

func (q *Queues) gc(olt string, o *oltQueue) {
	if o.flight == nil && len(o.waiting) == 0 {
		delete(q.olts, olt)
	}
}

func (q *Queues) aged(d DueNode, now time.Time) DueNode {
	d.Delay = max(now.Sub(d.ScheduledAt), 0)
	d.Delayed = d.Manual || d.Delay >= q.delayedAfter
	return d
}

func sortDue(due []DueNode) {
	sort.Slice(due, func(i, j int) bool { return lessDue(due[i], due[j]) })
}

// lessDue is seed 004's order: delayed first, the most delayed first, then
// priority, then scheduled time and id so the order is stable.
func lessDue(a, b DueNode) bool {
	if a.Manual != b.Manual {
		return a.Manual
	}
	if a.Delayed != b.Delayed {
		return a.Delayed
	}
	if a.Delayed && a.Delay != b.Delay {
		return a.Delay > b.Delay
	}
	if a.Spec.Priority != b.Spec.Priority {
		return a.Spec.Priority > b.Spec.Priority
	}
	if !a.ScheduledAt.Equal(b.ScheduledAt) {
		return a.ScheduledAt.Before(b.ScheduledAt)
	}
	return keyLess(a.Key, b.Key)
}

// keyLess is a.String() < b.String() without building the two strings
// (lessDue's last tie-break runs inside every sort of the queues).
func keyLess(a, b NodeKey) bool {
	as := [3]string{a.JobID, "@", a.OLTID}
	bs := [3]string{b.JobID, "@", b.OLTID}
	ai, aj, bi, bj := 0, 0, 0, 0
	for {
		for ai < 3 && aj == len(as[ai]) {
			ai, aj = ai+1, 0
		}
		for bi < 3 && bj == len(bs[bi]) {
			bi, bj = bi+1, 0
		}
		switch {
		case ai == 3:
			return bi < 3 // a is a prefix of b, or equal
		case bi == 3:
			return false
		}
		if ca, cb := as[ai][aj], bs[bi][bj]; ca != cb {
			return ca < cb
		}
		aj, bj = aj+1, bj+1
	}
}
