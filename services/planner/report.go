package planner

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// Queue classes (seed 001).
const (
	classDiscovery = streams.ClassDiscovery
	classPolling   = streams.ClassPolling
	classRetry     = streams.ClassRetry
	classHigh      = streams.ClassHigh
)

// lateBuckets are seed 004's (Zabbix's queue) delay buckets.
var lateBuckets = []struct {
	name string
	d    time.Duration
}{{"5s", 5 * time.Second}, {"10s", 10 * time.Second}, {"30s", 30 * time.Second}, {"1m", time.Minute}, {"5m", 5 * time.Minute}, {"10m", 10 * time.Minute}}

// classOf is the class d will be dispatched in (QueueClass).
func classOf(d DueNode) string { return QueueClass(d.Spec.Kind, d.Retry+1, d.Manual) }

// Report builds the queue report at now from the waiting nodes.
func Report(q *Queues, planned int, now time.Time, overloadAt int) streams.QueueReport {
	waiting := q.Snapshot(now)
	r := streams.QueueReport{GeneratedAt: now.UTC(), Size: len(waiting), InFlight: q.InFlight(), Planned: planned,
		NextNodes: []streams.QueuedNode{}, Delayed: map[string]int{}, DelayedClass: map[string]map[string]int{}, DelayedOLT: map[string]map[string]int{}}
	for _, b := range lateBuckets {
		r.Delayed[b.name] = 0
	}
	for _, c := range []string{classDiscovery, classPolling, classRetry, classHigh} {
		r.DelayedClass[c] = map[string]int{}
		for _, b := range lateBuckets {
			r.DelayedClass[c][b.name] = 0
		}
	}
	perOLT := map[string]map[string]int{}
	for i, d := range waiting {
		class := classOf(d)
		if i < 10 {
			r.NextNodes = append(r.NextNodes, streams.QueuedNode{NodeID: d.Key.NodeID(), OLTID: d.Key.OLTID, JobID: d.Key.JobID,
				DueAt: d.ScheduledAt.UTC(), DelaySeconds: d.Delay.Seconds(), Priority: d.Spec.Priority, Class: class})
		}
		for _, b := range lateBuckets {
			if d.Delay <= b.d {
				break
			}
			r.Delayed[b.name]++
			r.DelayedClass[class][b.name]++
			if perOLT[d.Key.OLTID] == nil {
				perOLT[d.Key.OLTID] = map[string]int{}
			}
			perOLT[d.Key.OLTID][b.name]++
		}
	}
	olts := make([]string, 0, len(perOLT))
	for o := range perOLT {
		olts = append(olts, o)
	}
	sort.Slice(olts, func(i, j int) bool {
		a, b := perOLT[olts[i]]["5s"], perOLT[olts[j]]["5s"]
		if a != b {
			return a > b
		}
		return olts[i] < olts[j]
	})
	for _, o := range olts[:min(len(olts), 100)] {
		r.DelayedOLT[o] = perOLT[o]
	}
	r.IsOverload = r.Delayed["5s"] > overloadAt
	return r
}

// overloadAt is how many waiting nodes late by over 5 s make the queue
// overloaded: 5% of the planned nodes, at least 10.
func overloadAt(planned int) int { return max(10, planned/20) }

// publishReport writes the queue report for the API and the queue
// metrics; a failure is logged at debug level (the next tick rewrites it).
func (p *planner) publishReport(ctx context.Context, leader jetstream.KeyValue, now time.Time) {
	r := Report(p.queues, p.sched.Len(), now, overloadAt(p.sched.Len()))
	r.Planner = p.cfg.Instance
	capacity, running, _ := p.pollers.classSlots(now)
	AddClasses(&r, p.queues, capacity, running, overloadAt(p.sched.Len()))
	p.m.classes.set(r)
	for class, buckets := range r.DelayedClass {
		for b, n := range buckets {
			p.m.late.WithLabelValues(class, b).Set(float64(n))
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
	defer cancel()
	if _, err := leader.Put(pctx, streams.QueueKey, b); err != nil {
		p.log.Debug().Err(err).Msg("write queue report")
	}
}
