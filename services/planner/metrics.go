package planner

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	planned      prometheus.Gauge
	dueEmitted   prometheus.Counter
	delayed      prometheus.Gauge
	delayedTotal prometheus.Counter
	delay        prometheus.Histogram
	configEvents *prometheus.CounterVec
	publishErrs  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		planned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_planner_nodes_planned", Help: "Nodes (job on OLT) currently planned.",
		}),
		dueEmitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_nodes_due_total", Help: "NodeDue events emitted.",
		}),
		delayed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_planner_nodes_delayed", Help: "Due nodes found delayed at the last tick.",
		}),
		delayedTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_nodes_delayed_total", Help: "NodeDue events emitted for delayed nodes.",
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "facho_planner_delay_seconds", Help: "How late a node was when its NodeDue was emitted.",
			Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900},
		}),
		configEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_planner_config_events_total", Help: "Configuration events read, by result (applied, unknown, malformed, wrong_subject).",
		}, []string{"result"}),
		publishErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_publish_errors_total", Help: "Failed publishes of NodeDue or audit events.",
		}),
	}
	for _, c := range []prometheus.Collector{m.planned, m.dueEmitted, m.delayed, m.delayedTotal, m.delay, m.configEvents, m.publishErrs} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register planner metrics: %w", err)
		}
	}
	return m, nil
}
