package bench

import (
	"testing"
	"time"
)

// A cycle is every node's k-th run, by schedule: with first runs spread
// over the interval, a node scheduled late in the first interval is still
// in cycle 1, and its second run (early in the third interval's clock
// window) in cycle 2.
func TestWindowsCountRunsPerNode(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	rows := []execRow{
		{job: "disc", olt: "a", status: "SUCCESS", scheduled: at(0), started: at(1), finished: at(5), varbinds: 10},
		{job: "disc", olt: "b", status: "SUCCESS", scheduled: at(280), started: at(282), finished: at(290), varbinds: 20},
		{job: "disc", olt: "a", status: "SUCCESS", scheduled: at(300), started: at(300), finished: at(304), varbinds: 10},
		{job: "disc", olt: "b", status: "RUNNING", scheduled: at(580), started: at(581)},
		{job: "get", olt: "a", status: "FAILED", scheduled: at(150), started: at(150), finished: at(151)},
		{job: "get", olt: "a", status: "SUCCESS", scheduled: at(450)},
	}
	w := windows(rows)
	for _, tc := range []struct {
		k, terminal, open int
		varbinds          int64
		start, end        *time.Time
	}{
		{1, 3, 0, 30, at(1), at(290)},
		{2, 2, 1, 10, at(300), at(304)},
	} {
		got := w[tc.k]
		if got == nil {
			t.Fatalf("cycle %d missing", tc.k)
		}
		if got.terminal != tc.terminal || got.open != tc.open || got.varbinds != tc.varbinds || !got.start.Equal(*tc.start) || !got.end.Equal(*tc.end) {
			t.Errorf("cycle %d: terminal %d open %d varbinds %d start %s end %s; want %d %d %d %s %s", tc.k,
				got.terminal, got.open, got.varbinds, got.start.Sub(t0), got.end.Sub(t0), tc.terminal, tc.open, tc.varbinds, tc.start.Sub(t0), tc.end.Sub(t0))
		}
	}
	if len(w) != 2 {
		t.Errorf("%d cycles, want 2", len(w))
	}
	if got := len(w[1].lateness); got != 3 {
		t.Errorf("cycle 1 has %d lateness samples, want 3", got)
	}
}
