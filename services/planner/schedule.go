package planner

import (
	"sort"
	"time"

	"github.com/facho-olt/facho/streams"
)

// Node is a planned node and its timing.
type Node struct {
	Key   NodeKey
	Spec  NodeSpec
	Since time.Time
	// Next is when the node is next due (next_run_at).
	Next time.Time
	// LastScheduled is the scheduled time of the last emission; zero until
	// the first one.
	LastScheduled time.Time
}

// Change is a plan change worth an audit event.
type Change struct {
	Kind        string // streams.AuditTaskAdded, AuditTaskRemoved or AuditPlanAdjusted
	Key         NodeKey
	Spec        NodeSpec // the node's spec (the last one known for a removal)
	Next        time.Time
	OldInterval int // PLAN_ADJUSTED only
}

// DueNode is a node due now.
type DueNode struct {
	Key         NodeKey
	Spec        NodeSpec
	ScheduledAt time.Time
	Delay       time.Duration
	Delayed     bool
}

// Scheduler holds the next run of every plannable node. It knows no clock:
// callers pass now, so the rules are tested with a simulated one. Not safe
// for concurrent use.
type Scheduler struct {
	firstRunDelay time.Duration
	delayedAfter  time.Duration
	nodes         map[NodeKey]*Node
}

// NewScheduler returns an empty scheduler. A new node first runs
// firstRunDelay after it became plannable (no catch-up); a due node counts as
// delayed once it is late by delayedAfter or more.
func NewScheduler(firstRunDelay, delayedAfter time.Duration) *Scheduler {
	return &Scheduler{firstRunDelay: firstRunDelay, delayedAfter: delayedAfter, nodes: map[NodeKey]*Node{}}
}

// Len is the number of planned nodes.
func (s *Scheduler) Len() int { return len(s.nodes) }

// Node returns a copy of one planned node.
func (s *Scheduler) Node(k NodeKey) (Node, bool) {
	n, ok := s.nodes[k]
	if !ok {
		return Node{}, false
	}
	return *n, true
}

// Sync makes the plan match desired (every plannable node) and returns what
// changed, in a stable order.
func (s *Scheduler) Sync(desired map[NodeKey]Desired, now time.Time) []Change {
	var changes []Change
	removed := make([]NodeKey, 0)
	for k := range s.nodes {
		if _, ok := desired[k]; !ok {
			removed = append(removed, k)
		}
	}
	sort.Slice(removed, func(i, j int) bool { return removed[i].String() < removed[j].String() })
	for _, k := range removed {
		n := s.nodes[k]
		delete(s.nodes, k)
		changes = append(changes, Change{Kind: streams.AuditTaskRemoved, Key: k, Spec: n.Spec, Next: n.Next})
	}
	for _, k := range sortedKeys(desired) {
		d := desired[k]
		n, ok := s.nodes[k]
		// A different Since means the node was disabled and enabled again
		// between two syncs: it starts over as a new node.
		if !ok || !n.Since.Equal(d.Since) {
			n = &Node{Key: k, Spec: d.Spec, Since: d.Since, Next: restoreNext(d.Since.Add(s.firstRunDelay), d.Spec.Interval(), now)}
			s.nodes[k] = n
			changes = append(changes, Change{Kind: streams.AuditTaskAdded, Key: k, Spec: n.Spec, Next: n.Next})
			continue
		}
		old := n.Spec.IntervalSeconds
		n.Spec = d.Spec
		if old != d.Spec.IntervalSeconds {
			n.Next = replanInterval(n, now)
			changes = append(changes, Change{Kind: streams.AuditPlanAdjusted, Key: k, Spec: n.Spec, Next: n.Next, OldInterval: old})
		}
	}
	return changes
}

// Due returns the nodes due at now (Next <= now): delayed nodes first, the
// most delayed first, then by priority (discovery 90 before get 40), then by
// scheduled time and id so the order is stable.
func (s *Scheduler) Due(now time.Time) []DueNode {
	var due []DueNode
	for _, n := range s.nodes {
		if n.Next.After(now) {
			continue
		}
		delay := now.Sub(n.Next)
		due = append(due, DueNode{Key: n.Key, Spec: n.Spec, ScheduledAt: n.Next, Delay: delay, Delayed: delay >= s.delayedAfter})
	}
	sort.Slice(due, func(i, j int) bool {
		a, b := due[i], due[j]
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
		return a.Key.String() < b.Key.String()
	})
	return due
}

// Done records that the run scheduled at scheduled was emitted at now and
// plans the next one: scheduled + interval, or, when that is already past
// (the run was missed), now + interval. Missed runs are never replayed.
func (s *Scheduler) Done(k NodeKey, scheduled, now time.Time) {
	n, ok := s.nodes[k]
	if !ok || !n.Next.Equal(scheduled) {
		return // removed or re-planned meanwhile
	}
	n.LastScheduled = scheduled
	next := scheduled.Add(n.Spec.Interval())
	if next.Before(now) {
		next = now.Add(n.Spec.Interval()).Truncate(time.Millisecond)
	}
	n.Next = next
}

// restoreNext is the first slot of the grid first + k*interval that is not
// in the past. For a node enabled just now it is first itself (FirstRunDelay
// later); for a node restored by a replay after a restart it is the next
// slot, the same one every planner computes, so the NodeDue ids match and
// the stream drops the second copy.
//
// Seam: a persisted schedule (KV of next_run_at per node) would replace this.
func restoreNext(first time.Time, interval time.Duration, now time.Time) time.Time {
	first = first.Truncate(time.Millisecond)
	if !first.Before(now) || interval <= 0 {
		return first
	}
	k := (now.Sub(first) + interval - 1) / interval
	return first.Add(k * interval)
}

// replanInterval keeps a pending first run as it is and otherwise counts
// the new interval from the last run; a run that the shorter interval makes
// overdue happens now, not in the past.
func replanInterval(n *Node, now time.Time) time.Time {
	if n.LastScheduled.IsZero() {
		return n.Next
	}
	next := n.LastScheduled.Add(n.Spec.Interval())
	if next.Before(now) {
		return now.Truncate(time.Millisecond)
	}
	return next
}
