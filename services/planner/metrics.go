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
	queued       prometheus.Gauge
	inFlight     prometheus.Gauge
	stuck        prometheus.Counter
	aborted      prometheus.Counter
	retried      prometheus.Counter
	manual       prometheus.Counter
	leader       prometheus.Gauge
	late         *prometheus.GaugeVec
	disabled     prometheus.Gauge
	terms        prometheus.Counter
	disabledOLTs prometheus.Counter
	// finishToDispatch: from an execution's terminal event to the dispatch
	// of its OLT's next waiting node.
	finishToDispatch prometheus.Histogram
	// classes: the backlog and capacity per queue class (classreport.go).
	classes classMetrics
	// The OLTs' availability (availability.go).
	unavailable        prometheus.Gauge
	skippedUnavailable prometheus.Counter
	// onuLookups: lookups of whether a held get's OLT has an ONU known
	// (getfirst.go), each a few JetStream requests.
	onuLookups prometheus.Counter
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
			Name: "facho_planner_nodes_delayed", Help: "Waiting nodes found delayed at the last tick.",
		}),
		delayedTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_nodes_delayed_total", Help: "NodeDue events emitted for delayed nodes.",
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "facho_planner_delay_seconds", Help: "Dispatch lateness: how late a node was when its NodeDue was dispatched (its wait in the OLT's queue included).",
			Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900},
		}),
		configEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_planner_config_events_total", Help: "Configuration events read, by result (applied, unknown, ignored: not the planner's (silences), malformed, wrong_subject).",
		}, []string{"result"}),
		publishErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_publish_errors_total", Help: "Failed publishes of NodeDue or audit events.",
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_planner_queue_depth", Help: "Due nodes waiting in their OLT's queue for the node in flight to end.",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_planner_olts_in_flight", Help: "OLTs with a node dispatched and not yet ended.",
		}),
		aborted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_executions_aborted_total", Help: "Waiting or dispatched runs aborted because their task or OLT left the plan.",
		}),
		late: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "facho_planner_queue_late", Help: "Waiting nodes late by more than late_by, per queue class (the queue report's delay buckets).",
		}, []string{"class", "late_by"}),
		disabled: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_planner_olts_disabled", Help: "OLTs disabled now (by a person or after consecutive failures).",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_planner_leader", Help: "1 while this replica holds the leader lease and plans, 0 while it stands by.",
		}),
		terms: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_leader_terms_total", Help: "Times this replica became the active planner.",
		}),
		manual: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_manual_runs_total", Help: "Manual runs dispatched.",
		}),
		retried: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_retries_total", Help: "Failed attempts retried after the backoff.",
		}),
		disabledOLTs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_olts_auto_disabled_total", Help: "OLTs disabled after consecutive failed executions.",
		}),
		stuck: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_flights_stuck_total", Help: "Flights freed because their terminal event never came.",
		}),
		finishToDispatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "facho_planner_finish_to_dispatch_seconds", Help: "From an execution's terminal event to the dispatch of its OLT's next waiting node.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
		}),
		unavailable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_planner_olts_unavailable", Help: "OLTs the availability service says are unavailable: their due nodes are skipped.",
		}),
		onuLookups: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_onu_lookups_total", Help: "Lookups of whether an OLT whose get is held for its first discovery has an ONU known yet.",
		}),
		skippedUnavailable: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_planner_skipped_unavailable_total", Help: "Due nodes skipped (not dispatched) because their OLT was unavailable.",
		}),
	}
	m.classes = newClassMetrics()
	for _, c := range m.classes.all() {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register planner metrics: %w", err)
		}
	}
	for _, c := range []prometheus.Collector{m.unavailable, m.skippedUnavailable, m.onuLookups, m.planned, m.dueEmitted, m.delayed, m.delayedTotal, m.delay, m.configEvents, m.publishErrs,
		m.queued, m.inFlight, m.stuck, m.aborted, m.retried, m.manual, m.leader, m.late, m.disabled, m.terms, m.disabledOLTs, m.finishToDispatch} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register planner metrics: %w", err)
		}
	}
	return m, nil
}
