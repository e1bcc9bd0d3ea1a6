package planner

import (
	"testing"
	"time"
)

func TestRetryDelay(t *testing.T) {
	cfg := Config{}.WithDefaults()
	withDelay := func(s int) NodeSpec { n := spec(60, 40); n.RetryDelaySeconds = s; return n }
	for _, tc := range []struct {
		name string
		spec NodeSpec
		n    int
		want time.Duration
	}{
		{"seed 001 retry class: first retry", spec(60, 40), 1, 300 * time.Second},
		{"seed 001 retry class: second", spec(60, 40), 2, 600 * time.Second},
		{"seed 001 retry class: third", spec(60, 40), 3, 1200 * time.Second},
		{"the last step repeats", spec(60, 40), 7, 1200 * time.Second},
		{"job retry delay, first", withDelay(120), 1, 120 * time.Second},
		{"job retry delay doubles", withDelay(120), 3, 480 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cfg.retryDelay(tc.spec, tc.n); got != tc.want {
				t.Fatalf("retry %d delay %s, want %s", tc.n, got, tc.want)
			}
		})
	}
	custom := Config{RetryBackoff: []time.Duration{time.Second, 5 * time.Second}}.WithDefaults()
	if got := custom.retryDelay(spec(60, 40), 2); got != 5*time.Second {
		t.Fatalf("configured backoff: %s", got)
	}
}

// A retried run keeps its scheduled time (so its execution id) and is due
// again at its retry time, as a retry; the OLT is free meanwhile.
func TestRetryKeepsTheRunAndFreesTheOLT(t *testing.T) {
	k := NodeKey{JobID: "disc", OLTID: "olt-a"}
	other := NodeKey{JobID: "get", OLTID: "olt-a"}
	s := NewScheduler(0, 2*time.Second)
	s.Sync(map[NodeKey]Desired{k: {Spec: spec(3600, 90), Since: t0}, other: {Spec: spec(3600, 40), Since: t0.Add(5 * time.Second)}}, t0)
	q := NewQueues(2 * time.Second)
	take := func(now time.Time) []DueNode {
		for _, d := range s.Due(now) {
			if d.Retry > 0 {
				s.TakeRetry(d.Key, d.ScheduledAt)
			} else {
				s.Take(d.Key, d.ScheduledAt)
			}
			q.Push(d)
		}
		out := q.Ready(now)
		for _, d := range out {
			q.Dispatched(d.Key.OLTID, ExecutionID(d.Key, d.ScheduledAt))
		}
		return out
	}
	if d := take(t0); len(d) != 1 || d[0].Key != k {
		t.Fatalf("dispatched %v", d)
	}
	// Fails at t0+10s; retry in 60 s.
	q.Finish("olt-a", ExecutionID(k, t0), "FAILED", t0.Add(10*time.Second))
	s.Retry(k, t0, t0.Add(70*time.Second))
	if d := take(t0.Add(10 * time.Second)); len(d) != 1 || d[0].Key != other {
		t.Fatalf("during the backoff the OLT runs %v, want the other node", d)
	}
	q.Finish("olt-a", ExecutionID(other, t0.Add(5*time.Second)), "SUCCESS", t0.Add(12*time.Second))
	s.Finish(other, t0.Add(5*time.Second), t0.Add(12*time.Second), "SUCCESS")
	if d := take(t0.Add(69 * time.Second)); len(d) != 0 {
		t.Fatalf("retry dispatched early: %v", d)
	}
	d := take(t0.Add(70 * time.Second))
	if len(d) != 1 || d[0].Key != k || d[0].Retry != 1 || !d[0].ScheduledAt.Equal(t0) {
		t.Fatalf("retry %+v", d)
	}
	n, _ := s.Node(k)
	if n.Attempts != 1 || !n.Taken {
		t.Fatalf("node %+v", n)
	}
	s.Finish(k, t0, t0.Add(80*time.Second), "SUCCESS")
	if n, _ := s.Node(k); n.Attempts != 0 || !n.RetryAt.IsZero() || !n.Next.Equal(t0.Add(80*time.Second+time.Hour)) {
		t.Fatalf("after the retry's success %+v", n)
	}
}
