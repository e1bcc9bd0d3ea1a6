package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

func TestQueueReport(t *testing.T) {
	q := NewQueues(2 * time.Second)
	now := t0.Add(time.Hour)
	get := spec(60, 40)
	disc := spec(300, 90)
	disc.Kind = streams.KindDiscovery
	push := func(job, olt string, s NodeSpec, late time.Duration, mod func(*DueNode)) {
		d := DueNode{Key: NodeKey{JobID: job, OLTID: olt}, Spec: s, ScheduledAt: now.Add(-late)}
		if mod != nil {
			mod(&d)
		}
		q.Push(d)
	}
	// A busy OLT so that its other nodes wait.
	push("busy", "olt-a", get, 0, nil)
	q.Ready(now)
	q.Dispatched("olt-a", "x")
	push("get-1", "olt-a", get, 3*time.Second, nil)    // late < 5s: no bucket
	push("get-2", "olt-a", get, 7*time.Second, nil)    // > 5s
	push("disc-1", "olt-a", disc, 45*time.Second, nil) // > 5s, 10s, 30s
	push("disc-2", "olt-a", disc, 11*time.Minute, nil) // every bucket
	push("retry-1", "olt-a", get, 6*time.Minute, func(d *DueNode) { d.Retry = 1 })
	push("manual", "olt-a", get, time.Second, func(d *DueNode) { d.Manual = true })

	r := Report(q, 50, now, overloadAt(50))
	if r.Size != 6 || r.InFlight != 1 || r.Planned != 50 {
		t.Fatalf("size %d in flight %d planned %d", r.Size, r.InFlight, r.Planned)
	}
	var next []string
	for _, n := range r.NextNodes {
		next = append(next, n.JobID)
	}
	// Manual first, then the delayed by delay, then the on-time.
	if want := "[manual disc-2 retry-1 disc-1 get-2 get-1]"; fmt.Sprint(next) != want {
		t.Fatalf("next nodes %v, want %s", next, want)
	}
	want := map[string]int{"5s": 4, "10s": 3, "30s": 3, "1m": 2, "5m": 2, "10m": 1}
	if fmt.Sprint(r.Delayed) != fmt.Sprint(want) {
		t.Fatalf("delayed %v, want %v", r.Delayed, want)
	}
	if r.DelayedClass["discovery"]["30s"] != 2 || r.DelayedClass["retry"]["5m"] != 1 || r.DelayedClass["polling"]["5s"] != 1 || r.DelayedClass["high_priority"]["5s"] != 0 {
		t.Fatalf("by class %v", r.DelayedClass)
	}
	if r.DelayedOLT["olt-a"]["10m"] != 1 || len(r.DelayedOLT) != 1 {
		t.Fatalf("by OLT %v", r.DelayedOLT)
	}
	if r.IsOverload {
		t.Fatal("4 late nodes of 50 planned is no overload")
	}
	if !Report(q, 50, now, 3).IsOverload {
		t.Fatal("4 late nodes over a threshold of 3 is an overload")
	}
	if n := r.NextNodes[1]; n.NodeID != "disc-2.olt-a" || n.DelaySeconds != 660 || n.Priority != 90 || n.Class != "discovery" || !n.DueAt.Equal(now.Add(-11*time.Minute)) {
		t.Fatalf("next node %+v", n)
	}
}
