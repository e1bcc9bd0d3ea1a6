package planner

import (
	"sort"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func spec(interval, priority int) NodeSpec {
	return NodeSpec{JobName: "job", Kind: streams.KindGet, IntervalSeconds: interval, Priority: priority,
		OIDs: []streams.OIDSpec{{ID: "o1", OID: "1.3.6.1", Field: streams.FieldSerial}}}
}

// ran records one run of k scheduled at scheduled that ended at end.
func ran(s *Scheduler, k NodeKey, scheduled, end time.Time) {
	s.Take(k, scheduled)
	s.Finish(k, scheduled, end, "SUCCESS")
}

// sim is the planner's scheduling on a simulated clock: the scheduler, the
// per-OLT queues and pollers that take runFor to run a node.
type sim struct {
	s       *Scheduler
	q       *Queues
	runFor  func(NodeKey) time.Duration
	running map[string]time.Time // OLT -> end of the run in flight
	// dispatches are every dispatch in order (unless countOnly).
	dispatches []simDispatch
	count      int
	countOnly  bool
	// capacity, when set, is the pollers' slots per queue class: the sim
	// dispatches within it as the planner does (ReadyIn, PopIn).
	capacity map[string]int
}

// room is the free slots per class (nil: no limit).
func (m *sim) room() Room {
	if m.capacity == nil {
		return nil
	}
	r := Room{}
	for c, n := range m.capacity {
		r[c] = max(n-m.q.InFlightClass(c), 0)
	}
	return r
}

type simDispatch struct {
	d  DueNode
	at time.Time
}

func newSim(s *Scheduler, runFor func(NodeKey) time.Duration) *sim {
	return &sim{s: s, q: NewQueues(2 * time.Second), runFor: runFor, running: map[string]time.Time{}}
}

// step is one tick at now: runs that ended by now finish (and their OLT's
// next waiting node is dispatched at the end, as the finish event does),
// then due nodes are queued and free OLTs dispatched.
func (m *sim) step(now time.Time) {
	for {
		type ended struct {
			olt string
			end time.Time
		}
		var done []ended
		for o, e := range m.running {
			if !e.After(now) {
				done = append(done, ended{o, e})
			}
		}
		if len(done) == 0 {
			break
		}
		// Finish in end order, so a dispatch at an end can finish too.
		sort.Slice(done, func(i, j int) bool {
			if !done[i].end.Equal(done[j].end) {
				return done[i].end.Before(done[j].end)
			}
			return done[i].olt < done[j].olt
		})
		for _, d := range done {
			olt, end := d.olt, d.end
			delete(m.running, olt)
			f, _, ok := m.q.Finish(olt, "x", "SUCCESS", end)
			if !ok {
				panic("no flight on " + olt)
			}
			if !f.Manual {
				m.s.Finish(f.Key, f.ScheduledAt, end, "SUCCESS")
			}
			if m.capacity != nil {
				// The slot freed goes to the most urgent node of any free
				// OLT, this one's included (the planner's dispatchOLT).
				for _, d := range m.q.ReadyIn(end, m.room()) {
					m.dispatch(d, end)
				}
			} else if next, ok := m.q.Pop(olt, end); ok {
				m.dispatch(next, end)
			}
		}
	}
	for _, d := range m.s.Due(now) {
		if m.s.Take(d.Key, d.ScheduledAt) {
			m.q.Push(d)
		}
	}
	for _, d := range m.q.ReadyIn(now, m.room()) {
		m.dispatch(d, now)
	}
}

func (m *sim) dispatch(d DueNode, at time.Time) {
	m.q.Dispatched(d.Key.OLTID, "x")
	m.count++
	if !m.countOnly {
		m.dispatches = append(m.dispatches, simDispatch{d: d, at: at})
	}
	run := time.Duration(0)
	if m.runFor != nil {
		run = m.runFor(d.Key)
	}
	m.running[d.Key.OLTID] = at.Add(run)
}

// simulate runs the planner on a simulated clock from start to end in
// steps of tick and returns the scheduled times of every dispatch of k.
func simulate(s *Scheduler, k NodeKey, start, end time.Time, tick time.Duration, skip func(time.Time) bool, runFor time.Duration) []time.Time {
	m := newSim(s, func(NodeKey) time.Duration { return runFor })
	for now := start; now.Before(end); now = now.Add(tick) {
		if skip != nil && skip(now) {
			continue
		}
		m.step(now)
	}
	var runs []time.Time
	for _, d := range m.dispatches {
		if d.d.Key == k {
			runs = append(runs, d.d.ScheduledAt)
		}
	}
	return runs
}

func TestScheduleRuns(t *testing.T) {
	k := NodeKey{JobID: "j1", OLTID: "olt-a"}
	for _, tc := range []struct {
		name      string
		interval  int
		firstRun  time.Duration
		duration  time.Duration
		skip      func(time.Time) bool // ticks the planner missed (stalled)
		runFor    time.Duration        // how long each run takes
		wantRuns  int
		wantFirst time.Duration // offset of the first run from t0
		wantGap   time.Duration // between two scheduled times (default: the interval)
		check     func(t *testing.T, runs []time.Time)
	}{
		{name: "5-min node runs 12 times an hour", interval: 300, firstRun: 0, duration: time.Hour, wantRuns: 12, wantFirst: 0},
		{name: "first run after FirstRunDelay, no catch-up", interval: 300, firstRun: time.Minute, duration: time.Hour, wantRuns: 12, wantFirst: time.Minute},
		{name: "nothing before FirstRunDelay", interval: 10, firstRun: time.Minute, duration: 59 * time.Second, wantRuns: 0},
		// Seed 003: next_run_at = end of the run + interval.
		{name: "next run counts from the end of the run", interval: 60, runFor: 20 * time.Second, duration: 10 * time.Minute, wantRuns: 8, wantGap: 80 * time.Second},
		{name: "a run longer than the interval: no pile-up, no catch-up", interval: 60, runFor: 150 * time.Second, duration: 10 * time.Minute, wantRuns: 3, wantGap: 210 * time.Second},
		{
			name: "no catch-up after a gap", interval: 60, firstRun: 0, duration: 10 * time.Minute,
			// The planner stalls from minute 2 to minute 5 (exclusive).
			skip: func(now time.Time) bool {
				return !now.Before(t0.Add(2*time.Minute+30*time.Second)) && now.Before(t0.Add(5*time.Minute+30*time.Second))
			},
			// 0, 1, 2 min; the 3, 4, 5 min runs are missed; the run due at 3 min
			// fires late at 5:30 and the next is counted from there.
			wantRuns: 3 + 1 + 4, wantFirst: 0,
			check: func(t *testing.T, runs []time.Time) {
				late := runs[3]
				if !late.Equal(t0.Add(3 * time.Minute)) {
					t.Errorf("late run scheduled at %s, want the missed 3:00 slot once", late.Sub(t0))
				}
				if got, want := runs[4], t0.Add(6*time.Minute+30*time.Second); !got.Equal(want) {
					t.Errorf("run after the gap at %s, want now+interval %s", got.Sub(t0), want.Sub(t0))
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScheduler(tc.firstRun, 2*time.Second)
			s.Sync(map[NodeKey]Desired{k: {Spec: spec(tc.interval, 40), Since: t0}}, t0)
			runs := simulate(s, k, t0, t0.Add(tc.duration), time.Second, tc.skip, tc.runFor)
			if len(runs) != tc.wantRuns {
				t.Fatalf("runs = %d (%v), want %d", len(runs), offsets(runs), tc.wantRuns)
			}
			if len(runs) > 0 && !runs[0].Equal(t0.Add(tc.wantFirst)) {
				t.Errorf("first run at %s, want %s", runs[0].Sub(t0), tc.wantFirst)
			}
			wantGap := tc.wantGap
			if wantGap == 0 {
				wantGap = time.Duration(tc.interval) * time.Second
			}
			for i := 1; i < len(runs) && tc.skip == nil; i++ {
				if gap := runs[i].Sub(runs[i-1]); gap != wantGap {
					t.Errorf("gap %d = %s, want %s", i, gap, wantGap)
				}
			}
			if tc.check != nil {
				tc.check(t, runs)
			}
		})
	}
}

func offsets(ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, x := range ts {
		out[i] = x.Sub(t0)
	}
	return out
}

func TestSyncChanges(t *testing.T) {
	k := NodeKey{JobID: "j1", OLTID: "olt-a"}
	other := NodeKey{JobID: "j2", OLTID: "olt-a"}
	for _, tc := range []struct {
		name     string
		steps    func(s *Scheduler) []Change // returns the changes of the step under test
		wantKind []string
		check    func(t *testing.T, s *Scheduler)
	}{
		{
			name: "new node is added FirstRunDelay later",
			steps: func(s *Scheduler) []Change {
				return s.Sync(map[NodeKey]Desired{k: {Spec: spec(60, 40), Since: t0}}, t0)
			},
			wantKind: []string{streams.AuditTaskAdded},
			check: func(t *testing.T, s *Scheduler) {
				n, _ := s.Node(k)
				if !n.Next.Equal(t0.Add(time.Minute)) {
					t.Errorf("next = %s, want t0+1m", n.Next.Sub(t0))
				}
			},
		},
		{
			name: "disabled node is removed and never due again",
			steps: func(s *Scheduler) []Change {
				s.Sync(map[NodeKey]Desired{k: {Spec: spec(60, 40), Since: t0}, other: {Spec: spec(60, 40), Since: t0}}, t0)
				return s.Sync(map[NodeKey]Desired{other: {Spec: spec(60, 40), Since: t0}}, t0.Add(time.Second))
			},
			wantKind: []string{streams.AuditTaskRemoved},
			check: func(t *testing.T, s *Scheduler) {
				for _, d := range s.Due(t0.Add(time.Hour)) {
					if d.Key == k {
						t.Error("removed node is still due")
					}
				}
				if s.Len() != 1 {
					t.Errorf("len = %d, want 1", s.Len())
				}
			},
		},
		{
			name: "interval change re-plans from the last run",
			steps: func(s *Scheduler) []Change {
				s.Sync(map[NodeKey]Desired{k: {Spec: spec(600, 40), Since: t0}}, t0)
				ran(s, k, t0.Add(time.Minute), t0.Add(time.Minute))
				// next was t0+11m; with 120 s it is t0+1m+120s.
				return s.Sync(map[NodeKey]Desired{k: {Spec: spec(120, 40), Since: t0}}, t0.Add(2*time.Minute))
			},
			wantKind: []string{streams.AuditPlanAdjusted},
			check: func(t *testing.T, s *Scheduler) {
				n, _ := s.Node(k)
				if want := t0.Add(3 * time.Minute); !n.Next.Equal(want) {
					t.Errorf("next = %s, want %s", n.Next.Sub(t0), want.Sub(t0))
				}
			},
		},
		{
			name: "interval shortened below the time since the last run: due now",
			steps: func(s *Scheduler) []Change {
				s.Sync(map[NodeKey]Desired{k: {Spec: spec(600, 40), Since: t0}}, t0)
				ran(s, k, t0.Add(time.Minute), t0.Add(time.Minute))
				return s.Sync(map[NodeKey]Desired{k: {Spec: spec(60, 40), Since: t0}}, t0.Add(5*time.Minute))
			},
			wantKind: []string{streams.AuditPlanAdjusted},
			check: func(t *testing.T, s *Scheduler) {
				n, _ := s.Node(k)
				if want := t0.Add(5 * time.Minute); !n.Next.Equal(want) {
					t.Errorf("next = %s, want %s", n.Next.Sub(t0), want.Sub(t0))
				}
			},
		},
		{
			name: "interval change before the first run keeps the first run",
			steps: func(s *Scheduler) []Change {
				s.Sync(map[NodeKey]Desired{k: {Spec: spec(600, 40), Since: t0}}, t0)
				return s.Sync(map[NodeKey]Desired{k: {Spec: spec(120, 40), Since: t0}}, t0.Add(10*time.Second))
			},
			wantKind: []string{streams.AuditPlanAdjusted},
			check: func(t *testing.T, s *Scheduler) {
				n, _ := s.Node(k)
				if want := t0.Add(time.Minute); !n.Next.Equal(want) {
					t.Errorf("next = %s, want %s", n.Next.Sub(t0), want.Sub(t0))
				}
			},
		},
		{
			name: "other spec changes are silent",
			steps: func(s *Scheduler) []Change {
				s.Sync(map[NodeKey]Desired{k: {Spec: spec(60, 40), Since: t0}}, t0)
				return s.Sync(map[NodeKey]Desired{k: {Spec: spec(60, 90), Since: t0}}, t0.Add(time.Second))
			},
			check: func(t *testing.T, s *Scheduler) {
				if n, _ := s.Node(k); n.Spec.Priority != 90 {
					t.Errorf("priority = %d, want 90", n.Spec.Priority)
				}
			},
		},
		{
			name: "disabled and re-enabled between syncs starts over",
			steps: func(s *Scheduler) []Change {
				s.Sync(map[NodeKey]Desired{k: {Spec: spec(60, 40), Since: t0}}, t0)
				ran(s, k, t0.Add(time.Minute), t0.Add(time.Minute))
				return s.Sync(map[NodeKey]Desired{k: {Spec: spec(60, 40), Since: t0.Add(90 * time.Second)}}, t0.Add(90*time.Second))
			},
			wantKind: []string{streams.AuditTaskAdded},
			check: func(t *testing.T, s *Scheduler) {
				n, _ := s.Node(k)
				if want := t0.Add(150 * time.Second); !n.Next.Equal(want) {
					t.Errorf("next = %s, want %s", n.Next.Sub(t0), want.Sub(t0))
				}
			},
		},
		{
			name: "restored after a restart: next slot of the grid, no catch-up",
			steps: func(s *Scheduler) []Change {
				// Enabled at t0; the planner (re)starts at t0+10m30s.
				return s.Sync(map[NodeKey]Desired{k: {Spec: spec(300, 40), Since: t0}}, t0.Add(10*time.Minute+30*time.Second))
			},
			wantKind: []string{streams.AuditTaskAdded},
			check: func(t *testing.T, s *Scheduler) {
				n, _ := s.Node(k)
				// Grid: t0+1m, 6m, 11m, ...
				if want := t0.Add(11 * time.Minute); !n.Next.Equal(want) {
					t.Errorf("next = %s, want %s", n.Next.Sub(t0), want.Sub(t0))
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScheduler(time.Minute, 2*time.Second)
			changes := tc.steps(s)
			var kinds []string
			for _, c := range changes {
				kinds = append(kinds, c.Kind)
			}
			if len(kinds) != len(tc.wantKind) {
				t.Fatalf("changes = %v, want %v", kinds, tc.wantKind)
			}
			for i := range kinds {
				if kinds[i] != tc.wantKind[i] {
					t.Fatalf("changes = %v, want %v", kinds, tc.wantKind)
				}
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestDueOrder(t *testing.T) {
	s := NewScheduler(0, 2*time.Second)
	node := func(job string) NodeKey { return NodeKey{JobID: job, OLTID: "olt-a"} }
	// Since sets when each node is due (FirstRunDelay is 0).
	s.Sync(map[NodeKey]Desired{
		node("get-ontime"):       {Spec: spec(60, 40), Since: t0.Add(10 * time.Second)},
		node("disc-ontime"):      {Spec: spec(60, 90), Since: t0.Add(10 * time.Second)},
		node("get-late-30s"):     {Spec: spec(60, 40), Since: t0.Add(-20 * time.Second)},
		node("disc-late-5s"):     {Spec: spec(60, 90), Since: t0.Add(5 * time.Second)},
		node("get-late-5s"):      {Spec: spec(60, 40), Since: t0.Add(5 * time.Second)},
		node("disc-not-yet-due"): {Spec: spec(60, 90), Since: t0.Add(11 * time.Second)},
	}, t0.Add(-time.Minute))
	due := s.Due(t0.Add(10 * time.Second))
	want := []string{"get-late-30s", "disc-late-5s", "get-late-5s", "disc-ontime", "get-ontime"}
	if len(due) != len(want) {
		t.Fatalf("due = %d nodes, want %d", len(due), len(want))
	}
	for i, d := range due {
		if d.Key.JobID != want[i] {
			t.Errorf("due[%d] = %s, want %s", i, d.Key.JobID, want[i])
		}
	}
	if !due[0].Delayed || due[0].Delay != 30*time.Second || due[3].Delayed {
		t.Errorf("delay marks wrong: %+v / %+v", due[0], due[3])
	}
}

func TestDeterministicIDs(t *testing.T) {
	k := NodeKey{JobID: "j1", OLTID: "olt-a"}
	a, b := ExecutionID(k, t0), ExecutionID(k, t0)
	if a != b {
		t.Fatalf("execution id not deterministic: %s != %s", a, b)
	}
	if ExecutionID(k, t0.Add(time.Millisecond)) == a || ExecutionID(NodeKey{JobID: "j1", OLTID: "olt-b"}, t0) == a {
		t.Fatal("execution ids collide")
	}
}

// Discoveries says whether an OLT has a discovery node, whether one has not
// ended a run yet, and how the latest ended; it follows nodes added,
// removed and whose job changed kind.
func TestDiscoveries(t *testing.T) {
	s := NewScheduler(time.Minute, 2*time.Second)
	disc := spec(900, 90)
	disc.Kind = streams.KindDiscovery
	dk, ga, gb := NodeKey{JobID: "disc", OLTID: "olt-a"}, NodeKey{JobID: "get", OLTID: "olt-a"}, NodeKey{JobID: "get", OLTID: "olt-b"}
	desired := map[NodeKey]Desired{dk: {Spec: disc, Since: t0}, ga: {Spec: spec(300, 40), Since: t0}, gb: {Spec: spec(300, 40), Since: t0}}
	s.Sync(desired, t0)
	check := func(step, olt string, has, pending bool, status string) {
		t.Helper()
		h, p, _, st := s.Discoveries(olt)
		if h != has || p != pending || st != status {
			t.Fatalf("%s: Discoveries(%s) = %v %v %q, want %v %v %q", step, olt, h, p, st, has, pending, status)
		}
	}
	check("added", "olt-a", true, true, "")
	check("added", "olt-b", false, false, "")
	n, _ := s.Node(dk)
	if !s.Take(dk, n.Next) || !s.Finish(dk, n.Next, n.Next.Add(time.Second), "SUCCESS") {
		t.Fatal("take and finish the discovery")
	}
	check("first run ended", "olt-a", true, false, "SUCCESS")
	// The job becomes a get: no discovery left.
	changed := desired[dk]
	changed.Spec.Kind = streams.KindGet
	desired[dk] = changed
	s.Sync(desired, t0.Add(time.Hour))
	check("kind changed", "olt-a", false, false, "")
	// A discovery on olt-b, then removed.
	desired[NodeKey{JobID: "disc", OLTID: "olt-b"}] = Desired{Spec: disc, Since: t0.Add(2 * time.Hour)}
	s.Sync(desired, t0.Add(2*time.Hour))
	check("added to olt-b", "olt-b", true, true, "")
	delete(desired, NodeKey{JobID: "disc", OLTID: "olt-b"})
	s.Sync(desired, t0.Add(3*time.Hour))
	check("removed from olt-b", "olt-b", false, false, "")
}
