package auditor

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	entries    *prometheus.CounterVec
	deleted    prometheus.Counter
	fileErrors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		entries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_auditor_messages_total",
			Help: "Messages handled by the auditor, by consumer and result (written, duplicate, skipped, dead_letter, retry).",
		}, []string{"consumer", "result"}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_auditor_cleanup_deleted_total", Help: "coordinator_logs rows deleted by the retention cleanup.",
		}),
		fileErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_auditor_file_errors_total", Help: "Failed writes to the coordinator log file.",
		}),
	}
	for _, c := range []prometheus.Collector{m.entries, m.deleted, m.fileErrors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register auditor metrics: %w", err)
		}
	}
	return m, nil
}
