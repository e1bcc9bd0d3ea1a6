package planner

import (
	"container/heap"
	"context"
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
	if n, limited := room[RoomTotal]; limited && n <= 0 {
		return nil // every slot taken: nothing to look at
	}
	// The candidates are references into the waiting lists, ordered by a
	// heap: a backlog of thousands of waiting nodes with a few free slots
	// takes a few pops, where sorting every candidate (and moving whole
	// DueNodes about) cost the planner a large part of each dispatch.
	h := candHeap{c: q.cands[:0]}
	for _, o := range q.olts {
		if o.flight != nil {
			continue
		}
		for i := range o.waiting {
			o.waiting[i] = q.aged(o.waiting[i], now)
			if !room.has(classOf(o.waiting[i])) {
				continue // its class is full: not a candidate
			}
			if q.held(o.waiting[i], now) {
				continue // kept in its queue by the hold rule (SetHold)
			}
			h.c = append(h.c, cand{o: o, i: i})
		}
	}
	heap.Init(&h)
	var picks []cand
	var out []DueNode
	chosen := map[*oltQueue]bool{}
	for h.Len() > 0 {
		if n, limited := room[RoomTotal]; limited && n <= 0 {
			break
		}
		c := heap.Pop(&h).(cand)
		if chosen[c.o] {
			continue
		}
		d := c.o.waiting[c.i]
		if !room.take(classOf(d)) {
			continue
		}
		chosen[c.o] = true
		picks = append(picks, c)
		out = append(out, d)
	}
	clear(h.c[:cap(h.c)]) // drop the references the buffer holds
	q.cands = h.c[:0]
	for _, c := range picks {
		o := c.o
		d := o.waiting[c.i]
		o.waiting = append(o.waiting[:c.i], o.waiting[c.i+1:]...)
		q.waiting--
		q.start(o, d, now)
	}
	return out
}

// cand is a waiting node ReadyIn may dispatch: the i-th of o's waiting
// list.
type cand struct {
	o *oltQueue
	i int
}

// candHeap orders candidates most urgent first (lessDue).
type candHeap struct{ c []cand }

func (h *candHeap) Len() int { return len(h.c) }
func (h *candHeap) Less(i, j int) bool {
	return lessDue(h.c[i].o.waiting[h.c[i].i], h.c[j].o.waiting[h.c[j].i])
}
func (h *candHeap) Swap(i, j int) { h.c[i], h.c[j] = h.c[j], h.c[i] }
func (h *candHeap) Push(x any)    { h.c = append(h.c, x.(cand)) }
func (h *candHeap) Pop() any {
	n := len(h.c) - 1
	x := h.c[n]
	h.c = h.c[:n]
	return x
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
