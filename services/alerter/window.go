package alerter

import (
	"slices"
	"time"

	"github.com/facho-olt/facho/streams"
)

// The PON outage window is two poll cycles of the OLT by default: the
// interval of its discovery job (the job that reads its ONUs' status),
// times OutageCycles. The alerter follows the jobs and their assignments
// on FACHO_CONFIG for it; an OLT with no enabled discovery job assigned
// takes the fixed OutageWindow.

// jobState is what the engine keeps of a job.
type jobState struct {
	Kind            string `json:"kind"`
	IntervalSeconds int    `json:"interval_seconds"`
	Enabled         bool   `json:"enabled"`
}

// maxJobsPerOLT bounds the jobs recorded as assigned to one OLT.
const maxJobsPerOLT = 256

// OnJob records a job's kind, interval and whether it is enabled.
func (e *Engine) OnJob(u streams.JobUpserted) {
	if _, ok := e.jobs[u.ID]; !ok && len(e.jobs) >= e.limits.MaxOLTs {
		e.Dropped++
		return
	}
	e.jobs[u.ID] = jobState{Kind: bounded(u.Kind, 32), IntervalSeconds: max(0, u.IntervalSeconds), Enabled: u.Enabled}
	e.dirty[stateID{"job", u.ID}] = true
	e.dropThresholds()
}

// OnJobDeleted forgets a job.
func (e *Engine) OnJobDeleted(id string) {
	delete(e.jobs, id)
	e.dirty[stateID{"job", id}] = true
	e.dropThresholds()
}

// OnAssignment records that job runs on olt (enabled) or not.
func (e *Engine) OnAssignment(job, olt string, enabled bool) {
	o := e.olts[olt]
	if o == nil {
		if !enabled {
			return
		}
		if o = e.olt(olt); o == nil {
			e.Dropped++
			return
		}
	}
	i := slices.Index(o.Jobs, job)
	switch {
	case enabled && i < 0:
		if len(o.Jobs) >= maxJobsPerOLT {
			e.Dropped++
			return
		}
		o.Jobs = append(o.Jobs, job)
	case !enabled && i >= 0:
		o.Jobs = slices.Delete(o.Jobs, i, i+1)
	default:
		return
	}
	e.touchOLT(olt)
	e.dropThresholds()
}

// pollInterval is the interval of an OLT's discovery: the longest of its
// enabled discovery jobs (0: none known).
func (e *Engine) pollInterval(olt string) time.Duration {
	o := e.olts[olt]
	if o == nil {
		return 0
	}
	var longest int
	for _, id := range o.Jobs {
		if j, ok := e.jobs[id]; ok && j.Enabled && j.Kind == streams.KindDiscovery {
			longest = max(longest, j.IntervalSeconds)
		}
	}
	return time.Duration(longest) * time.Second
}

// outageWindow is the PON outage window of an OLT under t: OutageCycles
// of its discovery interval when both are known, else OutageWindow.
func (e *Engine) outageWindow(olt string, t Thresholds) time.Duration {
	if t.OutageCycles <= 0 {
		return t.OutageWindow
	}
	iv := e.pollInterval(olt)
	if iv <= 0 {
		return t.OutageWindow
	}
	return min(max(time.Duration(t.OutageCycles)*iv, time.Second), maxOutageWindow)
}

// maxOutageWindow bounds a derived outage window.
const maxOutageWindow = 24 * time.Hour
