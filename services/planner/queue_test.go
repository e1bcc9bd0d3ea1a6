package planner

import (
	"fmt"
	"testing"
	"time"
)

// The per-OLT queue rules on a simulated clock.
func TestOneNodePerOLTAndFinishDrivenDispatch(t *testing.T) {
	node := func(job, olt string) NodeKey { return NodeKey{JobID: job, OLTID: olt} }
	for _, tc := range []struct {
		name  string
		nodes map[NodeKey]Desired
		// runFor is how long each job runs.
		runFor map[string]time.Duration
		until  time.Duration
		// want is the dispatches as "job@olt +offset" in order.
		want []string
	}{
		{
			name: "discovery before get when both are due on time; get starts when discovery ends",
			nodes: map[NodeKey]Desired{
				node("get", "olt-a"):  {Spec: spec(3600, 40), Since: t0},
				node("disc", "olt-a"): {Spec: spec(3600, 90), Since: t0},
			},
			runFor: map[string]time.Duration{"disc": 42 * time.Second, "get": 5 * time.Second},
			until:  time.Minute,
			want:   []string{"disc@olt-a +0s", "get@olt-a +42s"},
		},
		{
			name: "a delayed node goes before an on-time one of higher priority",
			nodes: map[NodeKey]Desired{
				node("walk", "olt-a"): {Spec: spec(3600, 90), Since: t0},                       // runs 0..30s
				node("get", "olt-a"):  {Spec: spec(3600, 40), Since: t0.Add(time.Second)},      // due 1s, waits 29s: delayed
				node("disc", "olt-a"): {Spec: spec(3600, 90), Since: t0.Add(30 * time.Second)}, // due 30s, on time
			},
			runFor: map[string]time.Duration{"walk": 30 * time.Second, "get": time.Second, "disc": time.Second},
			until:  time.Minute,
			want:   []string{"walk@olt-a +0s", "get@olt-a +30s", "disc@olt-a +31s"},
		},
		{
			name: "the most delayed first",
			nodes: map[NodeKey]Desired{
				node("walk", "olt-a"):  {Spec: spec(3600, 90), Since: t0},
				node("get-b", "olt-a"): {Spec: spec(3600, 40), Since: t0.Add(10 * time.Second)},
				node("get-a", "olt-a"): {Spec: spec(3600, 40), Since: t0.Add(5 * time.Second)},
			},
			runFor: map[string]time.Duration{"walk": 30 * time.Second, "get-a": time.Second, "get-b": time.Second},
			until:  time.Minute,
			want:   []string{"walk@olt-a +0s", "get-a@olt-a +30s", "get-b@olt-a +31s"},
		},
		{
			name: "OLTs are independent",
			nodes: map[NodeKey]Desired{
				node("disc", "olt-a"): {Spec: spec(3600, 90), Since: t0},
				node("get", "olt-a"):  {Spec: spec(3600, 40), Since: t0},
				node("get", "olt-b"):  {Spec: spec(3600, 40), Since: t0},
			},
			runFor: map[string]time.Duration{"disc": 10 * time.Second, "get": time.Second},
			until:  time.Minute,
			want:   []string{"disc@olt-a +0s", "get@olt-b +0s", "get@olt-a +10s"},
		},
		{
			name: "a node never waits twice in its own queue: no pile-up behind a long run",
			nodes: map[NodeKey]Desired{
				node("walk", "olt-a"): {Spec: spec(3600, 90), Since: t0},
				node("get", "olt-a"):  {Spec: spec(10, 40), Since: t0.Add(time.Second)},
			},
			runFor: map[string]time.Duration{"walk": 100 * time.Second, "get": 0},
			until:  125 * time.Second,
			// get waits 99 s once, runs at 100 s, then every 10 s from its end.
			want: []string{"walk@olt-a +0s", "get@olt-a +1m40s", "get@olt-a +1m50s", "get@olt-a +2m0s"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScheduler(0, 2*time.Second)
			s.Sync(tc.nodes, t0)
			m := newSim(s, func(k NodeKey) time.Duration { return tc.runFor[k.JobID] })
			for now := t0; !now.After(t0.Add(tc.until)); now = now.Add(100 * time.Millisecond) {
				m.step(now)
				if m.q.InFlight() > len(m.running) {
					t.Fatalf("%d flights, %d runs", m.q.InFlight(), len(m.running))
				}
			}
			var got []string
			for _, d := range m.dispatches {
				got = append(got, fmt.Sprintf("%s +%s", d.d.Key, d.at.Sub(t0)))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("dispatches\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestQueueOperations(t *testing.T) {
	a1 := DueNode{Key: NodeKey{JobID: "j1", OLTID: "olt-a"}, Spec: spec(60, 40), ScheduledAt: t0}
	a2 := DueNode{Key: NodeKey{JobID: "j2", OLTID: "olt-a"}, Spec: spec(60, 90), ScheduledAt: t0}
	for _, tc := range []struct {
		name  string
		steps func(t *testing.T, q *Queues)
	}{
		{"a second node of a busy OLT waits", func(t *testing.T, q *Queues) {
			q.Push(a1)
			q.Push(a2)
			if r := q.Ready(t0); len(r) != 1 || r[0].Key != a2.Key {
				t.Fatalf("ready %v, want only the discovery", r)
			}
			q.Dispatched("olt-a", "e2")
			if r := q.Ready(t0.Add(time.Second)); len(r) != 0 {
				t.Fatalf("ready %v while the OLT is busy", r)
			}
			if q.Waiting() != 1 || q.InFlight() != 1 {
				t.Fatalf("waiting %d, in flight %d", q.Waiting(), q.InFlight())
			}
		}},
		{"the finish of another execution does not free the OLT", func(t *testing.T, q *Queues) {
			q.Push(a1)
			q.Ready(t0)
			q.Dispatched("olt-a", "e1")
			if _, _, ok := q.Finish("olt-a", "other", "SUCCESS", t0); ok {
				t.Fatal("finished by a foreign execution")
			}
			if _, _, ok := q.Finish("olt-b", "e1", "SUCCESS", t0); ok {
				t.Fatal("finished on another OLT")
			}
			f, done, ok := q.Finish("olt-a", "e1", "SUCCESS", t0.Add(time.Second))
			if !ok || !done || f.MasterStatus != "SUCCESS" || !f.End.Equal(t0.Add(time.Second)) || f.Key != a1.Key || !f.ScheduledAt.Equal(t0) {
				t.Fatalf("finish = %+v, %v", f, ok)
			}
			if q.InFlight() != 0 || len(q.olts) != 0 {
				t.Fatalf("in flight %d, olts %d after the finish", q.InFlight(), len(q.olts))
			}
		}},
		{"a failed dispatch goes back first", func(t *testing.T, q *Queues) {
			q.Push(a1)
			q.Push(a2)
			d, _ := q.Pop("olt-a", t0)
			q.Unpop(d)
			if q.InFlight() != 0 || q.Waiting() != 2 {
				t.Fatalf("in flight %d, waiting %d", q.InFlight(), q.Waiting())
			}
			if d2, _ := q.Pop("olt-a", t0); d2.Key != d.Key {
				t.Fatalf("popped %s after unpop, want %s", d2.Key, d.Key)
			}
		}},
		{"a dropped node leaves the queue", func(t *testing.T, q *Queues) {
			q.Push(a1)
			q.Push(a2)
			q.Ready(t0)
			if d := q.Drop(a1.Key); len(d) != 1 {
				t.Fatalf("dropped %v", d)
			}
			if q.Waiting() != 0 {
				t.Fatalf("waiting %d", q.Waiting())
			}
		}},
		{"a manual run goes before a delayed node", func(t *testing.T, q *Queues) {
			late := a1
			late.ScheduledAt = t0.Add(-time.Hour)
			manual := a2
			manual.Manual = true
			manual.ScheduledAt = t0
			q.Push(late)
			q.Push(manual)
			if d, _ := q.Pop("olt-a", t0); !d.Manual {
				t.Fatalf("popped %+v, want the manual run", d)
			}
		}},
		{"a flight without a terminal event is stuck after its cutoff", func(t *testing.T, q *Queues) {
			q.Push(a1)
			q.Ready(t0)
			q.Dispatched("olt-a", "e1")
			cutoff := func(Flight) time.Time { return t0.Add(time.Minute) }
			if s := q.Stuck(func(Flight) time.Time { return t0 }, t0); len(s) != 0 {
				t.Fatalf("stuck %v at its dispatch", s)
			}
			if s := q.Stuck(cutoff, t0.Add(2*time.Minute)); len(s) != 1 || s[0].ExecutionID != "e1" {
				t.Fatalf("stuck %v", s)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.steps(t, NewQueues(2*time.Second)) })
	}
}

// Nodes that become plannable together (a job enabled on 1,000 OLTs) have
// their first runs spread over the following interval, deterministically.
func TestFirstRunsSpread(t *testing.T) {
	s := NewScheduler(time.Minute, 2*time.Second)
	s.SpreadFirstRuns(15 * time.Minute)
	desired := map[NodeKey]Desired{}
	for i := range 1000 {
		desired[NodeKey{JobID: "get", OLTID: fmt.Sprintf("olt-%d", i)}] = Desired{Spec: spec(300, 40), Since: t0}
	}
	s.Sync(desired, t0)
	perSecond := map[int64]int{}
	busiest := 0
	for k := range desired {
		n, _ := s.Node(k)
		off := n.Next.Sub(t0.Add(time.Minute))
		if off < 0 || off >= 300*time.Second {
			t.Fatalf("%s first runs %s after FirstRunDelay, want within the 300 s interval", k, off)
		}
		if off != FirstOffset(k, 300*time.Second, 15*time.Minute) {
			t.Fatalf("%s offset is not its deterministic one", k)
		}
		sec := n.Next.Unix()
		perSecond[sec]++
		busiest = max(busiest, perSecond[sec])
	}
	if len(perSecond) < 200 || busiest > 15 {
		t.Fatalf("1,000 first runs fall in %d distinct seconds, at most %d in one: not spread", len(perSecond), busiest)
	}
	if FirstOffset(NodeKey{JobID: "x", OLTID: "y"}, time.Hour, 0) != 0 {
		t.Fatal("a spread of 0 must give no offset")
	}
	// A node enabled alone first runs FirstRunDelay later, unspread.
	alone := NodeKey{JobID: "get", OLTID: "olt-new"}
	desired[alone] = Desired{Spec: spec(300, 40), Since: t0.Add(time.Hour)}
	s.Sync(desired, t0.Add(time.Hour))
	if n, _ := s.Node(alone); !n.Next.Equal(t0.Add(time.Hour + time.Minute)) {
		t.Fatalf("a node enabled alone first runs at %s, want FirstRunDelay later", n.Next.Sub(t0))
	}
}

// OLTs added one by one by a script (one every 100 ms, each synced as it
// comes) are a burst too: only the first, alone when it came, is unspread.
func TestFirstRunsSpreadOneByOne(t *testing.T) {
	s := NewScheduler(time.Minute, 2*time.Second)
	s.SpreadFirstRuns(15 * time.Minute)
	desired := map[NodeKey]Desired{}
	start := t0.Add(24 * time.Hour)
	perSecond := map[int64]int{}
	busiest := 0
	for i := range 1000 {
		k := NodeKey{JobID: "get", OLTID: fmt.Sprintf("olt-%d", i)}
		since := start.Add(time.Duration(i) * 100 * time.Millisecond)
		desired[k] = Desired{Spec: spec(300, 40), Since: since}
		s.Sync(desired, since)
		n, _ := s.Node(k)
		want := since.Add(time.Minute)
		if i > 0 {
			want = want.Add(FirstOffset(k, 300*time.Second, 15*time.Minute))
		}
		if !n.Next.Equal(want) {
			t.Fatalf("OLT %d of the burst first runs %s after it came, want %s", i, n.Next.Sub(since), want.Sub(since))
		}
		sec := n.Next.Unix()
		perSecond[sec]++
		busiest = max(busiest, perSecond[sec])
	}
	if busiest > 15 {
		t.Fatalf("at most %d first runs in one second: not spread", busiest)
	}
	// Much later, an OLT added alone is not spread.
	later := NodeKey{JobID: "get", OLTID: "olt-later"}
	since := start.Add(time.Hour)
	desired[later] = Desired{Spec: spec(300, 40), Since: since}
	s.Sync(desired, since)
	if n, _ := s.Node(later); !n.Next.Equal(since.Add(time.Minute)) {
		t.Fatalf("an OLT added alone first runs %s after it came, want FirstRunDelay", n.Next.Sub(since))
	}
}

func TestInBurst(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// Each since is of its own OLT unless the case says otherwise.
	others := func(ts ...time.Time) []oltSince {
		out := make([]oltSince, 0, len(ts))
		for i, t := range ts {
			out = append(out, oltSince{at: t, olt: fmt.Sprintf("olt-%d", i)})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		sinces []oltSince
		since  time.Time
		olt    string
		want   bool
	}{
		{"alone", others(at(0)), at(0), "olt-0", false},
		{"same event", others(at(0), at(0)), at(0), "olt-0", true},
		{"neighbour inside the window", others(at(0), at(59)), at(59), "olt-1", true},
		{"neighbour at the window's edge", others(at(0), at(60)), at(0), "olt-0", true},
		{"neighbour outside the window", others(at(0), at(61)), at(61), "olt-1", false},
		{"old fleet, new node", others(at(0), at(1), at(2), at(3600)), at(3600), "olt-3", false},
		{"a new OLT's jobs together", []oltSince{{at(0), "olt-a"}, {at(0), "olt-a"}, {at(1), "olt-a"}}, at(0), "olt-a", false},
		{"a new OLT's jobs and another OLT", []oltSince{{at(0), "olt-a"}, {at(0), "olt-a"}, {at(30), "olt-b"}}, at(0), "olt-a", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inBurst(tc.sinces, tc.since, tc.olt); got != tc.want {
				t.Fatalf("inBurst = %v, want %v", got, tc.want)
			}
		})
	}
}
