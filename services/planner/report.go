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
var lateBuckets = [...]struct {
	name string
	d    time.Duration
}{{"5s", 5 * time.Second}, {"10s", 10 * time.Second}, {"30s", 30 * time.Second}, {"1m", time.Minute}, {"5m", 5 * time.Minute}, {"10m", 10 * time.Minute}}

// classOf is the class d will be dispatched in (QueueClass).
func classOf(d DueNode) string { return QueueClass(d.Spec.Kind, d.Retry+1, d.Manual) }

// Report builds the queue report at now from the waiting nodes.
func Report(q *Queues, planned int, now time.Time, overloadAt int) streams.QueueReport {
	r := streams.QueueReport{GeneratedAt: now.UTC(), Size: q.Waiting(), InFlight: q.InFlight(), Planned: planned,
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
	// Counted in arrays, made maps once: the report is written every
	// tick over a backlog that may be thousands of nodes long.
	type counts [len(lateBuckets)]int
	var delayed counts
	perClass := map[string]*counts{}
	perOLT := map[string]*counts{}
	next := q.Next(now, 10, func(d DueNode) {
		if d.Delay <= lateBuckets[0].d {
			return
		}
		class := classOf(d)
		c, o := perClass[class], perOLT[d.Key.OLTID]
		if c == nil {
			c = new(counts)
			perClass[class] = c
		}
		if o == nil {
			o = new(counts)
			perOLT[d.Key.OLTID] = o
		}
		for i, b := range lateBuckets {
			if d.Delay <= b.d {
				break
			}
			delayed[i]++
			c[i]++
			o[i]++
		}
	})
	for _, d := range next {
		r.NextNodes = append(r.NextNodes, streams.QueuedNode{NodeID: d.Key.NodeID(), OLTID: d.Key.OLTID, JobID: d.Key.JobID,
			DueAt: d.ScheduledAt.UTC(), DelaySeconds: d.Delay.Seconds(), Priority: d.Spec.Priority, Class: classOf(d)})
	}
	for i, b := range lateBuckets {
		r.Delayed[b.name] = delayed[i]
	}
	for class, c := range perClass {
		if r.DelayedClass[class] == nil {
			r.DelayedClass[class] = map[string]int{}
		}
		for i, b := range lateBuckets {
			r.DelayedClass[class][b.name] = c[i]
		}
	}
	olts := make([]string, 0, len(perOLT))
	for o := range perOLT {
		olts = append(olts, o)
	}
	sort.Slice(olts, func(i, j int) bool {
		a, b := perOLT[olts[i]][0], perOLT[olts[j]][0]
		if a != b {
			return a > b
		}
		return olts[i] < olts[j]
	})
	for _, o := range olts[:min(len(olts), 100)] {
		m := map[string]int{}
		for i, b := range lateBuckets {
			if n := perOLT[o][i]; n > 0 {
				m[b.name] = n
			}
		}
		r.DelayedOLT[o] = m
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
