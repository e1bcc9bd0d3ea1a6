package projector

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/streams"
)

// The varbind projection's steady loop: a fetcher and one goroutine per
// worker, with no barrier between groups. The fetcher hands each message
// to the worker of its OLT through a bounded queue; a worker takes what is
// queued (up to GroupMessages), applies it in one transaction, publishes,
// acks and takes the next. So one worker's commit, publish and ack overlap
// the other's apply and the next fetch, and a slow OLT holds back its own
// worker only. Each OLT is in one worker and its queue is FIFO, so its
// batches are still applied in stream order.
//
// The consumer's checkpoint moves to the highest sequence below which
// every fetched message ended (inflight.watermark), after each commit.
//
// Memory: at most InFlightMessages batches are handed to the workers and
// not yet ended (slots), whatever their spread over the workers, plus the
// one fetch being handed out. A per-worker bound would stop the fetcher
// at the first full queue while other workers idle.

// inflight tracks the messages fetched and not yet ended.
type inflight struct {
	mu      sync.Mutex
	pending map[uint64]jetstream.Msg // by stream sequence; nil Msg: no handle
	seen    uint64                   // highest sequence fetched
}

func newInflight() *inflight { return &inflight{pending: map[uint64]jetstream.Msg{}} }

// add records a fetch: items are pending; seen (which counts messages
// ended at once: dead-lettered) is the fetch's highest sequence.
func (f *inflight) add(items []groupItem, seen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, it := range items {
		f.pending[it.msg.Seq] = it.raw
	}
	f.seen = max(f.seen, seen)
}

// done ends items, but for those left for redelivery: they stay pending,
// without a handle (no in-progress ack holds them back), so the
// watermark stays below them until their redelivery ends them.
func (f *inflight) done(items []groupItem) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, it := range items {
		if it.leave {
			f.pending[it.msg.Seq] = nil
			continue
		}
		delete(f.pending, it.msg.Seq)
	}
}

// watermark is the highest sequence at or below which every fetched
// message ended (0: none yet).
func (f *inflight) watermark() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pending) == 0 {
		return f.seen
	}
	low := uint64(0)
	for seq := range f.pending {
		if low == 0 || seq < low {
			low = seq
		}
	}
	return low - 1
}

// inProgress keeps every pending message from being redelivered.
func (f *inflight) inProgress() {
	f.mu.Lock()
	msgs := make([]jetstream.Msg, 0, len(f.pending))
	for _, m := range f.pending {
		if m != nil {
			msgs = append(msgs, m)
		}
	}
	f.mu.Unlock()
	for _, m := range msgs {
		_ = m.InProgress()
	}
}

// pipeline runs the steady loop until ctx ends (nil) or the lock's
// connection is lost (an error: the caller stands by and tries again; what
// was fetched and not acked is redelivered and applied by the next holder's
// recover).
func (l *varbindLoop) pipeline(ctx context.Context, lock *pgxpool.Conn, cons jetstream.Consumer) error {
	cfg := l.p.cfg
	fl := newInflight()
	// A queue never blocks the fetcher: slots (a token per batch handed
	// out, given back when it ends) bound them all together.
	slots := make(chan struct{}, cfg.InFlightMessages)
	queues := make([]chan groupItem, cfg.Workers)
	for w := range queues {
		queues[w] = make(chan groupItem, cfg.InFlightMessages)
	}
	g, gctx := errgroup.WithContext(ctx)
	tickerDone, tickerStop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(tickerDone)
		t := time.NewTicker(streams.ProjectionAckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-tickerStop:
				return
			case <-t.C:
				fl.inProgress()
			}
		}
	}()
	defer func() { close(tickerStop); <-tickerDone }()
	yielded := false
	for w, q := range queues {
		g.Go(func() error { return l.work(gctx, w, q, fl, slots) })
	}
	g.Go(func() error {
		defer func() {
			for _, q := range queues {
				close(q)
			}
		}()
		for gctx.Err() == nil {
			if l.yield != nil && l.yield() {
				// Given back: the workers end what they hold first.
				yielded = true
				return nil
			}
			if err := lock.Ping(gctx); err != nil {
				if gctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("lock connection lost: %w", err)
			}
			items, seen, err := l.fetch(gctx, cons)
			if err != nil {
				if gctx.Err() != nil {
					return nil
				}
				l.p.log.Warn().Err(err).Str("consumer", l.consumer).Msg("fetch varbind batches failed; retrying")
				sleepCtx(gctx, cfg.NackDelay/5)
				continue
			}
			fl.add(items, seen)
			for _, it := range items {
				select {
				case slots <- struct{}{}:
				case <-gctx.Done():
					return nil
				}
				queues[workerOf(it.msg.Batch.OLTID, cfg.Workers)] <- it // never blocks: see slots
			}
			if len(items) == 0 && seen > 0 {
				// Only dead letters: nothing commits to move the checkpoint.
				l.moveCheckpoint(gctx, fl.watermark())
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	if yielded && ctx.Err() == nil {
		return errYield
	}
	return nil
}

// work is one worker: it applies what its queue holds, one transaction at
// a time, until the queue closes or ctx ends.
func (l *varbindLoop) work(ctx context.Context, worker int, q <-chan groupItem, fl *inflight, slots <-chan struct{}) error {
	limit := l.p.cfg.GroupMessages
	for {
		var part []groupItem
		select {
		case it, ok := <-q:
			if !ok {
				return nil
			}
			part = append(part, it)
		case <-ctx.Done():
			return nil
		}
	drain:
		for len(part) < limit {
			select {
			case it, ok := <-q:
				if !ok {
					break drain
				}
				part = append(part, it)
			default:
				break drain
			}
		}
		start := time.Now()
		if err := l.applyPart(ctx, worker, part); err != nil {
			return nil // ctx ended: the unacked messages come back
		}
		for _, it := range part {
			if it.raw != nil && !it.leave {
				_ = it.raw.Ack()
			}
		}
		fl.done(part)
		for range part {
			<-slots
		}
		l.moveCheckpoint(ctx, fl.watermark())
		l.p.metrics.varbindGroups.Observe(float64(len(part)))
		l.p.metrics.varbindGroupSeconds.Observe(time.Since(start).Seconds())
	}
}
