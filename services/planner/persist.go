package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// The persisted schedule: one streams.NodeSchedule per assigned node in
// the KV bucket streams.BucketSchedule. The planner writes the entries of
// the nodes that changed after each step of its loop (only when the entry
// differs from the last one written) and reads them all at start-up, so a
// restarted planner resumes each node's next run, last run and the
// execution in flight instead of planning them anew.

// restoredSchedule is what loadSchedule read.
type restoredSchedule struct {
	nodes   map[NodeKey]Restored
	flights []Flight
	// lost are the lost attempts of the restored flights, by execution;
	// nextAttempt the lowest attempt of the retries planned after one.
	lost        map[string]lostAttempt
	nextAttempt map[NodeKey]int
	// oldest is the earliest dispatch of a restored flight: terminal
	// events are read from a little before it.
	oldest time.Time
}

// loadSchedule reads every entry of the bucket.
func (p *planner) loadSchedule(ctx context.Context) (restoredSchedule, error) {
	out := restoredSchedule{nodes: map[NodeKey]Restored{}, lost: map[string]lostAttempt{}, nextAttempt: map[NodeKey]int{}}
	lister, err := p.kv.ListKeys(ctx)
	if err != nil {
		return out, fmt.Errorf("list %s: %w", streams.BucketSchedule, err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	for _, key := range keys {
		e, err := p.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("get %s/%s: %w", streams.BucketSchedule, key, err)
		}
		if strings.HasPrefix(key, streams.FailuresKeyPrefix) {
			var of streams.OLTFailures
			if err := json.Unmarshal(e.Value(), &of); err == nil && of.OLTID != "" && of.Count > 0 {
				p.failures[of.OLTID] = of.Count
			}
			continue
		}
		var ns streams.NodeSchedule
		if err := json.Unmarshal(e.Value(), &ns); err != nil || ns.JobID == "" || ns.OLTID == "" {
			p.log.Warn().Str("key", key).Msg("skip unreadable schedule entry")
			continue
		}
		k := NodeKey{JobID: ns.JobID, OLTID: ns.OLTID}
		p.written[k] = hashOf(e.Value())
		if !ns.Enabled || ns.NextRunAt == nil {
			continue
		}
		r := Restored{Since: ns.Since, Next: ns.NextRunAt.UTC(), LastStatus: ns.LastStatus, LastExecution: ns.LastExecutionID}
		if ns.LastRunAt != nil {
			r.LastRun = ns.LastRunAt.UTC()
		}
		if ns.State == streams.NodeRetry && ns.RetryAt != nil {
			r.Taken, r.Attempts, r.RetryAt = true, ns.FailedAttempts, ns.RetryAt.UTC()
			if ns.NextAttempt > 0 {
				out.nextAttempt[k] = ns.NextAttempt
			}
		}
		if ns.State == streams.NodeWaiting && ns.FailedAttempts > 0 {
			// A retry waiting in its OLT's queue: still the same retry (due
			// at once), not a first run that would count its attempts
			// afresh; and a term that finds its node gone aborts it.
			r.Taken, r.Attempts, r.RetryAt = true, ns.FailedAttempts, r.Next
		}
		if ns.State == streams.NodeInFlight && ns.InFlight != nil && ns.InFlight.ScheduledAt.Equal(r.Next) {
			r.Attempts = ns.FailedAttempts
			r.Taken = true
			attempt := ns.InFlight.Attempt
			if attempt == 0 {
				attempt = ns.FailedAttempts + 1 // an entry written before the field
			}
			out.flights = append(out.flights, Flight{Key: k, ExecutionID: ns.InFlight.ExecutionID,
				ScheduledAt: r.Next, DispatchedAt: ns.InFlight.DispatchedAt.UTC(), Attempt: attempt, Dispatch: ns.FailedAttempts + 1})
			if ns.InFlight.LostAt != nil {
				out.lost[ns.InFlight.ExecutionID] = lostAttempt{Attempt: ns.InFlight.LostAttempt, At: ns.InFlight.LostAt.UTC()}
			}
			if out.oldest.IsZero() || ns.InFlight.DispatchedAt.Before(out.oldest) {
				out.oldest = ns.InFlight.DispatchedAt.UTC()
			}
		}
		out.nodes[k] = r
	}
	return out, nil
}

// restoreFlights puts the restored flights of nodes that Sync restored as
// taken back in flight on their OLTs, with their lost attempts, and the
// lowest attempts of the retries planned after a lost one.
func (p *planner) restoreFlights(r restoredSchedule) {
	for k, a := range r.nextAttempt {
		if n, ok := p.sched.Node(k); ok && n.Taken && !n.RetryAt.IsZero() {
			p.nextAttempt[k] = a
		}
	}
	for _, f := range r.flights {
		if n, ok := p.sched.Node(f.Key); ok && n.Taken && n.Next.Equal(f.ScheduledAt) {
			if _, busy := p.queues.Flight(f.Key.OLTID); !busy {
				ids := []string{f.ExecutionID}
				for _, c := range chainOf(f.ExecutionID, n.Spec.Chain) {
					ids = append(ids, c.ExecutionID)
				}
				f.Class = QueueClass(n.Spec.Kind, max(f.Dispatch, 1), f.Manual)
				p.queues.SetFlight(f, ids)
				if l, ok := r.lost[f.ExecutionID]; ok {
					p.lost[f.ExecutionID] = l
				}
				continue
			}
		}
		// Not restored (the node changed meanwhile): plan it anew.
		p.sched.Release(f.Key, f.ScheduledAt)
	}
}

// touch marks a node's entry for the next flush.
func (p *planner) touch(k NodeKey) { p.dirtyNodes[k] = struct{}{} }

// flushSchedule writes the entries of the touched nodes that changed. Puts
// are asynchronous (a KV put is a publish on $KV.<bucket>.<key>): a burst
// of 2,000 changed nodes must not hold the loop for 2,000 round trips. Their
// acks are collected at the next flush; a failed put is retried then.
func (p *planner) flushSchedule(ctx context.Context) {
	p.collectPuts()
	p.flushFailures(ctx)
	for k := range p.state.takeTouched() {
		p.touch(k)
	}
	for k := range p.dirtyNodes {
		if ctx.Err() != nil {
			return
		}
		if _, inFlight := p.puts[k]; inFlight {
			continue // written again once its previous put is acknowledged
		}
		key := streams.ScheduleKey(k.JobID, k.OLTID)
		ns, ok := p.scheduleEntry(k)
		var err error
		switch {
		case !ok:
			if _, had := p.written[k]; had {
				pctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
				err = p.kv.Delete(pctx, key)
				cancel()
				if errors.Is(err, jetstream.ErrKeyNotFound) {
					err = nil
				}
				if err == nil {
					delete(p.written, k)
				}
			}
		default:
			var b []byte
			b, err = json.Marshal(ns)
			if h := hashOf(b); err == nil && p.written[k] != h {
				var fut jetstream.PubAckFuture
				fut, err = p.js.PublishAsync("$KV."+streams.BucketSchedule+"."+key, b)
				if err == nil {
					p.puts[k] = pendingPut{fut: fut, hash: h}
				}
			}
		}
		if err != nil {
			p.m.publishErrs.Inc()
			p.log.Warn().Err(err).Str(telemetry.KeyJob, k.JobID).Str(telemetry.KeyOLT, k.OLTID).Msg("write schedule entry; retry next tick")
			return
		}
		delete(p.dirtyNodes, k)
	}
}

// flushFailures writes the changed failure counts (a delete at 0).
func (p *planner) flushFailures(ctx context.Context) {
	for olt := range p.failuresDirty {
		key := streams.FailuresKeyPrefix + olt
		var err error
		if n := p.failures[olt]; n > 0 {
			b, _ := json.Marshal(streams.OLTFailures{OLTID: olt, Count: n})
			_, err = p.js.PublishAsync("$KV."+streams.BucketSchedule+"."+key, b)
		} else {
			pctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
			err = p.kv.Delete(pctx, key)
			cancel()
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				err = nil
			}
		}
		if err != nil {
			p.log.Warn().Err(err).Str(telemetry.KeyOLT, olt).Msg("write failure count; retry next flush")
			return
		}
		delete(p.failuresDirty, olt)
	}
}

// pendingPut is a schedule entry put waiting for its ack.
type pendingPut struct {
	fut  jetstream.PubAckFuture
	hash uint64
}

// collectPuts records the acknowledged puts and marks the failed ones for
// another write; unanswered ones stay pending.
func (p *planner) collectPuts() {
	for k, put := range p.puts {
		select {
		case <-put.fut.Ok():
			p.written[k] = put.hash
		case err := <-put.fut.Err():
			p.m.publishErrs.Inc()
			p.log.Debug().Err(err).Str(telemetry.KeyJob, k.JobID).Str(telemetry.KeyOLT, k.OLTID).Msg("schedule entry put failed; written again")
			p.touch(k)
		default:
			continue
		}
		delete(p.puts, k)
	}
}

// scheduleEntry is the persisted entry of a node; ok is false when the
// node is not assigned (its entry is deleted).
func (p *planner) scheduleEntry(k NodeKey) (streams.NodeSchedule, bool) {
	if _, assigned := p.state.assigns[k]; !assigned {
		return streams.NodeSchedule{}, false
	}
	ns := streams.NodeSchedule{NodeID: k.NodeID(), JobID: k.JobID, OLTID: k.OLTID, Chain: []string{}}
	if j, ok := p.state.jobs[k.JobID]; ok {
		ns.JobName, ns.Kind, ns.Priority, ns.IntervalSeconds = j.Name, j.Kind, j.Priority, j.IntervalSeconds
	}
	n, planned := p.sched.Node(k)
	if !planned {
		ns.State, ns.DisabledReason = streams.NodeDisabled, p.state.why(k)
		return ns, true
	}
	for _, c := range n.Spec.Chain {
		ns.Chain = append(ns.Chain, c.JobID)
	}
	next := n.Next.UTC()
	ns.Enabled, ns.Since, ns.NextRunAt, ns.State = true, n.Since.UTC(), &next, streams.NodeIdle
	if !n.LastRun.IsZero() {
		last := n.LastRun.UTC()
		ns.LastRunAt, ns.LastStatus, ns.LastExecutionID = &last, n.LastStatus, n.LastExecution
	}
	ns.FailedAttempts = n.Attempts
	if n.Taken && !n.RetryAt.IsZero() {
		at := n.RetryAt.UTC()
		ns.State, ns.RetryAt, ns.NextAttempt = streams.NodeRetry, &at, p.nextAttempt[k]
	} else if n.Taken {
		ns.State = streams.NodeWaiting
		if f, ok := p.queues.Flight(k.OLTID); ok && f.Key == k && !f.Manual && f.ExecutionID != "" {
			ns.State = streams.NodeInFlight
			ns.InFlight = &streams.NodeFlight{ExecutionID: f.ExecutionID, ScheduledAt: f.ScheduledAt.UTC(), DispatchedAt: f.DispatchedAt.UTC(),
				Attempt: f.Attempt}
			if l, lost := p.lost[f.ExecutionID]; lost {
				at := l.At.UTC()
				ns.InFlight.LostAttempt, ns.InFlight.LostAt = l.Attempt, &at
			}
		}
	}
	return ns, true
}

func hashOf(b []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}
