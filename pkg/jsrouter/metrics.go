package jsrouter

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	handled      *prometheus.CounterVec
	deadLettered *prometheus.CounterVec
	duration     *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_consumer_messages_total",
			Help: "Messages handled per durable consumer and outcome (acked, nacked, dead_lettered).",
		}, []string{"consumer", "outcome"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_consumer_dead_letters_total",
			Help: "Messages sent to the dead-letter subject per consumer.",
		}, []string{"consumer"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "facho_consumer_handle_seconds",
			Help:    "Time to handle one message, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"consumer"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.handled, err = register(reg, m.handled); err != nil {
		return nil, err
	}
	if m.deadLettered, err = register(reg, m.deadLettered); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
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
