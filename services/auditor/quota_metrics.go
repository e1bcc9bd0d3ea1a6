package auditor

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/jsrouter"
)

func newQuotaMetrics(m *metrics) {
	m.trackersChecked = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facho_quota_trackers_checked_total", Help: "Hourly quota trackers closed by the check, by final status (QUOTA_NOT_MET ones are violations).",
	}, []string{"status"})
	m.notifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facho_notifications_published_total", Help: "Notifications published on facho.notify.<kind>.<olt>, by kind.",
	}, []string{"kind"})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facho_webhook_deliveries_total", Help: "Webhook delivery attempts by resulting status (delivered, pending: retried later, failed: given up).",
	}, []string{"status"})
	m.compliance = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "facho_quota_compliance_ratio", Help: "Compliance (completed / required, at most 1) of the hourly quota trackers closed by the check, INTERRUPTED ones excepted.",
		Buckets: []float64{0.3, 0.55, 0.7, 0.8, 0.9, 0.99, 1},
	})
}

func registerQuotaMetrics(reg prometheus.Registerer, m *metrics) error {
	return errors.Join(jsrouter.Register(reg, &m.trackersChecked), jsrouter.Register(reg, &m.notifications), jsrouter.Register(reg, &m.deliveries), jsrouter.Register(reg, &m.compliance))
}
