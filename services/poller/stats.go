package poller

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/streams"
)

// Poller stats (seed 004). A "poller" in seed 004's sense is an execution
// slot: a poller process has one per unit of each queue class's
// concurrency (the sum of the class limits), each labelled with its class
// and FREE or BUSY (running one node under its OLT's lease). A node takes
// the lowest free slot of its class, as seed 004's PollerManager hands a node to a free poller; so under
// a light load the first slots do the work and the last ones stay FREE,
// which shows how many slots the load needs.
//
// Every Config.StatsEvery (at most a third of the bucket's TTL), and at
// most every statsMinGap after a slot changes status, the process writes
// its streams.PollerProcess under its PollerID in streams.BucketPollers;
// a clean stop deletes the key, a killed process's key expires with the
// bucket's TTL (FACHO_POLLERS_TTL).
//
// busy_percentage is the busy share of the last Config.StatsWindow: the
// busy time between the oldest snapshot taken within the window (one per
// StatsEvery) and now, over that span (window_seconds); since start while
// the process is younger than the window. busy_percentage_since_start is
// busy_time / total_time.

// statsMinGap bounds how often a status change rewrites the process's key.
const statsMinGap = 250 * time.Millisecond

// saturatedPercent: seed 004's saturation threshold (busy > 75 %).
const saturatedPercent = 75.0

// slotState is one execution slot.
type slotState struct {
	// class is the queue class whose nodes the slot runs ("" in a stats
	// built without classes: any).
	class     string
	busy      bool
	busySince time.Time
	node      streams.NodeDue
	// busyDone is the busy time of the slot's finished nodes.
	busyDone                   time.Duration
	completed, failed, delayed int64
}

// busyAt is the slot's busy time since start, the running node included.
func (s *slotState) busyAt(now time.Time) time.Duration {
	if s.busy && now.After(s.busySince) {
		return s.busyDone + now.Sub(s.busySince)
	}
	return s.busyDone
}

// statsSample is the cumulative busy time of every slot at one instant.
type statsSample struct {
	at   time.Time
	busy []time.Duration
}

// pollerStats tracks the slots of one poller process. A nil *pollerStats
// tracks nothing.
type pollerStats struct {
	now          func() time.Time
	process      string
	host         string
	pid          int
	window       time.Duration
	delayedAfter time.Duration
	workers      int // Config.Workers: the process's cap

	mu      sync.Mutex
	started time.Time
	slots   []slotState
	// samples are oldest first; those older than the window are dropped
	// by sample.
	samples []statsSample
	// changed has room for one signal: a slot changed status.
	changed chan struct{}

	delayedTotal  prometheus.Counter
	oltExecutions *prometheus.CounterVec // nil with Config.DisableOLTMetrics
}

func newPollerStats(cfg Config, reg prometheus.Registerer, now func() time.Time, host string, pid int) (*pollerStats, error) {
	s := &pollerStats{
		now: now, process: cfg.PollerID, host: host, pid: pid,
		window: cfg.StatsWindow, delayedAfter: cfg.DelayedAfter, workers: cfg.Workers,
		started: now(), slots: make([]slotState, cfg.Workers),
		changed: make(chan struct{}, 1),
	}
	if cfg.Classes.Total() > 0 {
		// One slot per unit of each class's concurrency, in class order:
		// the slots are the sum of the class limits.
		s.slots = s.slots[:0]
		for _, c := range streams.Classes() {
			for range cfg.Classes.Of(c).Concurrency {
				s.slots = append(s.slots, slotState{class: c})
			}
		}
	}
	constLabels := prometheus.Labels{"poller_id": cfg.PollerID}
	s.delayedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "facho_poller_tasks_delayed_total", ConstLabels: constLabels,
		Help: "Nodes started later than scheduled_at + FACHO_POLLER_DELAYED_AFTER.",
	})
	cs := []prometheus.Collector{
		s.delayedTotal,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "facho_poller_busy_percentage", ConstLabels: constLabels,
			Help: "Busy share of this process's execution slots over the last FACHO_POLLER_STATS_WINDOW, 0..100.",
		}, func() float64 { return s.busyPercentage() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "facho_poller_saturated", ConstLabels: constLabels,
			Help: "1 when facho_poller_busy_percentage is above 75, else 0.",
		}, func() float64 {
			if s.busyPercentage() > saturatedPercent {
				return 1
			}
			return 0
		}),
	}
	if !cfg.DisableOLTMetrics {
		s.oltExecutions = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_poller_olt_executions_total", ConstLabels: constLabels,
			Help: "Executions finished, by OLT and result (success or the failure cause). One series per OLT and result this process ran; -olt-metrics=false drops it.",
		}, []string{"olt_id", "result"})
		cs = append(cs, s.oltExecutions)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register poller stats metrics: %w", err)
		}
	}
	return s, nil
}

// begin puts node on the lowest free slot of its class (BUSY) and returns
// the slot; a node without a valid class (published before classes) runs
// in a polling slot, as the polling workers drain those. With every slot
// of the class busy (more concurrent nodes than its limit, which the
// workers do not allow) it adds one.
func (s *pollerStats) begin(node streams.NodeDue) int {
	if s == nil {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	class := node.Class
	if !streams.ValidClass(class) {
		class = streams.ClassPolling
	}
	i := 0
	for i < len(s.slots) && (s.slots[i].busy || (s.slots[i].class != "" && s.slots[i].class != class)) {
		i++
	}
	if i == len(s.slots) {
		s.slots = append(s.slots, slotState{class: class})
	}
	sl := &s.slots[i]
	sl.busy, sl.busySince, sl.node = true, now, node
	if !node.ScheduledAt.IsZero() && now.Sub(node.ScheduledAt) > s.delayedAfter {
		sl.delayed++
		s.delayedTotal.Inc()
	}
	s.signal()
	return i
}

// end frees slot. result is "success", a failure cause, or "" when the
// node ended without a terminal event (it goes back to the queue): then it
// is not counted as completed.
func (s *pollerStats) end(slot int, result string) {
	if s == nil || slot < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := &s.slots[slot]
	if !sl.busy {
		return
	}
	sl.busyDone = sl.busyAt(s.now())
	oltID := sl.node.OLTID
	sl.busy, sl.node = false, streams.NodeDue{}
	if result != "" {
		sl.completed++
		if result != resultSuccess {
			sl.failed++
		}
		if s.oltExecutions != nil {
			s.oltExecutions.WithLabelValues(oltID, result).Inc()
		}
	}
	s.signal()
}

// resultSuccess is the result label of a succeeded execution.
const resultSuccess = "success"

func (s *pollerStats) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// sample records every slot's busy time now and drops the samples no
// longer needed: all but those within the window.
func (s *pollerStats) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	busy := make([]time.Duration, len(s.slots))
	for i := range s.slots {
		busy[i] = s.slots[i].busyAt(now)
	}
	s.samples = append(s.samples, statsSample{at: now, busy: busy})
	cut := 0
	for cut < len(s.samples) && now.Sub(s.samples[cut].at) > s.window {
		cut++
	}
	s.samples = s.samples[cut:]
}

// base is the start of the busy-percentage window at now: the process's
// start while it is younger than the window, else the oldest sample
// within the window (nil busy: zero for every slot). Called with mu held.
func (s *pollerStats) base(now time.Time) statsSample {
	if now.Sub(s.started) <= s.window {
		return statsSample{at: s.started}
	}
	for _, smp := range s.samples {
		if now.Sub(smp.at) <= s.window {
			return smp
		}
	}
	return statsSample{at: now}
}

// percent is busy over span as 0..100; over an empty span, 100 when busy
// now.
func percent(busy, span time.Duration, busyNow bool) float64 {
	if span <= 0 {
		if busyNow {
			return 100
		}
		return 0
	}
	return min(max(100*busy.Seconds()/span.Seconds(), 0), 100)
}

// slotPercent is slot i's busy percentage over the window. Called with mu
// held.
func (s *pollerStats) slotPercent(i int, now time.Time, b statsSample) float64 {
	var before time.Duration
	if i < len(b.busy) {
		before = b.busy[i]
	}
	return percent(s.slots[i].busyAt(now)-before, now.Sub(b.at), s.slots[i].busy)
}

// busyPercentage is the mean of the slots' window busy percentages.
func (s *pollerStats) busyPercentage() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.slots) == 0 {
		return 0
	}
	now := s.now()
	b := s.base(now)
	sum := 0.0
	for i := range s.slots {
		sum += s.slotPercent(i, now, b)
	}
	return sum / float64(len(s.slots))
}

// snapshot is the process's state now, as published.
func (s *pollerStats) snapshot() streams.PollerProcess {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	b := s.base(now)
	total := now.Sub(s.started)
	out := streams.PollerProcess{
		ProcessID: s.process, Host: s.host, PID: s.pid, StartedAt: s.started.UTC(), UpdatedAt: now.UTC(),
		WindowSeconds: now.Sub(b.at).Seconds(), DelayedAfterSeconds: s.delayedAfter.Seconds(),
		Pollers: make([]streams.PollerState, len(s.slots)), Workers: s.workers,
	}
	for i := range s.slots {
		sl := &s.slots[i]
		busy := sl.busyAt(now)
		ps := streams.PollerState{
			PollerID: s.process + "." + strconv.Itoa(i), ProcessID: s.process, Host: s.host, Slot: i, Class: sl.class,
			Status:   streams.PollerFree,
			BusyTime: busy.Seconds(), TotalTime: total.Seconds(),
			BusyPercentage:           s.slotPercent(i, now, b),
			BusyPercentageSinceStart: percent(busy, total, sl.busy),
			TasksCompleted:           sl.completed, TasksFailed: sl.failed, TasksDelayed: sl.delayed,
			UpdatedAt: now.UTC(),
		}
		if sl.busy {
			node, olt, exec, since := sl.node.NodeID, sl.node.OLTID, sl.node.ExecutionID, sl.busySince.UTC()
			ps.Status = streams.PollerBusy
			ps.CurrentNodeID, ps.CurrentOLTID, ps.CurrentExecutionID, ps.BusySince = &node, &olt, &exec, &since
		}
		out.Pollers[i] = ps
	}
	return out
}

// startStats opens the pollers bucket and publishes the process's state
// until the returned stop is called (after the workers are done), which
// deletes the key.
func (p *poller) startStats(ctx context.Context) (stop func(), err error) {
	kv, err := p.js.KeyValue(ctx, streams.BucketPollers)
	if err != nil {
		return nil, fmt.Errorf("poller stats bucket %s (run facho streams provision): %w", streams.BucketPollers, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("poller stats bucket %s: %w", streams.BucketPollers, err)
	}
	every := p.cfg.StatsEvery
	if ttl := st.TTL(); ttl > 0 && every > ttl/3 {
		// Three writes per TTL, so one lost write does not drop a live
		// process from the list.
		every = ttl / 3
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.publishStats(pctx, kv, every)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}, nil
}

// publishStats writes the snapshot every interval and soon after a status
// change, until ctx ends; then it deletes the key.
func (p *poller) publishStats(ctx context.Context, kv jetstream.KeyValue, every time.Duration) {
	key := p.cfg.PollerID
	log := p.log.With().Str("bucket", streams.BucketPollers).Logger()
	tick := time.NewTicker(every)
	defer tick.Stop()
	p.stats.sample()
	p.putStats(ctx, kv, key, log)
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalPublishTimeout)
			defer cancel()
			if err := kv.Delete(dctx, key); err != nil {
				log.Warn().Err(err).Msg("delete poller state")
			}
			return
		case <-tick.C:
			p.stats.sample()
		case <-p.stats.changed:
			// Coalesce a burst of changes.
			sleep(ctx, statsMinGap)
		}
		if ctx.Err() == nil {
			p.putStats(ctx, kv, key, log)
		}
	}
}

func (p *poller) putStats(ctx context.Context, kv jetstream.KeyValue, key string, log zerolog.Logger) {
	b, err := json.Marshal(p.stats.snapshot())
	if err != nil {
		log.Error().Err(err).Msg("encode poller state")
		return
	}
	pctx, cancel := context.WithTimeout(ctx, finalPublishTimeout)
	defer cancel()
	if _, err := kv.Put(pctx, key, b); err != nil && ctx.Err() == nil {
		log.Warn().Err(err).Msg("publish poller state")
	}
}
