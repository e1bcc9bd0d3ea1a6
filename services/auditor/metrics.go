package auditor

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/jsrouter"
)

// metrics are the auditor's own; per-consumer outcomes (applied, skipped,
// ignored, nacked, dead_lettered) are pkg/jsrouter's facho_consumer_*.
type metrics struct {
	deleted    prometheus.Counter
	fileErrors prometheus.Counter
	// Quotas and notifications (quota_metrics.go).
	trackersChecked *prometheus.CounterVec
	notifications   *prometheus.CounterVec
	deliveries      *prometheus.CounterVec
	compliance      prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_auditor_cleanup_deleted_total", Help: "coordinator_logs rows deleted by the retention cleanup.",
		}),
		fileErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_auditor_file_errors_total", Help: "Failed writes to the coordinator log file.",
		}),
	}
	newQuotaMetrics(m)
	if reg == nil {
		return m, nil
	}
	if err := errors.Join(jsrouter.Register(reg, &m.deleted), jsrouter.Register(reg, &m.fileErrors), registerQuotaMetrics(reg, m)); err != nil {
		return nil, err
	}
	return m, nil
}
