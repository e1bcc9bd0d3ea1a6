package availability

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	olts        *prometheus.GaugeVec
	available   *prometheus.GaugeVec
	probeTime   prometheus.Histogram
	probes      *prometheus.CounterVec
	skipped     *prometheus.CounterVec
	changes     *prometheus.CounterVec
	publishErrs prometheus.Counter
	autoEnabled prometheus.Counter
	leader      prometheus.Gauge
	observed    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		olts: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "facho_availability_olts", Help: "Probed OLTs by availability state (available, unreachable, unavailable, unknown: not probed yet).",
		}, []string{"state"}),
		available: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "facho_olt_available", Help: "1 while the OLT is available (answers), 0 while unreachable or unavailable; absent until its first probe.",
		}, []string{"olt_id"}),
		probeTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "facho_availability_probe_duration_seconds", Help: "Duration of one probe (sysUpTime GET, its retries included).",
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10},
		}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_availability_probes_total", Help: "Probes by result (answered, no_answer).",
		}, []string{"result"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_availability_probes_skipped_total",
			Help: "Probes not sent, by reason: olt_busy (another holder, a poller's walk, had the OLT's lease), lease_error (the lease bucket did not answer), lease_lost (the lease was lost during the probe). A skipped probe changes no state.",
		}, []string{"reason"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_availability_changes_total", Help: "Availability changes published, by new state.",
		}, []string{"state"}),
		publishErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_availability_publish_errors_total", Help: "Failed publishes (retried at the next tick).",
		}),
		autoEnabled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_availability_auto_enabled_total", Help: "Auto-disabled OLTs re-enabled after their recovery probes.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_availability_leader", Help: "1 while this replica holds the leader lease and probes.",
		}),
		observed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_availability_execution_outcomes_total", Help: "Execution outcomes read, by what they say of the OLT (answered, no_answer, ignored).",
		}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{m.olts, m.available, m.probeTime, m.probes, m.skipped, m.changes, m.publishErrs, m.autoEnabled, m.leader, m.observed} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("availability: register metrics: %w", err)
		}
	}
	for _, r := range []string{SkipOLTBusy, SkipLeaseError, SkipLeaseLost} {
		m.skipped.WithLabelValues(r) // exported at 0 from the start
	}
	return m, nil
}
