package poller

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of one poller instance, registered on Deps.Registry.
type metrics struct {
	executions  *prometheus.CounterVec // by result
	duration    *prometheus.HistogramVec
	varbinds    prometheus.Counter
	batches     prometheus.Counter
	leaseBusy   prometheus.Counter
	skipped     prometheus.Counter
	deadLetters prometheus.Counter
	workers     int
	busy        atomic.Int64
	busySeconds prometheus.Counter
	inFlight    prometheus.Gauge
	pduRetries  prometheus.Counter
	// boundsExceeded counts executions ended by a bound, by bound;
	// valuesTruncated the values cut to value_bytes (bounds.go).
	boundsExceeded  *prometheus.CounterVec
	valuesTruncated prometheus.Counter
	// health counts the health readings published (health.go).
	health prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, pollerID string, workers int) (*metrics, error) {
	constLabels := prometheus.Labels{"poller_id": pollerID}
	m := &metrics{
		workers: workers,
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_poller_executions_total", Help: "Executions finished, by result (success, failed, lease_lost, shutdown).",
			ConstLabels: constLabels,
		}, []string{"result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "facho_poller_execution_duration_seconds", Help: "Duration of executions under the lease, by job kind.",
			ConstLabels: constLabels, Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}, []string{"kind"}),
		varbinds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_poller_varbinds_read_total", Help: "Varbinds read from OLTs.", ConstLabels: constLabels,
		}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_poller_varbind_batches_published_total", Help: "VarbindBatch events published.", ConstLabels: constLabels,
		}),
		leaseBusy: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_poller_lease_busy_total", Help: "NodeDue put back because their OLT's lease was held.", ConstLabels: constLabels,
		}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_poller_nodes_skipped_total", Help: "Stale NodeDue not run (now > scheduled_at + interval: a newer run supersedes them), published as execution.skipped.", ConstLabels: constLabels,
		}),
		deadLetters: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_poller_dead_letters_total", Help: "Malformed NodeDue sent to the dead-letter subject.", ConstLabels: constLabels,
		}),
		busySeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_poller_worker_busy_seconds_total", Help: "Worker time spent handling NodeDue; busy ratio = rate(this) / facho_poller_workers.", ConstLabels: constLabels,
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_poller_operations_in_flight", Help: "SNMP operations running under a lease now.", ConstLabels: constLabels,
		}),
		pduRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_poller_snmp_pdu_retries_total", Help: "SNMP requests sent again after they got no usable answer (FACHO_SNMP_PDU_RETRIES); each execution logs its own count as pdu_retries.", ConstLabels: constLabels,
		}),
		boundsExceeded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_poller_bounds_exceeded_total", Help: "Executions ended FAILED (cause bound_exceeded) because the OLT sent more than a bound allows, by bound (rows_per_table, onus_per_pon, onus_per_olt, varbinds_per_execution, bytes_per_execution).", ConstLabels: constLabels,
		}, []string{"bound"}),
		valuesTruncated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_poller_values_truncated_total", Help: "Values from OLTs longer than the value_bytes bound, cut to it; each execution logs its own count as values_truncated.", ConstLabels: constLabels,
		}),
	}
	m.health = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "facho_poller_health_readings_total", Help: "OLT health readings published (olt.health), one per successful health job.", ConstLabels: constLabels,
	})
	workersGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "facho_poller_workers", Help: "Configured workers.", ConstLabels: constLabels,
	}, func() float64 { return float64(m.workers) })
	busyGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "facho_poller_workers_busy", Help: "Workers handling a NodeDue now.", ConstLabels: constLabels,
	}, func() float64 { return float64(m.busy.Load()) })
	busyRatio := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "facho_poller_worker_busy_ratio", Help: "Busy workers / workers right now (saturated above 0.75).", ConstLabels: constLabels,
	}, m.busyRatio)
	for _, c := range []prometheus.Collector{m.executions, m.duration, m.varbinds, m.batches, m.leaseBusy, m.skipped, m.deadLetters, workersGauge, busyGauge, m.busySeconds, m.inFlight, busyRatio, m.pduRetries, m.boundsExceeded, m.valuesTruncated, m.health} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register poller metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) busyRatio() float64 {
	if m.workers == 0 {
		return 0
	}
	return float64(m.busy.Load()) / float64(m.workers)
}
