package jsrouter

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of one message, the outcome label of
// facho_consumer_messages_total. The router sets acked, nacked and
// dead_lettered; a handler names a finer success with Msg.SetOutcome.
const (
	OutcomeAcked        = "acked"         // handled, nothing finer said
	OutcomeApplied      = "applied"       // changed a read model
	OutcomeSkipped      = "skipped"       // already applied: redelivery, duplicate, replay
	OutcomeIgnored      = "ignored"       // nothing for this consumer to do (an event type it does not use)
	OutcomeNacked       = "nacked"        // failed for now; redelivered later
	OutcomeDeadLettered = "dead_lettered" // sent to facho.dlq.<consumer>
)

// metrics are the per-consumer metrics of every Facho consumer; services
// keep only their domain metrics.
type metrics struct {
	handled       *prometheus.CounterVec
	deadLettered  *prometheus.CounterVec
	gaveUp        *prometheus.CounterVec
	waiting       *prometheus.GaugeVec
	outageRetries *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	// pending and lag: how far behind its stream the consumer is, as of
	// the last message it handled.
	pending *prometheus.GaugeVec
	lag     *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_consumer_messages_total",
			Help: "Messages handled per durable consumer and outcome (acked, applied, skipped, ignored, nacked, dead_lettered).",
		}, []string{"consumer", "outcome"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_consumer_dead_letters_total",
			Help: "Messages sent to the dead-letter subject per consumer.",
		}, []string{"consumer"}),
		gaveUp: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_consumer_gave_up_total",
			Help: "Messages dead-lettered because they kept failing with the dependency healthy, or were delivered too often, per consumer.",
		}, []string{"consumer"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "facho_consumer_dependency_unavailable",
			Help: "1 while the consumer holds a message because its dependency (the database) is unavailable.",
		}, []string{"consumer"}),
		outageRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_consumer_outage_retries_total",
			Help: "Tries of a held message while the dependency was unavailable (not counted toward the delivery bound).",
		}, []string{"consumer"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "facho_consumer_handle_seconds",
			Help:    "Time to handle one message, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"consumer"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "facho_consumer_pending_messages",
			Help: "Messages of the stream not yet delivered to the consumer, as of the last message it handled (0: caught up).",
		}, []string{"consumer"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "facho_consumer_lag_seconds",
			Help: "Age of the last message the consumer handled, when it ended, while messages were still pending behind it (0: caught up).",
		}, []string{"consumer"}),
	}
	if reg == nil {
		return m, nil
	}
	err := errors.Join(Register(reg, &m.handled), Register(reg, &m.deadLettered), Register(reg, &m.gaveUp),
		Register(reg, &m.waiting), Register(reg, &m.outageRetries), Register(reg, &m.duration),
		Register(reg, &m.pending), Register(reg, &m.lag))
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Register registers *c on reg or, when a collector of the same name is
// already there (a service restarted in the same process, or two routers
// sharing a registry), points *c at that one so both count together.
// Services use it for their own metrics too.
func Register[T prometheus.Collector](reg prometheus.Registerer, c *T) error {
	err := reg.Register(*c)
	if err == nil {
		return nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			*c = existing
			return nil
		}
	}
	return fmt.Errorf("register metrics: %w", err)
}
