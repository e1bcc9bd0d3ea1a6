package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/streams"
)

// Pollers (seed 004): GET /api/v1/pollers/ and GET /api/v1/pollers/stats/
// read the KV bucket streams.BucketPollers, where every poller process
// writes the state of its execution slots every few seconds (services/
// poller, stats.go); the API never calls a poller. A process that stops
// writing disappears with the bucket's TTL (FACHO_POLLERS_TTL).

// saturatedPercent is seed 004's saturation threshold: busy > 75 %.
const saturatedPercent = 75.0

// pollerList is the answer of GET /api/v1/pollers/.
type pollerList struct {
	Count   int                   `json:"count"`
	Pollers []streams.PollerState `json:"pollers"`
}

// pollerStats is seed 004's PollerStats, the answer of GET
// /api/v1/pollers/stats/.
type pollerStats struct {
	TotalPollers int `json:"total_pollers"`
	FreePollers  int `json:"free_pollers"`
	BusyPollers  int `json:"busy_pollers"`
	// BusyPercentage is the mean of the pollers' busy_percentage (each
	// over its process's window, FACHO_POLLER_STATS_WINDOW).
	BusyPercentage float64 `json:"busy_percentage"`
	// QueueSize is the number of nodes waiting: the size of the active
	// planner's queue report (KV facho_planner_leader, key queue: due
	// nodes waiting for their OLT) when there is one; else the NodeDue the
	// poller consumers (one per queue class, and the pre-class one) hold,
	// pending plus unacknowledged, less the BUSY pollers (those are running
	// theirs).
	QueueSize   int  `json:"queue_size"`
	IsSaturated bool `json:"is_saturated"`
	// The totals are over the pollers listed now (each since its process
	// started): a process that ended takes its counts with it.
	TotalTasksCompleted int64     `json:"total_tasks_completed"`
	TotalTasksDelayed   int64     `json:"total_tasks_delayed"`
	TotalTasksFailed    int64     `json:"total_tasks_failed"`
	Processes           int       `json:"processes"`
	Timestamp           time.Time `json:"timestamp"`
	// Classes are the same figures per queue class (the slots of the
	// class); is_saturated above is true when any class is saturated.
	Classes map[string]classStats `json:"classes"`
}

// classStats is one queue class's slots in pollerStats.
type classStats struct {
	TotalPollers int `json:"total_pollers"`
	FreePollers  int `json:"free_pollers"`
	BusyPollers  int `json:"busy_pollers"`
	// BusyPercentage is the mean of the class's slots' busy_percentage.
	BusyPercentage float64 `json:"busy_percentage"`
	// QueueSize is the class's backlog in the planner's queue report
	// (waiting in the planner plus dispatched and not taken); 0 without
	// an active planner.
	QueueSize int `json:"queue_size"`
	// IsSaturated: busy_percentage above 75, or every slot of the class
	// busy with a backlog of the class.
	IsSaturated bool `json:"is_saturated"`
}

// readPollers returns every live poller process's state, ordered by
// process id.
func readPollers(ctx context.Context, js jetstream.JetStream) ([]streams.PollerProcess, error) {
	kv, err := js.KeyValue(ctx, streams.BucketPollers)
	if err != nil {
		return nil, fmt.Errorf("open kv %s: %w", streams.BucketPollers, err)
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("watch kv %s: %w", streams.BucketPollers, err)
	}
	defer func() { _ = w.Stop() }()
	var out []streams.PollerProcess
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("read kv %s: %w", streams.BucketPollers, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("read kv %s: watcher closed", streams.BucketPollers)
			}
			if e == nil { // every current value seen
				sort.Slice(out, func(i, j int) bool { return out[i].ProcessID < out[j].ProcessID })
				return out, nil
			}
			var p streams.PollerProcess
			if err := json.Unmarshal(e.Value(), &p); err != nil {
				continue // not ours to fix: the writer is a poller of another version
			}
			sort.Slice(p.Pollers, func(i, j int) bool { return p.Pollers[i].Slot < p.Pollers[j].Slot })
			out = append(out, p)
		}
	}
}

// summarize builds PollerStats from the processes and the number of
// NodeDue the poller consumer holds (pending + unacknowledged).
func summarize(procs []streams.PollerProcess, held int, now time.Time) pollerStats {
	st := pollerStats{Processes: len(procs), Timestamp: now.UTC(), Classes: map[string]classStats{}}
	sum := 0.0
	classSum := map[string]float64{}
	for _, p := range procs {
		for _, ps := range p.Pollers {
			if ps.Class != "" {
				cs := st.Classes[ps.Class]
				cs.TotalPollers++
				if ps.Status == streams.PollerBusy {
					cs.BusyPollers++
				} else {
					cs.FreePollers++
				}
				classSum[ps.Class] += ps.BusyPercentage
				st.Classes[ps.Class] = cs
			}
			st.TotalPollers++
			if ps.Status == streams.PollerBusy {
				st.BusyPollers++
			} else {
				st.FreePollers++
			}
			sum += ps.BusyPercentage
			st.TotalTasksCompleted += ps.TasksCompleted
			st.TotalTasksDelayed += ps.TasksDelayed
			st.TotalTasksFailed += ps.TasksFailed
		}
	}
	if st.TotalPollers > 0 {
		st.BusyPercentage = sum / float64(st.TotalPollers)
	}
	st.IsSaturated = st.BusyPercentage > saturatedPercent
	st.QueueSize = max(held-st.BusyPollers, 0)
	for c, cs := range st.Classes {
		cs.BusyPercentage = classSum[c] / float64(cs.TotalPollers)
		st.Classes[c] = cs
	}
	st.classSaturation()
	return st
}

// withQueue sets the backlog from the planner's queue report: the total
// and each class's, and the saturation they imply.
func (st *pollerStats) withQueue(rep streams.QueueReport) {
	st.QueueSize = rep.Size
	for c, q := range rep.Classes {
		cs := st.Classes[c]
		cs.QueueSize = q.Size
		st.Classes[c] = cs
	}
	st.classSaturation()
}

// classSaturation marks each class saturated when its slots are over 75 %
// busy, or all busy with a backlog of its own, and the whole saturated
// when any class is (the fullest class decides).
func (st *pollerStats) classSaturation() {
	for c, cs := range st.Classes {
		cs.IsSaturated = cs.BusyPercentage > saturatedPercent || (cs.TotalPollers > 0 && cs.FreePollers == 0 && cs.QueueSize > 0)
		st.IsSaturated = st.IsSaturated || cs.IsSaturated
		st.Classes[c] = cs
	}
}

// nodeDueHeld is what the poller consumers hold (every queue class's and
// the pre-class one): NodeDue not yet delivered plus those delivered and
// not yet acknowledged (running, or put back for later because their OLT
// is busy).
func nodeDueHeld(ctx context.Context, js jetstream.JetStream) (int, error) {
	held := 0
	for _, name := range pollerConsumers() {
		cons, err := js.Consumer(ctx, streams.StreamSchedule, name)
		if err != nil {
			return 0, fmt.Errorf("consumer %s/%s: %w", streams.StreamSchedule, name, err)
		}
		info := cons.CachedInfo()
		held += int(info.NumPending) + info.NumAckPending
	}
	return held, nil
}

func pollerConsumers() []string {
	out := []string{streams.ConsumerPoller}
	for _, c := range streams.Classes() {
		out = append(out, streams.ConsumerPollerClass(c))
	}
	return out
}

// plannerQueue is the active planner's queue report; ok is false when
// there is none (no active planner, or the bucket is missing).
func plannerQueue(ctx context.Context, js jetstream.JetStream) (r streams.QueueReport, ok bool) {
	kv, err := js.KeyValue(ctx, streams.BucketPlannerLeader)
	if err != nil {
		return r, false
	}
	e, err := kv.Get(ctx, streams.QueueKey)
	if err != nil {
		return r, false
	}
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return r, false
	}
	return r, true
}

func (s *server) pollersUnavailable(err error) *apiError {
	s.deps.Log.Warn().Err(err).Msg("read pollers")
	return unavailable("poller state")
}

// listPollers answers GET /api/v1/pollers/: every execution slot of every
// live poller process.
func (s *server) listPollers(w http.ResponseWriter, r *http.Request) *apiError {
	ctx, cancel := s.query(r)
	defer cancel()
	procs, err := readPollers(ctx, s.deps.JS)
	if err != nil {
		return s.pollersUnavailable(err)
	}
	out := pollerList{Pollers: []streams.PollerState{}}
	for _, p := range procs {
		out.Pollers = append(out.Pollers, p.Pollers...)
	}
	out.Count = len(out.Pollers)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// pollerStatsNow reads the pollers and the consumer.
func (s *server) pollerStatsNow(ctx context.Context) (pollerStats, error) {
	procs, err := readPollers(ctx, s.deps.JS)
	if err != nil {
		return pollerStats{}, err
	}
	if rep, ok := plannerQueue(ctx, s.deps.JS); ok {
		st := summarize(procs, 0, s.deps.Now())
		st.withQueue(rep)
		return st, nil
	}
	held, err := nodeDueHeld(ctx, s.deps.JS)
	if err != nil {
		return pollerStats{}, err
	}
	return summarize(procs, held, s.deps.Now()), nil
}

// getPollerStats answers GET /api/v1/pollers/stats/.
func (s *server) getPollerStats(w http.ResponseWriter, r *http.Request) *apiError {
	ctx, cancel := s.query(r)
	defer cancel()
	st, err := s.pollerStatsNow(ctx)
	if err != nil {
		return s.pollersUnavailable(err)
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// pollerCollector exports PollerStats as gauges, read from the bucket at
// each scrape. A failed read exports nothing (logged), so /metrics still
// answers.
type pollerCollector struct {
	s                                                  *server
	total, busy, free, busyPct, saturated, queue, proc *prometheus.Desc
	// Per queue class (label class).
	classTotal, classBusy, classSaturated, classQueue *prometheus.Desc
}

func newPollerCollector(s *server) *pollerCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &pollerCollector{
		s:          s,
		total:      d("facho_pollers", "Execution slots of the live poller processes (total_pollers)."),
		busy:       d("facho_pollers_busy", "Pollers running a node now (busy_pollers)."),
		free:       d("facho_pollers_free", "Pollers free now (free_pollers)."),
		busyPct:    d("facho_pollers_busy_percentage", "Mean busy percentage of the pollers over their window (busy_percentage), 0..100."),
		saturated:  d("facho_pollers_saturated", "1 when facho_pollers_busy_percentage is above 75 (is_saturated)."),
		queue:      d("facho_pollers_queue_size", "Nodes waiting (queue_size): the planner's queue report size, else the poller consumers' pending + unacknowledged less the busy pollers."),
		proc:       d("facho_poller_processes", "Live poller processes (keys of the facho_pollers bucket)."),
		classTotal: prometheus.NewDesc("facho_pollers_class", "Execution slots of the queue class in the live poller processes.", []string{"class"}, nil),
		classBusy:  prometheus.NewDesc("facho_pollers_class_busy", "Slots of the queue class running a node now.", []string{"class"}, nil),
		classSaturated: prometheus.NewDesc("facho_pollers_class_saturated",
			"1 when the queue class is saturated: its slots over 75 % busy, or all busy with a backlog of the class.", []string{"class"}, nil),
		classQueue: prometheus.NewDesc("facho_pollers_class_queue_size", "The queue class's backlog in the planner's queue report.", []string{"class"}, nil),
	}
}

func (c *pollerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.total, c.busy, c.free, c.busyPct, c.saturated, c.queue, c.proc, c.classTotal, c.classBusy, c.classSaturated, c.classQueue} {
		ch <- d
	}
}

func (c *pollerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.QueryTimeout)
	defer cancel()
	st, err := c.s.pollerStatsNow(ctx)
	if err != nil {
		c.s.deps.Log.Warn().Err(err).Msg("poller metrics")
		return
	}
	sat := 0.0
	if st.IsSaturated {
		sat = 1
	}
	for _, m := range []struct {
		d *prometheus.Desc
		v float64
	}{
		{c.total, float64(st.TotalPollers)}, {c.busy, float64(st.BusyPollers)}, {c.free, float64(st.FreePollers)},
		{c.busyPct, st.BusyPercentage}, {c.saturated, sat}, {c.queue, float64(st.QueueSize)}, {c.proc, float64(st.Processes)},
	} {
		if cm, err := prometheus.NewConstMetric(m.d, prometheus.GaugeValue, m.v); err == nil {
			ch <- cm
		}
	}
	for class, cs := range st.Classes {
		sat := 0.0
		if cs.IsSaturated {
			sat = 1
		}
		for _, m := range []struct {
			d *prometheus.Desc
			v float64
		}{{c.classTotal, float64(cs.TotalPollers)}, {c.classBusy, float64(cs.BusyPollers)}, {c.classSaturated, sat}, {c.classQueue, float64(cs.QueueSize)}} {
			if cm, err := prometheus.NewConstMetric(m.d, prometheus.GaugeValue, m.v, class); err == nil {
				ch <- cm
			}
		}
	}
}

// registerPollerMetrics registers the pollers' gauges on the API's
// registry.
func (s *server) registerPollerMetrics() error {
	if err := s.deps.Registry.Register(newPollerCollector(s)); err != nil {
		return fmt.Errorf("register poller metrics: %w", err)
	}
	return nil
}
