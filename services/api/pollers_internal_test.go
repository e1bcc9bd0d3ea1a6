package api

import (
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

func TestSummarizePollers(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	slot := func(status string, pct float64, completed, delayed, failed int64) streams.PollerState {
		return streams.PollerState{Status: status, BusyPercentage: pct, TasksCompleted: completed, TasksDelayed: delayed, TasksFailed: failed}
	}
	proc := func(slots ...streams.PollerState) streams.PollerProcess { return streams.PollerProcess{Pollers: slots} }
	for name, tc := range map[string]struct {
		procs []streams.PollerProcess
		held  int
		want  pollerStats
	}{
		"no pollers, work waiting": {nil, 4, pollerStats{QueueSize: 4}},
		"two processes": {
			[]streams.PollerProcess{
				proc(slot(streams.PollerBusy, 90, 10, 1, 2), slot(streams.PollerFree, 30, 5, 0, 0)),
				proc(slot(streams.PollerBusy, 60, 1, 2, 0)),
			}, 5,
			pollerStats{TotalPollers: 3, FreePollers: 1, BusyPollers: 2, BusyPercentage: 60, QueueSize: 3,
				TotalTasksCompleted: 16, TotalTasksDelayed: 3, TotalTasksFailed: 2, Processes: 2},
		},
		"saturated above 75": {
			[]streams.PollerProcess{proc(slot(streams.PollerBusy, 100, 0, 0, 0), slot(streams.PollerBusy, 52, 0, 0, 0))}, 2,
			pollerStats{TotalPollers: 2, BusyPollers: 2, BusyPercentage: 76, IsSaturated: true, Processes: 1},
		},
		"75 is not saturated": {
			[]streams.PollerProcess{proc(slot(streams.PollerFree, 75, 0, 0, 0))}, 0,
			pollerStats{TotalPollers: 1, FreePollers: 1, BusyPercentage: 75, Processes: 1},
		},
		"busy pollers not yet acknowledged in the consumer info": {
			[]streams.PollerProcess{proc(slot(streams.PollerBusy, 10, 0, 0, 0))}, 0,
			pollerStats{TotalPollers: 1, BusyPollers: 1, BusyPercentage: 10, Processes: 1},
		},
	} {
		t.Run(name, func(t *testing.T) {
			tc.want.Timestamp = now
			if got := summarize(tc.procs, tc.held, now); got != tc.want {
				t.Errorf("summarize = %+v\nwant        %+v", got, tc.want)
			}
		})
	}
}
