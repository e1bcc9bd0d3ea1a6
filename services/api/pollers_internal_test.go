package api

import (
	"fmt"
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
			got := summarize(tc.procs, tc.held, now)
			if len(got.Classes) != 0 {
				t.Errorf("classes %v from slots without a class", got.Classes)
			}
			got.Classes, tc.want.Classes = nil, nil
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
				t.Errorf("summarize = %+v\nwant        %+v", got, tc.want)
			}
		})
	}
}

// Per class: the fullest class decides is_saturated, and a class whose
// slots are all busy with a backlog of its own is saturated whatever its
// busy percentage over the window says.
func TestSummarizePollerClasses(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	slot := func(class, status string, pct float64) streams.PollerState {
		return streams.PollerState{Class: class, Status: status, BusyPercentage: pct}
	}
	procs := []streams.PollerProcess{{Pollers: []streams.PollerState{
		slot(streams.ClassDiscovery, streams.PollerBusy, 10), slot(streams.ClassDiscovery, streams.PollerBusy, 5),
		slot(streams.ClassPolling, streams.PollerFree, 2), slot(streams.ClassPolling, streams.PollerFree, 2),
		slot(streams.ClassPolling, streams.PollerFree, 2), slot(streams.ClassPolling, streams.PollerFree, 2),
	}}}
	for _, tc := range []struct {
		name          string
		rep           *streams.QueueReport
		wantSaturated bool
		wantDiscovery classStats
	}{
		{"discovery all busy, nothing waiting: not saturated", &streams.QueueReport{Size: 0, Classes: map[string]streams.ClassQueue{}},
			false, classStats{TotalPollers: 2, BusyPollers: 2, BusyPercentage: 7.5}},
		{"discovery all busy with a backlog: saturated at 7.5 % busy", &streams.QueueReport{Size: 3,
			Classes: map[string]streams.ClassQueue{streams.ClassDiscovery: {Size: 2}, streams.ClassPolling: {Size: 1}}},
			true, classStats{TotalPollers: 2, BusyPollers: 2, BusyPercentage: 7.5, QueueSize: 2, IsSaturated: true}},
		{"no planner: no class backlog known", nil, false, classStats{TotalPollers: 2, BusyPollers: 2, BusyPercentage: 7.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := summarize(procs, 0, now)
			if tc.rep != nil {
				st.withQueue(*tc.rep)
				if st.QueueSize != tc.rep.Size {
					t.Errorf("queue_size %d, want the report's %d", st.QueueSize, tc.rep.Size)
				}
			}
			if st.IsSaturated != tc.wantSaturated || st.Classes[streams.ClassDiscovery] != tc.wantDiscovery {
				t.Errorf("saturated %v discovery %+v, want %v %+v", st.IsSaturated, st.Classes[streams.ClassDiscovery], tc.wantSaturated, tc.wantDiscovery)
			}
			if p := st.Classes[streams.ClassPolling]; p.TotalPollers != 4 || p.FreePollers != 4 || p.IsSaturated {
				t.Errorf("polling %s", fmt.Sprintf("%+v", p))
			}
		})
	}
}
