package planner

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// pollerView is what the planner knows of the poller processes: their
// execution slots per queue class, from the KV bucket facho_pollers (one
// key per process, rewritten every few seconds, deleted on a clean stop,
// expiring TTL after its last write when the process dies). Owned by the
// planner loop.
type pollerView struct {
	procs map[string]streams.PollerProcess
	// ttl is the bucket's TTL: a process not rewritten for that long is
	// gone even if no deletion was seen (an expiry leaves no marker).
	ttl time.Duration
	// ready: the bucket's current values are in (or it cannot be read).
	// Until then, for at most pollersWait after the term starts, the
	// planner dispatches nothing rather than dispatch blind.
	ready bool
}

// pollersWait bounds how long a new term holds its dispatches until it has
// read the pollers' slots.
const pollersWait = 2 * time.Second

func newPollerView() *pollerView { return &pollerView{procs: map[string]streams.PollerProcess{}} }

// pollerUpdate is one change of the bucket: a process's new state, or
// its key deleted (Gone); or, without a Key, the bucket's TTL, or Ready
// (the current values are in, or the bucket cannot be read).
type pollerUpdate struct {
	Key   string
	Proc  streams.PollerProcess
	Gone  bool
	TTL   time.Duration
	Ready bool
}

func (v *pollerView) apply(u pollerUpdate) {
	if u.Ready {
		v.ready = true
		return
	}
	if u.Key == "" {
		v.ttl = u.TTL
		return
	}
	if u.Gone {
		delete(v.procs, u.Key)
		return
	}
	v.procs[u.Key] = u.Proc
}

// classSlots is the capacity and the running slots per class of the live
// processes at now. A class no live process reports is absent from
// capacity (unknown). total is the nodes the processes run at once, each
// the lesser of its cap (PollerProcess.Workers) and its slots; 0 when no
// process reports classed slots.
func (v *pollerView) classSlots(now time.Time) (capacity, running map[string]int, total int) {
	capacity, running = map[string]int{}, map[string]int{}
	for k, p := range v.procs {
		if v.ttl > 0 && now.Sub(p.UpdatedAt) > v.ttl {
			delete(v.procs, k) // expired: the process died
			continue
		}
		slots := 0
		for _, s := range p.Pollers {
			if s.Class == "" {
				continue // a poller from before classes: its slots' class is unknown
			}
			slots++
			capacity[s.Class]++
			if s.Status == streams.PollerBusy {
				running[s.Class]++
			}
		}
		if p.Workers > 0 {
			slots = min(slots, p.Workers)
		}
		total += slots
	}
	return capacity, running, total
}

// room is the free slots per class the planner may dispatch into now:
// the class's capacity less its flights (dispatched and not ended),
// never below 0, and in all the processes' total less every flight. A
// class of unknown capacity is not limited by its own count.
func (p *planner) room(now time.Time) Room {
	if !p.pollers.ready && now.Before(p.pollersDeadline) {
		return Room{RoomTotal: 0} // the slots are being read: hold
	}
	capacity, _, total := p.pollers.classSlots(now)
	r := Room{}
	for c, n := range capacity {
		r[c] = max(n-p.queues.InFlightClass(c), 0)
	}
	if total > 0 {
		r[RoomTotal] = max(total-p.queues.InFlight(), 0)
	}
	return r
}

// followPollers watches the facho_pollers bucket and forwards its changes
// to the loop until ctx ends. The watch is opened in the background, so a
// term's start (the configuration replay, the first plan) does not wait
// for it; until its first values the capacity is unknown (not limited).
// Without the bucket the planner dispatches without class limits (logged).
func (p *planner) followPollers(ctx context.Context, out chan<- pollerUpdate) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ready := false
		defer func() {
			if !ready { // the bucket cannot be read: stop holding dispatches
				select {
				case out <- pollerUpdate{Ready: true}:
				case <-wctx.Done():
				}
			}
		}()
		kv, err := p.js.KeyValue(wctx, streams.BucketPollers)
		if err != nil {
			if wctx.Err() == nil {
				p.log.Warn().Err(err).Str("bucket", streams.BucketPollers).Msg("no poller capacity: dispatching without class limits")
			}
			return
		}
		if st, err := kv.Status(wctx); err == nil {
			select {
			case out <- pollerUpdate{TTL: st.TTL()}:
			case <-wctx.Done():
				return
			}
		}
		w, err := kv.WatchAll(wctx)
		if err != nil {
			if wctx.Err() == nil {
				p.log.Warn().Err(err).Str("bucket", streams.BucketPollers).Msg("no poller capacity: dispatching without class limits")
			}
			return
		}
		defer func() { _ = w.Stop() }()
		for {
			var e jetstream.KeyValueEntry
			var ok bool
			select {
			case e, ok = <-w.Updates():
			case <-wctx.Done():
				return
			}
			if !ok {
				return
			}
			if e == nil {
				ready = true
				select {
				case out <- pollerUpdate{Ready: true}: // the current values are in
				case <-wctx.Done():
					return
				}
				continue
			}
			u := pollerUpdate{Key: e.Key()}
			switch e.Operation() {
			case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
				u.Gone = true
			default:
				if err := json.Unmarshal(e.Value(), &u.Proc); err != nil {
					p.log.Debug().Err(err).Str(telemetry.KeyPoller, e.Key()).Msg("poller state not readable: ignored")
					continue
				}
			}
			select {
			case out <- u:
			case <-wctx.Done():
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}
