package poller

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/streams"
)

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestStats(t *testing.T, workers int, window time.Duration, clock *fakeClock) (*pollerStats, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := Config{PollerID: "p1", Workers: workers, StatsWindow: window, DelayedAfter: 2 * time.Second}
	s, err := newPollerStats(cfg, reg, clock.now, "host-1", 42)
	if err != nil {
		t.Fatal(err)
	}
	return s, reg
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// The busy percentage is the busy share of the window: since start while
// the process is younger than the window, then between the oldest sample
// within the window and now.
func TestBusyPercentageWindow(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)}
	s, _ := newTestStats(t, 2, time.Minute, clock)
	node := streams.NodeDue{NodeID: "n1", OLTID: "olt-1", ExecutionID: "e1", ScheduledAt: clock.t}
	// tick is the publisher: a sample every 10 s.
	tick := func(n int, between func()) {
		for i := 0; i < n; i++ {
			clock.advance(10 * time.Second)
			if between != nil {
				between()
			}
			s.sample()
		}
	}

	type want struct {
		slot0, slot1, process, window, sinceStart0 float64
		status0                                    string
	}
	check := func(step string, w want) {
		t.Helper()
		snap := s.snapshot()
		got := want{
			slot0: snap.Pollers[0].BusyPercentage, slot1: snap.Pollers[1].BusyPercentage,
			process: s.busyPercentage(), window: snap.WindowSeconds,
			sinceStart0: snap.Pollers[0].BusyPercentageSinceStart, status0: snap.Pollers[0].Status,
		}
		if !near(got.slot0, w.slot0) || !near(got.slot1, w.slot1) || !near(got.process, w.process) ||
			!near(got.window, w.window) || !near(got.sinceStart0, w.sinceStart0) || got.status0 != w.status0 {
			t.Fatalf("%s: got %+v, want %+v", step, got, w)
		}
	}

	// 0-30 s: idle.
	tick(3, nil)
	check("idle 30s", want{window: 30, status0: streams.PollerFree})

	// 30-60 s: slot 0 busy (the lowest free slot takes the node).
	if slot := s.begin(node); slot != 0 {
		t.Fatalf("first node on slot %d, want 0", slot)
	}
	tick(3, nil)
	// Still younger than the window: since start, 30 of 60 s busy.
	check("busy 30 of 60s", want{slot0: 50, process: 25, window: 60, sinceStart0: 50, status0: streams.PollerBusy})

	// 60-120 s: still busy. The window is now the last 60 s: all busy.
	tick(6, nil)
	check("busy all of the last 60s", want{slot0: 100, process: 50, window: 60, sinceStart0: 75, status0: streams.PollerBusy})

	// Ends at 125 s; then 125-180 s idle: 5 of the last 60 s busy.
	clock.advance(5 * time.Second)
	s.end(0, resultSuccess)
	clock.advance(5 * time.Second)
	s.sample() // 130 s
	tick(5, nil)
	check("5 of the last 60s", want{slot0: 100.0 * 5 / 60, process: 100.0 * 5 / 60 / 2, window: 60, sinceStart0: 100.0 * 95 / 180, status0: streams.PollerFree})

	// Between samples the window is the oldest sample within it: at 185 s
	// that is the one of 130 s (the one of 120 s is 65 s old), so the
	// span is 55 s with no busy time.
	clock.advance(5 * time.Second)
	check("between samples", want{window: 55, sinceStart0: 100.0 * 95 / 185, status0: streams.PollerFree})

	snap := s.snapshot()
	p0 := snap.Pollers[0]
	if p0.PollerID != "p1.0" || p0.ProcessID != "p1" || p0.Host != "host-1" || snap.PID != 42 {
		t.Errorf("identity: %+v", p0)
	}
	if !near(p0.BusyTime, 95) || !near(p0.TotalTime, 185) || p0.TasksCompleted != 1 || p0.TasksFailed != 0 {
		t.Errorf("counters: busy_time %v total_time %v completed %d failed %d", p0.BusyTime, p0.TotalTime, p0.TasksCompleted, p0.TasksFailed)
	}
	if p0.CurrentNodeID != nil || p0.BusySince != nil {
		t.Errorf("a FREE poller names node %v since %v", p0.CurrentNodeID, p0.BusySince)
	}
}

// Slots: a node takes the lowest free slot; a BUSY slot names its node;
// completed, failed and delayed are counted per slot; a node that ends
// without a terminal event ("" result) is not completed; every slot busy
// adds one.
func TestSlotsCountTasks(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)}
	s, reg := newTestStats(t, 2, time.Minute, clock)
	onTime := streams.NodeDue{NodeID: "job-a.olt-1", OLTID: "olt-1", ExecutionID: "e1", ScheduledAt: clock.t.Add(-time.Second)}
	late := streams.NodeDue{NodeID: "job-a.olt-2", OLTID: "olt-2", ExecutionID: "e2", ScheduledAt: clock.t.Add(-3 * time.Second)}
	unscheduled := streams.NodeDue{NodeID: "job-b.olt-3", OLTID: "olt-3", ExecutionID: "e3"}

	a := s.begin(onTime)
	b := s.begin(late)
	c := s.begin(unscheduled)
	if a != 0 || b != 1 || c != 2 {
		t.Fatalf("slots %d %d %d, want 0 1 2 (the third added)", a, b, c)
	}
	snap := s.snapshot()
	if len(snap.Pollers) != 3 {
		t.Fatalf("%d pollers, want 3", len(snap.Pollers))
	}
	p1 := snap.Pollers[1]
	if p1.Status != streams.PollerBusy || p1.CurrentNodeID == nil || *p1.CurrentNodeID != "job-a.olt-2" ||
		*p1.CurrentOLTID != "olt-2" || *p1.CurrentExecutionID != "e2" || p1.BusySince == nil {
		t.Fatalf("busy slot: %+v", p1)
	}
	clock.advance(time.Second)
	s.end(a, resultSuccess)
	s.end(b, string(CauseSNMP))
	s.end(c, "")
	s.end(c, resultSuccess) // a second end of a free slot changes nothing
	if d := s.begin(onTime); d != 0 {
		t.Fatalf("next node on slot %d, want 0", d)
	}
	snap = s.snapshot()
	for _, tc := range []struct {
		slot                       int
		completed, failed, delayed int64
	}{{0, 1, 0, 0}, {1, 1, 1, 1}, {2, 0, 0, 0}} {
		p := snap.Pollers[tc.slot]
		if p.TasksCompleted != tc.completed || p.TasksFailed != tc.failed || p.TasksDelayed != tc.delayed {
			t.Errorf("slot %d: completed %d failed %d delayed %d, want %d %d %d", tc.slot, p.TasksCompleted, p.TasksFailed, p.TasksDelayed,
				tc.completed, tc.failed, tc.delayed)
		}
	}
	if got := counter(t, reg, "facho_poller_olt_executions_total"); got != 2 {
		t.Errorf("facho_poller_olt_executions_total = %v, want 2", got)
	}
	if got := counter(t, reg, "facho_poller_tasks_delayed_total"); got != 1 {
		t.Errorf("facho_poller_tasks_delayed_total = %v, want 1", got)
	}
	var nilStats *pollerStats
	nilStats.end(nilStats.begin(onTime), resultSuccess) // a poller without stats
}
