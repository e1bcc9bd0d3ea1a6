package projector

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	events          *prometheus.CounterVec
	applySeconds    *prometheus.HistogramVec
	onuRows         prometheus.Counter
	varbindsSkipped *prometheus.CounterVec
	staleExec       prometheus.Counter
	onuEvents       *prometheus.CounterVec
	outboxFailures  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_events_total",
			Help: "Stream messages per consumer: applied, or skipped as already applied (duplicate or redelivery). Dead letters are in facho_consumer_dead_letters_total.",
		}, []string{"consumer", "result"}),
		applySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "facho_projector_apply_seconds",
			Help:    "Time to apply one message (transaction included).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"consumer"}),
		onuRows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_onu_rows_upserted_total",
			Help: "onu_data rows inserted or updated.",
		}),
		varbindsSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_varbinds_skipped_total",
			Help: "Varbinds that fed no field, by reason (unknown_column, bad_index, undecodable, no_value, unknown_field).",
		}, []string{"reason"}),
		staleExec: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_stale_execution_events_total",
			Help: "Execution events ignored: an older lease revision (stale poller) or a state that would move backwards.",
		}),
		onuEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_onu_events_total",
			Help: "ONU-change events written to the outbox, by change (discovered, status, updated).",
		}, []string{"change"}),
		outboxFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_outbox_publish_failures_total",
			Help: "Rounds of ONU-change publishing that failed and will be retried.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.events, err = register(reg, m.events); err != nil {
		return nil, err
	}
	if m.applySeconds, err = register(reg, m.applySeconds); err != nil {
		return nil, err
	}
	if m.onuRows, err = register(reg, m.onuRows); err != nil {
		return nil, err
	}
	if m.varbindsSkipped, err = register(reg, m.varbindsSkipped); err != nil {
		return nil, err
	}
	if m.staleExec, err = register(reg, m.staleExec); err != nil {
		return nil, err
	}
	if m.onuEvents, err = register(reg, m.onuEvents); err != nil {
		return nil, err
	}
	if m.outboxFailures, err = register(reg, m.outboxFailures); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or adopts the collector already registered under
// the same name (a service restarted in the same process).
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("register metrics: %w", err)
	}
	return c, nil
}
