package jsrouter_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/jsrouter/jsroutertest"
	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/streams"
)

// The outcome label is acked unless the handler names a finer one; two
// routers on one registry count together instead of failing to register.
func TestOutcomeMetrics(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	publish(t, env.JS, streams.SubjectExec("olt-1", streams.PhaseStarted), 3)
	reg := prometheus.NewRegistry()
	jsroutertest.New(t, env.JS, reg) // registers first; the next one adopts its collectors
	r := jsroutertest.New(t, env.JS, reg)
	r.Handle(streams.StreamExec, streams.ConsumerProjectorExec, func(ctx context.Context, m jsrouter.Msg) error {
		if m.Seq == 2 {
			m.SetOutcome(jsrouter.OutcomeIgnored)
		}
		return nil
	})
	jsroutertest.Run(t, r)
	jsroutertest.Eventually(t, "3 outcomes", func() bool {
		o := jsroutertest.Outcomes(t, reg, streams.ConsumerProjectorExec)
		return o[jsrouter.OutcomeAcked] == 2 && o[jsrouter.OutcomeIgnored] == 1
	})
}

func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})
	if err := jsrouter.Register(reg, &first); err != nil {
		t.Fatal(err)
	}
	again := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})
	if err := jsrouter.Register(reg, &again); err != nil || again != first {
		t.Fatalf("Register did not adopt the registered counter: %v", err)
	}
	clash := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "other"}, []string{"l"})
	if err := jsrouter.Register(reg, &clash); err == nil {
		t.Fatal("Register accepted a different collector under a taken name")
	}
}

// gauge reads a gauge of consumer (-1: no such series).
func gauge(t *testing.T, g prometheus.Gatherer, name, consumer string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "consumer" && l.GetValue() == consumer {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// A consumer behind its stream shows pending messages and a lag; caught
// up, both are 0.
func TestLagMetrics(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	publish(t, env.JS, streams.SubjectExec("olt-1", streams.PhaseStarted), 20)
	reg := prometheus.NewRegistry()
	r := jsroutertest.New(t, env.JS, reg)
	type seen struct{ pending, lag float64 }
	behind := make(chan seen, 1)
	r.Handle(streams.StreamExec, streams.ConsumerProjectorExec, func(ctx context.Context, m jsrouter.Msg) error {
		if m.Seq == 2 { // the gauges as message 1 left them
			behind <- seen{gauge(t, reg, "facho_consumer_pending_messages", m.Consumer), gauge(t, reg, "facho_consumer_lag_seconds", m.Consumer)}
		}
		return nil
	})
	jsroutertest.Run(t, r)
	s := <-behind
	if s.pending < 1 || s.lag <= 0 {
		t.Errorf("after message 1 of 20: pending %v, lag %v s; want both > 0", s.pending, s.lag)
	}
	jsroutertest.Eventually(t, "caught up", func() bool {
		return jsroutertest.Total(jsroutertest.Outcomes(t, reg, streams.ConsumerProjectorExec)) == 20 &&
			gauge(t, reg, "facho_consumer_pending_messages", streams.ConsumerProjectorExec) == 0 &&
			gauge(t, reg, "facho_consumer_lag_seconds", streams.ConsumerProjectorExec) == 0
	})
}
