package planner

import (
	"hash/fnv"
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
	// LastScheduled is the scheduled time of the last finished run; zero
	// until the first one.
	LastScheduled time.Time
	// Taken: the run due at Next is waiting in its OLT's queue or in
	// flight; Due skips the node until Finish (or Release) says it ended.
	Taken bool
	// LastRun is when the last run ended (last_run_at) and LastStatus how.
	LastRun       time.Time
	LastStatus    string
	LastExecution string
	// Attempts is the number of failed attempts of the taken run; RetryAt,
	// when set, is when the taken run is retried (the OLT is free
	// meanwhile).
	Attempts int
	RetryAt  time.Time
}

// Change is a plan change worth an audit event.
type Change struct {
	Kind        string // streams.AuditTaskAdded, AuditTaskRemoved or AuditPlanAdjusted
	Key         NodeKey
	Spec        NodeSpec // the node's spec (the last one known for a removal)
	Next        time.Time
	OldInterval int // PLAN_ADJUSTED only
	// Backoff is the run the change took out of the plan while it waited
	// out its retry backoff (a removed node's, or the old incarnation's of
	// a node that starts over); zero Attempts: none.
	Backoff PendingRetry
}

// PendingRetry is a run waiting out its retry backoff, neither queued nor
// dispatched: the run scheduled at ScheduledAt (its execution id) after
// Attempts failed or interrupted attempts.
type PendingRetry struct {
	ScheduledAt time.Time
	Attempts    int
}

// backoff is the node's run when it waits out its retry backoff.
func (n *Node) backoff() PendingRetry {
	if !n.Taken || n.RetryAt.IsZero() {
		return PendingRetry{}
	}
	return PendingRetry{ScheduledAt: n.Next, Attempts: n.Attempts}
}

// DueNode is a node due now.
type DueNode struct {
	Key         NodeKey
	Spec        NodeSpec
	ScheduledAt time.Time
	Delay       time.Duration
	Delayed     bool
	// Manual: a manual run (ahead of every queue, schedule not moved).
	Manual bool
	// Retry is the number of failed attempts before this retry (0: the
	// first attempt).
	Retry int
	// ExecutionID of a manual run (chosen by the API); empty otherwise.
	ExecutionID string
}

// Scheduler holds the next run of every plannable node. It knows no clock:
// callers pass now, so the rules are tested with a simulated one. Not safe
// for concurrent use.
type Scheduler struct {
	firstRunDelay time.Duration
	delayedAfter  time.Duration
	// spread bounds the per-node offset of first runs (0: none).
	spread time.Duration
	nodes  map[NodeKey]*Node
	// discoveries indexes the discovery nodes by OLT (Discoveries).
	discoveries map[string]map[NodeKey]struct{}
	// restored is the persisted schedule read at start-up, used once by
	// Sync for nodes of the same incarnation (same Since).
	restored map[NodeKey]Restored
}

// Restored is a node's timing as the persisted schedule had it.
type Restored struct {
	Since         time.Time
	Next          time.Time
	LastRun       time.Time
	LastStatus    string
	LastExecution string
	// Taken: the run due at Next was in flight, or waiting for its retry
	// at RetryAt after Attempts failed attempts.
	Taken    bool
	Attempts int
	RetryAt  time.Time
}

// Unrestored returns the restored entries Sync used for no node: their
// node left the plan, or started over, while no planner ran.
func (s *Scheduler) Unrestored() map[NodeKey]Restored { return s.restored }

// SetRestored gives Sync the persisted schedule to restore nodes from
// instead of planning them anew (a restarted or taking-over planner).
func (s *Scheduler) SetRestored(r map[NodeKey]Restored) { s.restored = r }

// NewScheduler returns an empty scheduler. A new node first runs
// firstRunDelay after it became plannable (no catch-up); a due node counts as
// delayed once it is late by delayedAfter or more.
func NewScheduler(firstRunDelay, delayedAfter time.Duration) *Scheduler {
	return &Scheduler{firstRunDelay: firstRunDelay, delayedAfter: delayedAfter, nodes: map[NodeKey]*Node{}, discoveries: map[string]map[NodeKey]struct{}{}}
}

// SpreadFirstRuns makes the first run of each new node that became
// plannable together with others (within burstWindow) FirstOffset(k,
// interval, max) later, so they (a job enabled on 1,000 OLTs, or 1,000 OLTs
// added one by one) do not all fire in the same second.
func (s *Scheduler) SpreadFirstRuns(max time.Duration) { s.spread = max }

// FirstOffset is a node's deterministic offset in [0, min(interval, max)):
// a hash of its id, so every planner computes the same one.
func FirstOffset(k NodeKey, interval, max time.Duration) time.Duration {
	window := min(interval, max)
	if window <= time.Millisecond {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(k.NodeID()))
	return (time.Duration(h.Sum64()%uint64(window/time.Millisecond)) * time.Millisecond)
}

// burstWindow: nodes that became plannable within this of each other
// became plannable together (their first runs are spread).
const burstWindow = time.Minute

// oltSince is when a node of an OLT became plannable.
type oltSince struct {
	at  time.Time
	olt string
}

// inBurst says whether a node of another OLT than olt became plannable
// within burstWindow of since; sorted holds every node's (by time, its own
// included). The nodes of one OLT coming together (a new OLT with its
// discovery and its gets) are not a burst: spreading them would put the
// new OLT's discovery, and so its first readings (a get waits for the
// discovery, see getfirst.go), up to the spread later.
func inBurst(sorted []oltSince, since time.Time, olt string) bool {
	from := sort.Search(len(sorted), func(i int) bool { return !sorted[i].at.Before(since.Add(-burstWindow)) })
	for i := from; i < len(sorted) && !sorted[i].at.After(since.Add(burstWindow)); i++ {
		if sorted[i].olt != olt {
			return true
		}
	}
	return false
}

// Discoveries says how the discovery nodes of olt stand: has (the OLT has
// one), firstPending (one has not ended a run yet: never run, waiting,
// in flight or between retries) and the end and status of the latest
// run that ended.
func (s *Scheduler) Discoveries(olt string) (has, firstPending bool, lastRun time.Time, lastStatus string) {
	for k := range s.discoveries[olt] {
		n := s.nodes[k]
		if n == nil {
			continue
		}
		has = true
		if n.LastRun.IsZero() {
			firstPending = true
		} else if n.LastRun.After(lastRun) {
			lastRun, lastStatus = n.LastRun, n.LastStatus
		}
	}
	return has, firstPending, lastRun, lastStatus
}

// indexDiscovery keeps k in the discoveries index when n (nil: removed) is
// a discovery node, and out of it otherwise.
func (s *Scheduler) indexDiscovery(k NodeKey, n *Node) {
	if n != nil && n.Spec.Kind == streams.KindDiscovery {
		if s.discoveries[k.OLTID] == nil {
			s.discoveries[k.OLTID] = map[NodeKey]struct{}{}
		}
		s.discoveries[k.OLTID][k] = struct{}{}
		return
	}
	if m := s.discoveries[k.OLTID]; m != nil {
		delete(m, k)
		if len(m) == 0 {
			delete(s.discoveries, k.OLTID)
		}
	}
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
		s.indexDiscovery(k, nil)
		changes = append(changes, Change{Kind: streams.AuditTaskRemoved, Key: k, Spec: n.Spec, Next: n.Next, Backoff: n.backoff()})
	}
	// Nodes that became plannable in one burst (a job enabled on 1,000
	// OLTs, or a script adding OLTs one by one) are spread; a node enabled
	// alone first runs FirstRunDelay later (seed 003). Since comes from the
	// stream, so every planner counts the same bursts.
	sinces := make([]oltSince, 0, len(desired))
	for k, d := range desired {
		sinces = append(sinces, oltSince{at: d.Since, olt: k.OLTID})
	}
	sort.Slice(sinces, func(i, j int) bool { return sinces[i].at.Before(sinces[j].at) })
	for _, k := range sortedKeys(desired) {
		d := desired[k]
		n, ok := s.nodes[k]
		// A different Since means the node was disabled and enabled again
		// between two syncs: it starts over as a new node.
		if !ok || !n.Since.Equal(d.Since) {
			var old PendingRetry
			if ok {
				old = n.backoff() // the old incarnation's retry is dropped
			}
			first := d.Since.Add(s.firstRunDelay)
			if inBurst(sinces, d.Since, k.OLTID) {
				first = first.Add(FirstOffset(k, d.Spec.Interval(), s.spread))
			}
			n = &Node{Key: k, Spec: d.Spec, Since: d.Since, Next: restoreNext(first, d.Spec.Interval(), now)}
			if r, ok := s.restored[k]; ok && r.Since.Equal(d.Since) && !r.Next.IsZero() {
				n.Next, n.LastRun, n.LastStatus, n.LastExecution, n.Taken = r.Next, r.LastRun, r.LastStatus, r.LastExecution, r.Taken
				n.Attempts, n.RetryAt = r.Attempts, r.RetryAt
				delete(s.restored, k)
			}
			s.nodes[k] = n
			s.indexDiscovery(k, n)
			changes = append(changes, Change{Kind: streams.AuditTaskAdded, Key: k, Spec: n.Spec, Next: n.Next, Backoff: old})
			continue
		}
		old := n.Spec.IntervalSeconds
		n.Spec = d.Spec
		s.indexDiscovery(k, n) // its job's kind may have changed
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
		retry := n.Taken && !n.RetryAt.IsZero() && !n.RetryAt.After(now)
		if (n.Taken && !retry) || n.Next.After(now) {
			continue
		}
		delay := now.Sub(n.Next)
		d := DueNode{Key: n.Key, Spec: n.Spec, ScheduledAt: n.Next, Delay: delay, Delayed: delay >= s.delayedAfter}
		if retry {
			d.Retry = n.Attempts
		}
		due = append(due, d)
	}
	sortDue(due)
	return due
}

// Take marks the run of k due at scheduled as queued or in flight: Due no
// longer returns the node until Finish or Release.
func (s *Scheduler) Take(k NodeKey, scheduled time.Time) bool {
	n, ok := s.nodes[k]
	if !ok || n.Taken || !n.Next.Equal(scheduled) {
		return false
	}
	n.Taken = true
	return true
}

// TakeRetry marks the retry of k, due at its RetryAt, as queued.
func (s *Scheduler) TakeRetry(k NodeKey, scheduled time.Time) bool {
	n, ok := s.nodes[k]
	if !ok || !n.Taken || n.RetryAt.IsZero() || !n.Next.Equal(scheduled) {
		return false
	}
	n.RetryAt = time.Time{}
	return true
}

// Retry records a failed attempt of the taken run of k and plans its retry
// at at: the run stays taken (Due returns it again at at, as a retry).
func (s *Scheduler) Retry(k NodeKey, scheduled, at time.Time) bool {
	n, ok := s.nodes[k]
	if !ok || !n.Taken || !n.Next.Equal(scheduled) {
		return false
	}
	n.Attempts++
	n.RetryAt = at
	return true
}

// Release undoes Take (the dispatch could not be published): the same run
// is due again, with the same scheduled time and so the same ids.
func (s *Scheduler) Release(k NodeKey, scheduled time.Time) {
	if n, ok := s.nodes[k]; ok && n.Taken && n.Next.Equal(scheduled) {
		if n.Attempts > 0 {
			n.RetryAt = scheduled // a retry whose dispatch failed: due again
			return
		}
		n.Taken = false
	}
}

// Finish records that the run of k scheduled at scheduled ended at end
// with status and plans the next one at end + interval (seed 003: from the
// end of the run, not from the scheduled time). Missed runs are never
// replayed: there is only ever one run of a node pending. It reports false
// when the run is not the node's taken run (removed or re-planned).
func (s *Scheduler) Finish(k NodeKey, scheduled, end time.Time, status string) bool {
	n, ok := s.nodes[k]
	if !ok || !n.Taken || !n.Next.Equal(scheduled) {
		return false
	}
	n.Taken = false
	n.Attempts, n.RetryAt = 0, time.Time{}
	n.LastScheduled = scheduled
	n.LastRun = end
	n.LastStatus = status
	n.LastExecution = ExecutionID(k, scheduled)
	n.Next = end.Add(n.Spec.Interval()).Truncate(time.Millisecond)
	return true
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

// replanInterval keeps a pending first run, or a run already queued or in
// flight, as it is, and otherwise counts the new interval from the end of the
// last run; a run that the shorter interval makes overdue happens now, not
// in the past.
func replanInterval(n *Node, now time.Time) time.Time {
	if n.Taken || n.LastRun.IsZero() {
		return n.Next
	}
	next := n.LastRun.Add(n.Spec.Interval())
	if next.Before(now) {
		return now.Truncate(time.Millisecond)
	}
	return next
}

// Expedite makes k due at now when its last run was skipped and its next
// one is later (an OLT that answers again resumes at once); it reports
// whether it moved the node.
func (s *Scheduler) Expedite(k NodeKey, now time.Time) bool {
	n, ok := s.nodes[k]
	if !ok || n.Taken || n.LastStatus != statusSkipped || !n.Next.After(now) {
		return false
	}
	n.Next = now.Truncate(time.Millisecond)
	return true
}
