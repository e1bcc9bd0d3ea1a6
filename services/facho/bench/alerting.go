package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/facho-olt/facho/streams"
)

// Alerting is what the alerter did in the run: the evaluation of every
// onu.changed the projector published, by the facho-alerter process as
// production runs it. Steady* cover cycles 2..K only (from when the
// alerter had evaluated cycle 1, the first discovery's burst of new ONUs,
// to when it had evaluated the last cycle).
type Alerting struct {
	// StatusChurnPercent: the simulator took this share of the ONUs
	// offline or back online every interval (0: no status changes).
	StatusChurnPercent float64 `json:"status_churn_percent"`
	// ONUEvents: onu.changed events the alerter applied over the run.
	ONUEvents  int64   `json:"onu_events"`
	LagP50     float64 `json:"lag_p50_seconds"`
	LagP99     float64 `json:"lag_p99_seconds"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// Steady: cycles 2..K (0 when the alerter never caught up after
	// cycle 1 before the end, or one cycle was measured).
	SteadyONUEvents     int64   `json:"steady_onu_events"`
	SteadyLagP50        float64 `json:"steady_lag_p50_seconds"`
	SteadyLagP99        float64 `json:"steady_lag_p99_seconds"`
	SteadyCPUUSPerEvent float64 `json:"steady_cpu_us_per_event"`
	// Transitions: alert events decided over the run, by state (firing,
	// resolved, updated).
	Transitions map[string]float64 `json:"transitions"`
	// PendingAtEnd: onu.changed events the alerter had not evaluated when
	// the bench stopped waiting for it (0: caught up).
	PendingAtEnd uint64 `json:"pending_at_end"`
	// AboveTopBucket names the lag figures (p50, p99, steady_p50,
	// steady_p99) whose quantile fell above the histogram's highest finite
	// bucket: the figure is that bound, and the lag was longer.
	AboveTopBucket []string `json:"lag_above_top_bucket,omitempty"`
}

// alerterSnap is the alerter's metrics and CPU at one moment.
type alerterSnap struct {
	lag         []lagBucket // cumulative; the last one is the sample count (le +Inf)
	applied     float64
	transitions map[string]float64
	cpu         float64
}

type lagBucket struct {
	le    float64
	count uint64
}

// alerterProc is the facho-alerter process of the run (nil: none).
func (r *run) alerterProc() *proc {
	for _, p := range r.procs {
		if p.name == "alerter" {
			return p
		}
	}
	return nil
}

// alerterSnapshot scrapes the alerter's /metrics and reads its CPU.
func (m *monitor) alerterSnapshot(ctx context.Context) (alerterSnap, error) {
	s := alerterSnap{transitions: map[string]float64{}}
	p := m.r.alerterProc()
	if p == nil {
		return s, errors.New("no alerter process")
	}
	body, err := fetch(ctx, "http://"+p.httpAddr+"/metrics")
	if err != nil {
		return s, fmt.Errorf("scrape the alerter: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return s, fmt.Errorf("parse the alerter's metrics: %w", err)
	}
	if mf := mfs["facho_alerter_onu_lag_seconds"]; mf != nil && len(mf.GetMetric()) > 0 {
		h := mf.GetMetric()[0].GetHistogram()
		for _, b := range h.GetBucket() {
			s.lag = append(s.lag, lagBucket{b.GetUpperBound(), b.GetCumulativeCount()})
		}
		s.lag = append(s.lag, lagBucket{math.Inf(1), h.GetSampleCount()})
	}
	if mf := mfs["facho_alerter_onu_events_total"]; mf != nil {
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == "applied" {
					s.applied += mt.GetCounter().GetValue()
				}
			}
		}
	}
	if mf := mfs["facho_alerter_transitions_total"]; mf != nil {
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "state" {
					s.transitions[l.GetValue()] += mt.GetCounter().GetValue()
				}
			}
		}
	}
	u, err := readUsage(p.cmd.Process.Pid, false)
	if err != nil {
		return s, err
	}
	s.cpu = u.CPUSeconds
	return s, nil
}

// lagQuantile is the upper bound of the histogram bucket holding quantile
// q of the samples added between before and after (-1: no sample).
func lagQuantile(after, before []lagBucket, q float64) float64 {
	if len(after) == 0 {
		return -1
	}
	sub := func(i int) uint64 {
		if i < len(before) {
			return after[i].count - before[i].count
		}
		return after[i].count
	}
	total := sub(len(after) - 1)
	if total == 0 {
		return -1
	}
	for i := 0; i < len(after)-1; i++ {
		if float64(sub(i)) >= q*float64(total) {
			return after[i].le
		}
	}
	return after[len(after)-1].le
}

// alerterPending is how many onu.changed events the alerter's consumer has
// not acknowledged yet (delivered or not).
func (m *monitor) alerterPending(ctx context.Context) (uint64, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := m.r.js.Consumer(cctx, streams.StreamONU, streams.ConsumerAlerterONU)
	if err != nil {
		return 0, fmt.Errorf("alerter consumer: %w", err)
	}
	info, err := c.Info(cctx)
	if err != nil {
		return 0, fmt.Errorf("alerter consumer info: %w", err)
	}
	return info.NumPending + uint64(info.NumAckPending), nil
}

// alerterCaughtUp snapshots the alerter once it has evaluated everything
// published so far; false when it has not yet.
func (m *monitor) alerterCaughtUp(ctx context.Context) (alerterSnap, bool) {
	if n, err := m.alerterPending(ctx); err != nil || n > 0 {
		return alerterSnap{}, false
	}
	s, err := m.alerterSnapshot(ctx)
	if err != nil {
		m.r.cfg.Log.Warn().Err(err).Msg("alerter snapshot")
		return alerterSnap{}, false
	}
	return s, true
}

// alertingFigures waits (at most wait) for the alerter to evaluate what
// the run published, then fills m.res.Alerting from the end snapshot and
// the one taken when cycle 1 had been evaluated (steady, when ok).
func (m *monitor) alertingFigures(ctx context.Context, steadyFrom alerterSnap, steadyOK bool, wait time.Duration) {
	if m.r.alerterProc() == nil {
		return
	}
	a := &Alerting{StatusChurnPercent: m.r.cfg.StatusChurnPercent}
	m.res.Alerting = a
	deadline := time.Now().Add(wait)
	for {
		n, err := m.alerterPending(ctx)
		if err == nil && n == 0 {
			break
		}
		a.PendingAtEnd = n
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		m.r.progress.set(fmt.Sprintf("waiting for the alerter: %d onu.changed events to evaluate", n))
		time.Sleep(time.Second)
	}
	end, err := m.alerterSnapshot(ctx)
	if err != nil {
		m.r.cfg.Log.Warn().Err(err).Msg("alerter figures")
		return
	}
	a.ONUEvents = int64(end.applied)
	defer a.finiteLags(end.lag)
	a.LagP50, a.LagP99 = lagQuantile(end.lag, nil, 0.5), lagQuantile(end.lag, nil, 0.99)
	a.CPUSeconds = end.cpu
	a.Transitions = end.transitions
	if steadyOK && m.r.cfg.Cycles > 1 {
		a.SteadyONUEvents = int64(end.applied - steadyFrom.applied)
		a.SteadyLagP50 = lagQuantile(end.lag, steadyFrom.lag, 0.5)
		a.SteadyLagP99 = lagQuantile(end.lag, steadyFrom.lag, 0.99)
		if a.SteadyONUEvents > 0 {
			a.SteadyCPUUSPerEvent = (end.cpu - steadyFrom.cpu) * 1e6 / float64(a.SteadyONUEvents)
		}
	}
}

// finiteLags rewrites the lag quantiles that fell in the +Inf bucket (JSON
// has no infinity) as the highest finite bound of lag, naming them in
// AboveTopBucket.
func (a *Alerting) finiteLags(lag []lagBucket) {
	top := -1.0
	for _, b := range lag {
		if !math.IsInf(b.le, 1) {
			top = max(top, b.le)
		}
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"p50", &a.LagP50}, {"p99", &a.LagP99}, {"steady_p50", &a.SteadyLagP50}, {"steady_p99", &a.SteadyLagP99}} {
		if math.IsInf(*f.v, 1) {
			*f.v = top
			a.AboveTopBucket = append(a.AboveTopBucket, f.name)
		}
	}
}

// write prints the alerting figures (nothing without an alerter).
func (a *Alerting) write(w io.Writer) {
	if a == nil {
		return
	}
	fmt.Fprintf(w, "\nalerting (facho-alerter; status churn %g %% of the ONUs per interval):\n", a.StatusChurnPercent)
	q := func(name string, v float64) string {
		if slices.Contains(a.AboveTopBucket, name) {
			return "> " + seconds(v) + " (above the top bucket)"
		}
		return "<= " + seconds(v)
	}
	fmt.Fprintf(w, "  whole run: %d onu.changed evaluated, lag poll -> evaluated p50 %s, p99 %s, alerter CPU %.1f s\n",
		a.ONUEvents, q("p50", a.LagP50), q("p99", a.LagP99), a.CPUSeconds)
	if a.SteadyONUEvents > 0 {
		fmt.Fprintf(w, "  cycles 2..K: %d onu.changed evaluated, lag p50 %s, p99 %s, %.0f µs of alerter CPU per event\n",
			a.SteadyONUEvents, q("steady_p50", a.SteadyLagP50), q("steady_p99", a.SteadyLagP99), a.SteadyCPUUSPerEvent)
	} else {
		fmt.Fprintln(w, "  cycles 2..K: not measured (one cycle, or the alerter had not evaluated cycle 1 before the end)")
	}
	if len(a.Transitions) > 0 {
		states := make([]string, 0, len(a.Transitions))
		for st, n := range a.Transitions {
			states = append(states, fmt.Sprintf("%s %.0f", st, n))
		}
		sort.Strings(states)
		fmt.Fprintf(w, "  alert events decided: %s\n", strings.Join(states, ", "))
	}
	if a.PendingAtEnd > 0 {
		fmt.Fprintf(w, "  NOT CAUGHT UP: %d onu.changed events not evaluated when the bench stopped waiting\n", a.PendingAtEnd)
	}
}

func seconds(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f s", v)
}
