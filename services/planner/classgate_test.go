package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

func discSpec(interval int) NodeSpec {
	s := spec(interval, 90)
	s.Kind = streams.KindDiscovery
	return s
}

// The dispatch rule with class capacity, on a simulated clock: a node is
// dispatched only into a free slot of its class; a full class holds back
// neither another OLT nor another class (the OLT's next node of a class
// with room goes instead), and the freed slot goes to the most urgent
// node of its class on any free OLT.
func TestClassCapacityDispatch(t *testing.T) {
	node := func(job, olt string) NodeKey { return NodeKey{JobID: job, OLTID: olt} }
	for _, tc := range []struct {
		name     string
		nodes    map[NodeKey]Desired
		runFor   map[string]time.Duration // by OLT
		capacity map[string]int
		until    time.Duration
		want     []string
	}{
		{
			name: "a full discovery class does not hold back the get of the same OLT",
			nodes: map[NodeKey]Desired{
				node("disc", "olt-a"): {Spec: discSpec(3600), Since: t0},
				node("disc", "olt-b"): {Spec: discSpec(3600), Since: t0},
				node("get", "olt-b"):  {Spec: spec(3600, 40), Since: t0},
			},
			runFor:   map[string]time.Duration{"olt-a": time.Minute, "olt-b": time.Second},
			capacity: map[string]int{streams.ClassDiscovery: 1, streams.ClassPolling: 5},
			until:    2 * time.Minute,
			// Without capacity the discovery of olt-b would be dispatched
			// at 0, wait for olt-a's to end, and its get at 61 s.
			want: []string{"disc@olt-a +0s", "get@olt-b +0s", "disc@olt-b +1m0s"},
		},
		{
			name: "the freed slot goes to the most delayed node of its class on any OLT",
			nodes: map[NodeKey]Desired{
				node("disc", "olt-c"): {Spec: discSpec(3600), Since: t0.Add(2 * time.Second)},
				node("disc", "olt-a"): {Spec: discSpec(3600), Since: t0},
				node("disc", "olt-b"): {Spec: discSpec(3600), Since: t0.Add(time.Second)},
			},
			runFor:   map[string]time.Duration{"olt-a": 10 * time.Second, "olt-b": 10 * time.Second, "olt-c": 10 * time.Second},
			capacity: map[string]int{streams.ClassDiscovery: 1},
			until:    time.Minute,
			want:     []string{"disc@olt-a +0s", "disc@olt-b +10s", "disc@olt-c +20s"},
		},
		{
			name: "two slots: two discoveries at once, the third waits in the planner",
			nodes: map[NodeKey]Desired{
				node("disc", "olt-a"): {Spec: discSpec(3600), Since: t0},
				node("disc", "olt-b"): {Spec: discSpec(3600), Since: t0},
				node("disc", "olt-c"): {Spec: discSpec(3600), Since: t0},
				node("get", "olt-d"):  {Spec: spec(3600, 40), Since: t0},
			},
			runFor:   map[string]time.Duration{"olt-a": 5 * time.Second, "olt-b": 8 * time.Second, "olt-c": time.Second, "olt-d": time.Second},
			capacity: map[string]int{streams.ClassDiscovery: 2, streams.ClassPolling: 1},
			until:    time.Minute,
			want:     []string{"disc@olt-a +0s", "disc@olt-b +0s", "get@olt-d +0s", "disc@olt-c +5s"},
		},
		{
			name: "a class no poller reports is not limited (capacity unknown)",
			nodes: map[NodeKey]Desired{
				node("disc", "olt-a"): {Spec: discSpec(3600), Since: t0},
				node("disc", "olt-b"): {Spec: discSpec(3600), Since: t0},
			},
			runFor:   map[string]time.Duration{"olt-a": 5 * time.Second, "olt-b": 5 * time.Second},
			capacity: map[string]int{streams.ClassPolling: 1},
			until:    time.Minute,
			want:     []string{"disc@olt-a +0s", "disc@olt-b +0s"},
		},
		{
			name: "a get of a full polling class waits while the OLT's discovery goes",
			nodes: map[NodeKey]Desired{
				node("get", "olt-a"):  {Spec: spec(3600, 40), Since: t0},
				node("get", "olt-b"):  {Spec: spec(3600, 40), Since: t0.Add(time.Second)},
				node("disc", "olt-b"): {Spec: discSpec(3600), Since: t0.Add(time.Second)},
			},
			runFor:   map[string]time.Duration{"olt-a": 10 * time.Second, "olt-b": 3 * time.Second},
			capacity: map[string]int{streams.ClassDiscovery: 1, streams.ClassPolling: 1},
			until:    time.Minute,
			want:     []string{"get@olt-a +0s", "disc@olt-b +1s", "get@olt-b +10s"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScheduler(0, 2*time.Second)
			s.Sync(tc.nodes, t0)
			m := newSim(s, func(k NodeKey) time.Duration { return tc.runFor[k.OLTID] })
			m.capacity = tc.capacity
			for now := t0; !now.After(t0.Add(tc.until)); now = now.Add(100 * time.Millisecond) {
				m.step(now)
				for c, n := range tc.capacity {
					if got := m.q.InFlightClass(c); got > n {
						t.Fatalf("at +%s: %d %s nodes dispatched, capacity %d", now.Sub(t0), got, c, n)
					}
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

// Room and the per-class flight counts through pop, unpop, restore and
// abandon.
func TestRoomAndClassFlights(t *testing.T) {
	disc := DueNode{Key: NodeKey{JobID: "d", OLTID: "olt-a"}, Spec: discSpec(60), ScheduledAt: t0}
	get := DueNode{Key: NodeKey{JobID: "g", OLTID: "olt-a"}, Spec: spec(60, 40), ScheduledAt: t0}
	retry := DueNode{Key: NodeKey{JobID: "d", OLTID: "olt-b"}, Spec: discSpec(60), ScheduledAt: t0, Retry: 1}
	for _, tc := range []struct {
		name  string
		steps func(t *testing.T, q *Queues)
	}{
		{"no room for the OLT's best node: its next of a class with room", func(t *testing.T, q *Queues) {
			q.Push(disc)
			q.Push(get)
			r := Room{streams.ClassDiscovery: 0, streams.ClassPolling: 1}
			d, ok := q.PopIn("olt-a", t0, r)
			if !ok || d.Key != get.Key || r[streams.ClassPolling] != 0 {
				t.Fatalf("popped %v %v, room %v", d.Key, ok, r)
			}
			if q.InFlightClass(streams.ClassPolling) != 1 || q.Waiting() != 1 {
				t.Fatalf("polling flights %d, waiting %d", q.InFlightClass(streams.ClassPolling), q.Waiting())
			}
		}},
		{"no room at all: nothing popped, nothing lost", func(t *testing.T, q *Queues) {
			q.Push(disc)
			if _, ok := q.PopIn("olt-a", t0, Room{streams.ClassDiscovery: 0}); ok {
				t.Fatal("popped into a full class")
			}
			if r := q.ReadyIn(t0, Room{streams.ClassDiscovery: 0}); len(r) != 0 || q.Waiting() != 1 {
				t.Fatalf("ready %v, waiting %d", r, q.Waiting())
			}
		}},
		{"the total bound holds every class", func(t *testing.T, q *Queues) {
			q.Push(disc)
			q.Push(DueNode{Key: NodeKey{JobID: "g", OLTID: "olt-c"}, Spec: spec(60, 40), ScheduledAt: t0})
			r := Room{RoomTotal: 1, streams.ClassDiscovery: 1, streams.ClassPolling: 1}
			if got := q.ReadyIn(t0, r); len(got) != 1 || got[0].Key != disc.Key || r[RoomTotal] != 0 {
				t.Fatalf("ready %v, room %v: want only the discovery (most urgent) within a total of 1", got, r)
			}
			if _, ok := q.PopIn("olt-c", t0, r); ok {
				t.Fatal("popped past the total")
			}
		}},
		{"a retry counts in the retry class", func(t *testing.T, q *Queues) {
			q.Push(retry)
			if r := q.ReadyIn(t0, Room{streams.ClassDiscovery: 0, streams.ClassRetry: 1}); len(r) != 1 {
				t.Fatalf("ready %v", r)
			}
			if q.InFlightClass(streams.ClassRetry) != 1 || q.InFlightClass(streams.ClassDiscovery) != 0 {
				t.Fatalf("retry %d discovery %d", q.InFlightClass(streams.ClassRetry), q.InFlightClass(streams.ClassDiscovery))
			}
		}},
		{"unpop and abandon give the slot back", func(t *testing.T, q *Queues) {
			q.Push(disc)
			d, _ := q.PopIn("olt-a", t0, nil)
			q.Unpop(d)
			if q.InFlightClass(streams.ClassDiscovery) != 0 {
				t.Fatalf("discovery flights %d after unpop", q.InFlightClass(streams.ClassDiscovery))
			}
			q.PopIn("olt-a", t0, nil)
			q.Dispatched("olt-a", "e1")
			q.Abandon("olt-a")
			if q.InFlightClass(streams.ClassDiscovery) != 0 || q.InFlight() != 0 {
				t.Fatalf("discovery flights %d after abandon", q.InFlightClass(streams.ClassDiscovery))
			}
		}},
		{"a restored flight counts in its class until it ends", func(t *testing.T, q *Queues) {
			q.SetFlight(Flight{Key: disc.Key, Class: streams.ClassDiscovery, ScheduledAt: t0}, []string{"e1"})
			if q.InFlightClass(streams.ClassDiscovery) != 1 {
				t.Fatalf("discovery flights %d", q.InFlightClass(streams.ClassDiscovery))
			}
			if _, done, ok := q.Finish("olt-a", "e1", "SUCCESS", t0); !ok || !done || q.InFlightClass(streams.ClassDiscovery) != 0 {
				t.Fatalf("finish %v %v, discovery flights %d", done, ok, q.InFlightClass(streams.ClassDiscovery))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.steps(t, NewQueues(2*time.Second)) })
	}
}

// The poller processes' capacity per class: live processes only (an
// expired one is gone even without a deletion), slots of no class ignored.
func TestPollerViewClassSlots(t *testing.T) {
	slots := func(busy int, classes ...string) []streams.PollerState {
		var out []streams.PollerState
		for i, c := range classes {
			st := streams.PollerFree
			if i < busy {
				st = streams.PollerBusy
			}
			out = append(out, streams.PollerState{Slot: i, Class: c, Status: st})
		}
		return out
	}
	for _, tc := range []struct {
		name              string
		updates           []pollerUpdate
		wantCap, wantBusy map[string]int
		wantTotal         int
	}{
		{"two processes add up", []pollerUpdate{
			{Key: "p1", Proc: streams.PollerProcess{UpdatedAt: t0, Pollers: slots(1, "discovery", "discovery", "polling")}},
			{Key: "p2", Proc: streams.PollerProcess{UpdatedAt: t0, Pollers: slots(0, "discovery", "polling")}},
		}, map[string]int{"discovery": 3, "polling": 2}, map[string]int{"discovery": 1}, 5},
		{"a process's workers cap its share of the total", []pollerUpdate{
			{Key: "p1", Proc: streams.PollerProcess{UpdatedAt: t0, Workers: 1, Pollers: slots(0, "discovery", "polling", "polling")}},
			{Key: "p2", Proc: streams.PollerProcess{UpdatedAt: t0, Workers: 5, Pollers: slots(0, "discovery", "polling")}},
		}, map[string]int{"discovery": 2, "polling": 3}, map[string]int{}, 3},
		{"a deleted process leaves", []pollerUpdate{
			{Key: "p1", Proc: streams.PollerProcess{UpdatedAt: t0, Pollers: slots(0, "discovery")}},
			{Key: "p1", Gone: true},
		}, map[string]int{}, map[string]int{}, 0},
		{"an expired process leaves", []pollerUpdate{
			{Key: "p1", Proc: streams.PollerProcess{UpdatedAt: t0.Add(-time.Minute), Pollers: slots(0, "discovery")}},
			{Key: "p2", Proc: streams.PollerProcess{UpdatedAt: t0, Pollers: slots(0, "polling")}},
		}, map[string]int{"polling": 1}, map[string]int{}, 1},
		{"slots without a class are not capacity", []pollerUpdate{
			{Key: "p1", Proc: streams.PollerProcess{UpdatedAt: t0, Pollers: slots(1, "", "")}},
		}, map[string]int{}, map[string]int{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newPollerView()
			v.apply(pollerUpdate{TTL: 30 * time.Second})
			for _, u := range tc.updates {
				v.apply(u)
			}
			c, b, total := v.classSlots(t0)
			if fmt.Sprint(c) != fmt.Sprint(tc.wantCap) || fmt.Sprint(b) != fmt.Sprint(tc.wantBusy) || total != tc.wantTotal {
				t.Fatalf("capacity %v busy %v total %d, want %v %v %d", c, b, total, tc.wantCap, tc.wantBusy, tc.wantTotal)
			}
		})
	}
}

// The per-class backlog of the queue report: waiting in the planner plus
// dispatched and not taken, saturation and overload of the fullest class.
func TestAddClasses(t *testing.T) {
	q := NewQueues(2 * time.Second)
	now := t0.Add(time.Minute)
	// Discovery: 2 slots, both dispatched, one running; one more waiting
	// (late by a minute). Polling: capacity unknown, one waiting on time.
	for i, olt := range []string{"a", "b"} {
		q.Push(DueNode{Key: NodeKey{JobID: "d", OLTID: olt}, Spec: discSpec(60), ScheduledAt: t0.Add(time.Duration(i) * time.Second)})
	}
	q.ReadyIn(now, nil)
	q.Push(DueNode{Key: NodeKey{JobID: "d", OLTID: "c"}, Spec: discSpec(60), ScheduledAt: t0})
	q.Push(DueNode{Key: NodeKey{JobID: "g", OLTID: "d"}, Spec: spec(60, 40), ScheduledAt: now})
	r := Report(q, 4, now, overloadAt(4))
	if r.IsOverload {
		t.Fatal("overloaded before the classes: one late node is under the threshold")
	}
	AddClasses(&r, q, map[string]int{streams.ClassDiscovery: 2}, map[string]int{streams.ClassDiscovery: 1}, overloadAt(4))
	d, p := r.Classes[streams.ClassDiscovery], r.Classes[streams.ClassPolling]
	if d.Waiting != 1 || d.Dispatched != 2 || d.Running != 1 || d.DispatchedWaiting != 1 || d.Size != 2 || d.Late != 1 ||
		d.Capacity == nil || *d.Capacity != 2 || *d.Free != 0 || !d.IsSaturated || !d.IsOverload {
		t.Fatalf("discovery %+v", d)
	}
	if p.Waiting != 1 || p.Size != 1 || p.Capacity != nil || p.Free != nil || p.IsSaturated || p.IsOverload {
		t.Fatalf("polling %+v", p)
	}
	if r.Waiting != 2 || r.DispatchedWaiting != 1 || r.Size != 3 || !r.IsOverload {
		t.Fatalf("totals waiting %d dispatched_waiting %d size %d overload %v", r.Waiting, r.DispatchedWaiting, r.Size, r.IsOverload)
	}
}
