package planner

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// readyInBySort is ReadyIn as it was before the heap: every candidate
// copied and sorted. It is the oracle of TestReadyInEqualsSortedOrder and
// the baseline of BenchmarkReadyInBacklog.
func readyInBySort(q *Queues, now time.Time, room Room) []DueNode {
	type cand struct {
		olt string
		i   int
		d   DueNode
	}
	if n, limited := room[RoomTotal]; limited && n <= 0 {
		return nil
	}
	var cands []cand
	for olt, o := range q.olts {
		if o.flight != nil {
			continue
		}
		for i := range o.waiting {
			o.waiting[i] = q.aged(o.waiting[i], now)
			if !room.has(classOf(o.waiting[i])) {
				continue
			}
			if q.held(o.waiting[i], now) {
				continue
			}
			cands = append(cands, cand{olt: olt, i: i, d: o.waiting[i]})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i].d, cands[j].d
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
		return a.Key.String() < b.Key.String()
	})
	chosen := map[string]int{}
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

// backlog fills q with n OLTs of random waiting nodes: manual runs,
// retries, discoveries and gets of several priorities, late and on time,
// some sharing a scheduled time (so the key breaks the tie), a few OLTs
// busy.
func backlog(r *rand.Rand, q *Queues, n int, now time.Time) {
	for o := range n {
		olt := fmt.Sprintf("olt-%d", r.IntN(n*3)) // names out of order
		if _, dup := q.olts[olt]; dup {
			olt = fmt.Sprintf("olt-x%d", o)
		}
		for j := range 1 + r.IntN(4) {
			s := spec(300, []int{10, 40, 90}[r.IntN(3)])
			if r.IntN(3) == 0 {
				s = discSpec(3600)
			}
			d := DueNode{Key: NodeKey{JobID: fmt.Sprintf("job-%d", j), OLTID: olt}, Spec: s,
				ScheduledAt: now.Add(-time.Duration(r.IntN(40)) * time.Second)}
			switch r.IntN(12) {
			case 0:
				d.Manual, d.ExecutionID = true, fmt.Sprintf("m-%d-%d", o, j)
			case 1, 2:
				d.Retry = 1 + r.IntN(2)
			}
			q.Push(d)
		}
		if r.IntN(5) == 0 { // busy: its node in flight
			q.PopIn(olt, now, nil)
		}
	}
}

func dueKeys(ds []DueNode) string {
	keys := make([]string, len(ds))
	for i, d := range ds {
		keys[i] = fmt.Sprintf("%s/m%v/r%d", d.Key, d.Manual, d.Retry)
	}
	return strings.Join(keys, " ")
}

// The heap picks what the full sort picked, in the same order, and leaves
// the queues in the same state, whatever the room: no limit, a total,
// full classes, a hold rule.
func TestReadyInEqualsSortedOrder(t *testing.T) {
	rooms := []func() Room{
		func() Room { return nil },
		func() Room { return Room{RoomTotal: 7} },
		func() Room { return Room{RoomTotal: 50, streams.ClassDiscovery: 2, streams.ClassRetry: 1} },
		func() Room { return Room{streams.ClassPolling: 0, streams.ClassHigh: 3} },
		func() Room { return Room{RoomTotal: 0} },
	}
	for seed := range uint64(40) {
		for ri, mk := range rooms {
			now := t0.Add(time.Hour)
			fill := func() *Queues {
				q := NewQueues(10 * time.Second)
				if seed%3 == 0 {
					q.SetHold(func(d DueNode, _ time.Time) bool { return d.Key.JobID == "job-2" && d.Spec.Kind == streams.KindGet })
				}
				backlog(rand.New(rand.NewPCG(seed, 7)), q, 60, now)
				return q
			}
			a, b := fill(), fill()
			ra, rb := mk(), mk()
			for round := range 3 { // the queues after one call feed the next
				at := now.Add(time.Duration(round) * time.Second)
				got, want := a.ReadyIn(at, ra), readyInBySort(b, at, rb)
				if dueKeys(got) != dueKeys(want) {
					t.Fatalf("seed %d room %d round %d:\n got %s\nwant %s", seed, ri, round, dueKeys(got), dueKeys(want))
				}
				if fmt.Sprint(ra) != fmt.Sprint(rb) || a.Waiting() != b.Waiting() || a.InFlight() != b.InFlight() ||
					fmt.Sprint(a.WaitingByClass()) != fmt.Sprint(b.WaitingByClass()) {
					t.Fatalf("seed %d room %d round %d: room %v/%v waiting %d/%d in flight %d/%d", seed, ri, round, ra, rb,
						a.Waiting(), b.Waiting(), a.InFlight(), b.InFlight())
				}
				for olt, oa := range a.olts {
					ob := b.olts[olt]
					if dueKeys(oa.waiting) != dueKeys(ob.waiting) || (oa.flight == nil) != (ob.flight == nil) ||
						(oa.flight != nil && oa.flight.Key != ob.flight.Key) {
						t.Fatalf("seed %d room %d round %d: olt %s differs", seed, ri, round, olt)
					}
				}
				if ra == nil {
					ra, rb = mk(), mk()
				}
			}
		}
	}
}

func TestKeyLessIsStringOrder(t *testing.T) {
	names := []string{"", "a", "ab", "a@", "a@b", "b", "job-1", "job-10", "job", "olt-1", "olt-1@x", "@", "Z", "é"}
	for _, j1 := range names {
		for _, o1 := range names {
			for _, j2 := range names {
				for _, o2 := range names {
					a, b := NodeKey{JobID: j1, OLTID: o1}, NodeKey{JobID: j2, OLTID: o2}
					if got, want := keyLess(a, b), a.String() < b.String(); got != want {
						t.Fatalf("keyLess(%q, %q) = %v, want %v", a, b, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkReadyInBacklog: a fleet's backlog (5,000 OLTs, 1-4 waiting
// nodes each) and 8 free slots, the case of a box that has fallen behind:
// each dispatch round by the heap against the sort it replaced, in the
// same run. Compare the two ns/op (printed, not asserted).
//
//	go test -run '^$' -bench ReadyInBacklog ./services/planner/
func BenchmarkReadyInBacklog(b *testing.B) {
	for _, impl := range []struct {
		name  string
		ready func(q *Queues, now time.Time, room Room) []DueNode
	}{
		{"sort", readyInBySort},
		{"heap", (*Queues).ReadyIn},
	} {
		b.Run(impl.name, func(b *testing.B) {
			now := t0.Add(time.Hour)
			q := NewQueues(10 * time.Second)
			backlog(rand.New(rand.NewPCG(1, 2)), q, 5000, now)
			b.ResetTimer()
			for range b.N {
				got := impl.ready(q, now, Room{RoomTotal: 8})
				b.StopTimer()
				for _, d := range got { // back in the queue, as the next round's
					o := q.olts[d.Key.OLTID]
					q.classFlights[o.flight.Class]--
					q.inFlight--
					o.flight = nil
					d.ScheduledAt = d.ScheduledAt.Add(time.Millisecond)
					q.Push(d)
				}
				b.StartTimer()
			}
		})
	}
}

// snapshotBySort is how the queue report found its next nodes before
// Next: every waiting node copied and sorted. Oracle and baseline.
func snapshotBySort(q *Queues, now time.Time) []DueNode {
	out := make([]DueNode, 0, q.waiting)
	for _, o := range q.olts {
		for _, d := range o.waiting {
			out = append(out, q.aged(d, now))
		}
	}
	sortDue(out)
	return out
}

// Next is the head of the whole queue sorted, and visits every waiting
// node once.
func TestNextIsTheHeadOfTheSortedQueue(t *testing.T) {
	for seed := range uint64(20) {
		q := NewQueues(10 * time.Second)
		now := t0.Add(time.Hour)
		backlog(rand.New(rand.NewPCG(seed, 3)), q, 80, now)
		all := snapshotBySort(q, now)
		for _, k := range []int{0, 1, 10, len(all), len(all) + 5} {
			seen := 0
			got := q.Next(now, k, func(DueNode) { seen++ })
			want := all[:min(k, len(all))]
			if dueKeys(got) != dueKeys(want) || seen != q.Waiting() || len(all) != q.Waiting() {
				t.Fatalf("seed %d k %d: got %s\nwant %s (visited %d of %d)", seed, k, dueKeys(got), dueKeys(want), seen, q.Waiting())
			}
			for i := range got {
				if got[i].Delay != want[i].Delay || got[i].Delayed != want[i].Delayed {
					t.Fatalf("seed %d k %d: node %d aged %v/%v, want %v/%v", seed, k, i, got[i].Delay, got[i].Delayed, want[i].Delay, want[i].Delayed)
				}
			}
		}
	}
}

// BenchmarkQueueReportBacklog: the queue report the planner writes every
// tick, over 5,000 OLTs' backlog: its next nodes by sorting every waiting
// node (before) against Next (now), and the whole report before and now,
// in one run.
//
//	go test -run '^$' -bench QueueReportBacklog ./services/planner/
func BenchmarkQueueReportBacklog(b *testing.B) {
	now := t0.Add(time.Hour)
	q := NewQueues(10 * time.Second)
	backlog(rand.New(rand.NewPCG(1, 2)), q, 5000, now)
	b.Run("sort", func(b *testing.B) {
		for range b.N {
			_ = snapshotBySort(q, now)[:10]
		}
	})
	b.Run("next", func(b *testing.B) {
		for range b.N {
			_ = q.Next(now, 10, nil)
		}
	})
	b.Run("report-before", func(b *testing.B) {
		for range b.N {
			_ = reportBySort(q, 20_000, now, overloadAt(20_000))
		}
	})
	b.Run("report", func(b *testing.B) {
		for range b.N {
			_ = Report(q, 20_000, now, overloadAt(20_000))
		}
	})
}

// reportBySort is the queue report as it was built before Next and the
// counters (every waiting node sorted, maps counted): the oracle of
// TestReportEqualsTheSortedReport.
func reportBySort(q *Queues, planned int, now time.Time, overloadAt int) streams.QueueReport {
	waiting := snapshotBySort(q, now)
	r := streams.QueueReport{GeneratedAt: now.UTC(), Size: len(waiting), InFlight: q.InFlight(), Planned: planned,
		NextNodes: []streams.QueuedNode{}, Delayed: map[string]int{}, DelayedClass: map[string]map[string]int{}, DelayedOLT: map[string]map[string]int{}}
	for _, b := range lateBuckets {
		r.Delayed[b.name] = 0
	}
	for _, c := range []string{classDiscovery, classPolling, classRetry, classHigh} {
		r.DelayedClass[c] = map[string]int{}
		for _, b := range lateBuckets {
			r.DelayedClass[c][b.name] = 0
		}
	}
	perOLT := map[string]map[string]int{}
	for i, d := range waiting {
		class := classOf(d)
		if i < 10 {
			r.NextNodes = append(r.NextNodes, streams.QueuedNode{NodeID: d.Key.NodeID(), OLTID: d.Key.OLTID, JobID: d.Key.JobID,
				DueAt: d.ScheduledAt.UTC(), DelaySeconds: d.Delay.Seconds(), Priority: d.Spec.Priority, Class: class})
		}
		for _, b := range lateBuckets {
			if d.Delay <= b.d {
				break
			}
			r.Delayed[b.name]++
			r.DelayedClass[class][b.name]++
			if perOLT[d.Key.OLTID] == nil {
				perOLT[d.Key.OLTID] = map[string]int{}
			}
			perOLT[d.Key.OLTID][b.name]++
		}
	}
	olts := make([]string, 0, len(perOLT))
	for o := range perOLT {
		olts = append(olts, o)
	}
	sort.Slice(olts, func(i, j int) bool {
		a, b := perOLT[olts[i]]["5s"], perOLT[olts[j]]["5s"]
		if a != b {
			return a > b
		}
		return olts[i] < olts[j]
	})
	for _, o := range olts[:min(len(olts), 100)] {
		r.DelayedOLT[o] = perOLT[o]
	}
	r.IsOverload = r.Delayed["5s"] > overloadAt
	return r
}

func TestReportEqualsTheSortedReport(t *testing.T) {
	for seed := range uint64(20) {
		q := NewQueues(10 * time.Second)
		now := t0.Add(time.Hour)
		backlog(rand.New(rand.NewPCG(seed, 5)), q, 50+int(seed)*20, now)
		for _, at := range []time.Time{now.Add(-time.Minute), now, now.Add(10 * time.Minute)} {
			got, err := json.Marshal(Report(q, 500, at, overloadAt(500)))
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(reportBySort(q, 500, at, overloadAt(500)))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("seed %d at %s:\n got %s\nwant %s", seed, at, got, want)
			}
		}
	}
}
