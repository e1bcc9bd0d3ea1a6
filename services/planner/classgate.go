package planner

import (
	"context"
	"sort"
	"time"
)

// Room is the free slots per queue class the planner may still dispatch
// into; a class absent from it has no known capacity and no limit. The
// key RoomTotal, when present, bounds all classes together (the poller
// processes' caps on nodes run at once).
type Room map[string]int

// RoomTotal is the key of Room's bound over every class (no class is
// named "").
const RoomTotal = ""

// has tells whether a node of class may be dispatched.
func (r Room) has(class string) bool {
	if n, limited := r[RoomTotal]; limited && n <= 0 {
		return false
	}
	n, limited := r[class]
	return !limited || n > 0
}

// take uses one slot of class: false when the class (or the total) is
// limited and full.
func (r Room) take(class string) bool {
	if !r.has(class) {
		return false
	}
	if n, limited := r[RoomTotal]; limited {
		r[RoomTotal] = n - 1
	}
	if n, limited := r[class]; limited {
		r[class] = n - 1
	}
	return true
}

// InFlightClass is the number of flights dispatched in class and not
// ended.
func (q *Queues) InFlightClass(class string) int { return q.classFlights[class] }

// WaitingByClass counts the waiting nodes per queue class.
func (q *Queues) WaitingByClass() map[string]int {
	out := map[string]int{}
	for _, o := range q.olts {
		for _, d := range o.waiting {
			out[classOf(d)]++
		}
	}
	return out
}

// start puts d in flight on its OLT (taken out of its waiting list by the
// caller).
func (q *Queues) start(o *oltQueue, d DueNode, now time.Time) {
	class := classOf(d)
	o.flight = &Flight{Key: d.Key, Class: class, ScheduledAt: d.ScheduledAt, DispatchedAt: now, Manual: d.Manual, Dispatch: d.Retry + 1}
	q.inFlight++
	q.classFlights[class]++
}

// PopIn is Pop within room: the OLT's most urgent waiting node whose class
// has a free slot (a node of a full class stays waiting and the OLT's next
// one of a class with room goes instead). room is updated; nil: no limit.
func (q *Queues) PopIn(olt string, now time.Time, room Room) (DueNode, bool) {
	o := q.olts[olt]
	if o == nil || o.flight != nil || len(o.waiting) == 0 {
		return DueNode{}, false
	}
	best := -1
	for i := range o.waiting {
		o.waiting[i] = q.aged(o.waiting[i], now)
		if !room.has(classOf(o.waiting[i])) || q.held(o.waiting[i], now) {
			continue
		}
		if best < 0 || lessDue(o.waiting[i], o.waiting[best]) {
			best = i
		}
	}
	if best < 0 {
		return DueNode{}, false
	}
	d := o.waiting[best]
	room.take(classOf(d))
	o.waiting = append(o.waiting[:best], o.waiting[best+1:]...)
	q.waiting--
	q.start(o, d, now)
	return d, true
}

// ReadyIn is Ready within room: the waiting nodes of every free OLT are
// taken most urgent first (seed 004's order across OLTs), at most one per
// OLT and, per class, at most the class's free slots; an OLT whose most
// urgent node's class is full gives its next node of a class with room.
// So a full class holds back neither another class nor another OLT, and
// nothing is dispatched that no slot is free to run. room is updated;
// nil: no limit (Ready).
func (q *Queues) ReadyIn(now time.Time, room Room) []DueNode {
	type cand struct {
		olt string
		i   int
		d   DueNode
	}
	if n, limited := room[RoomTotal]; limited && n <= 0 {
		return nil // every slot taken: nothing to sort
	}
	var cands []cand
	for olt, o := range q.olts {
		if o.flight != nil {
			continue
		}
		for i := range o.waiting {
			o.waiting[i] = q.aged(o.waiting[i], now)
			if !room.has(classOf(o.waiting[i])) {
				continue // its class is full: not a candidate (nor sorted)
			}
			if q.held(o.waiting[i], now) {
				continue // kept in its queue by the hold rule (SetHold)
			}
			cands = append(cands, cand{olt: olt, i: i, d: o.waiting[i]})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return lessDue(cands[i].d, cands[j].d) })
	chosen := map[string]int{} // OLT -> index in its waiting list
	var out []DueNode
	for _, c := range cands {
		if _, done := chosen[c.olt]; done {
			continue
		}
		if !room.take(classOf(c.d)) {
			continue
		}
		chosen[c.olt] = c.i
		out = append(out, c.d)
	}
	for olt, i := range chosen {
		o := q.olts[olt]
		d := o.waiting[i]
		o.waiting = append(o.waiting[:i], o.waiting[i+1:]...)
		q.waiting--
		q.start(o, d, now)
	}
	return out
}

// dispatchAll dispatches every free OLT's most urgent node within the
// room (dispatchReady); inside a batch it only marks the work for the
// batch's end (flushReady), so a burst of finishes sorts the waiting
// nodes once.
func (p *planner) dispatchAll(ctx context.Context, now time.Time) {
	if p.batching {
		p.readyPending = true
		return
	}
	p.dispatchReady(ctx, now)
}

// flushReady runs the dispatch a batch deferred (and, with slots counted,
// gives every free OLT its chance at the slots its finishes freed), then
// observes the finish-to-dispatch time of the OLTs those finishes freed.
func (p *planner) flushReady(ctx context.Context, now time.Time) {
	p.readyPending = false
	p.dispatchReady(ctx, now)
	for _, f := range p.freed {
		if _, busy := p.queues.Flight(f.OLTID); busy && !f.Published.IsZero() {
			p.m.finishToDispatch.Observe(max(now.Sub(f.Published), 0).Seconds())
		}
	}
	p.freed = p.freed[:0]
}

// held tells whether the hold rule (SetHold) keeps d in its queue now.
func (q *Queues) held(d DueNode, now time.Time) bool { return q.hold != nil && q.hold(d, now) }
