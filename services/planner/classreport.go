package planner

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/streams"
)

// AddClasses completes a queue report with the backlog per queue class and
// makes its totals count everything due and not started: r.Waiting (the
// nodes waiting in the planner, r.Size as Report left it) plus the NodeDue
// dispatched and not yet taken by a poller slot. capacity and running are
// the live pollers' slots per class and those of them BUSY; a class absent
// from capacity has no known capacity (the planner does not limit it). A
// class is saturated when its flights fill its capacity, overloaded when
// saturated with a node late by over 5 s waiting, or when more of its
// nodes are late by over 5 s than overloadAt; the report is overloaded
// when any class is.
func AddClasses(r *streams.QueueReport, q *Queues, capacity, running map[string]int, overloadAt int) {
	waiting := q.WaitingByClass()
	r.Waiting = r.Size
	r.DispatchedWaiting = 0
	r.Classes = map[string]streams.ClassQueue{}
	for _, c := range streams.Classes() {
		cq := streams.ClassQueue{Waiting: waiting[c], Dispatched: q.InFlightClass(c)}
		cq.Running = min(running[c], cq.Dispatched)
		cq.DispatchedWaiting = cq.Dispatched - cq.Running
		cq.Size = cq.Waiting + cq.DispatchedWaiting
		cq.Late = r.DelayedClass[c]["5s"]
		if n, known := capacity[c]; known {
			free := max(n-cq.Dispatched, 0)
			cq.Capacity, cq.Free = &n, &free
			cq.IsSaturated = cq.Dispatched >= n
		}
		cq.IsOverload = (cq.IsSaturated && cq.Late > 0) || cq.Late > overloadAt
		r.DispatchedWaiting += cq.DispatchedWaiting
		r.IsOverload = r.IsOverload || cq.IsOverload
		r.Classes[c] = cq
	}
	r.Size = r.Waiting + r.DispatchedWaiting
}

// classMetrics are the per-class gauges of the queue report.
type classMetrics struct {
	waiting, dispatched, dispatchedWaiting, running, capacity, saturated, overload *prometheus.GaugeVec
}

func newClassMetrics() classMetrics {
	g := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"class"})
	}
	return classMetrics{
		waiting:           g("facho_planner_class_waiting", "Due nodes of the queue class waiting in the planner (their OLT busy, or no free slot of the class)."),
		dispatched:        g("facho_planner_class_dispatched", "NodeDue of the queue class dispatched and not ended."),
		dispatchedWaiting: g("facho_planner_class_dispatched_waiting", "NodeDue of the queue class dispatched and not yet run by a poller slot."),
		running:           g("facho_planner_class_running", "Poller slots of the queue class running a node (facho_pollers bucket)."),
		capacity:          g("facho_planner_class_capacity", "Poller slots of the queue class in the live poller processes; -1: unknown (no live poller reports the class: not limited)."),
		saturated:         g("facho_planner_class_saturated", "1 when the queue class's dispatched nodes fill its capacity."),
		overload:          g("facho_planner_class_overload", "1 when the queue class is saturated with a node late by over 5 s waiting, or has more late nodes than the overload threshold."),
	}
}

func (m classMetrics) all() []prometheus.Collector {
	return []prometheus.Collector{m.waiting, m.dispatched, m.dispatchedWaiting, m.running, m.capacity, m.saturated, m.overload}
}

// set exports the per-class figures of a report AddClasses completed.
func (m classMetrics) set(r streams.QueueReport) {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	for c, cq := range r.Classes {
		m.waiting.WithLabelValues(c).Set(float64(cq.Waiting))
		m.dispatched.WithLabelValues(c).Set(float64(cq.Dispatched))
		m.dispatchedWaiting.WithLabelValues(c).Set(float64(cq.DispatchedWaiting))
		m.running.WithLabelValues(c).Set(float64(cq.Running))
		capacity := -1.0
		if cq.Capacity != nil {
			capacity = float64(*cq.Capacity)
		}
		m.capacity.WithLabelValues(c).Set(capacity)
		m.saturated.WithLabelValues(c).Set(b(cq.IsSaturated))
		m.overload.WithLabelValues(c).Set(b(cq.IsOverload))
	}
}
