package projector

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/deadletter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// The varbind projection: the throughput path of the projector (issue 10).
//
// Messages are fetched in groups (up to GroupMessages, what is there, or
// the first to arrive) and handed to the worker of their OLT
// (pipeline.go); each worker applies what it was handed in one
// transaction (applyVarbinds): one read and one write of every ONU row it
// touches, its history rows, the per-OLT checkpoints and the events to
// publish (pending_events). After commit the worker publishes its events,
// clears its pending row and acks; the consumer's checkpoint moves to the
// highest sequence below which every fetched message ended. Workers do
// not wait for each other, and fetching goes on while they apply.
//
// Order and exactly-once: each OLT's batches are applied in stream order
// (an OLT is in one worker, whose queue is FIFO) and a message at or
// below its OLT's checkpoint (or the consumer's) is skipped. That holds
// only with one holder of the consumer at a time and no message overtaken
// by a later one of its OLT, so:
//   - the holder takes a Postgres advisory lock (a replica waits as a
//     standby; the lock goes with its connection when a holder dies);
//   - a failing transaction is retried in place (held through a database
//     outage, bisected down to the message that fails on a healthy
//     database, which is dead-lettered), never NAKed past, and its
//     worker takes nothing else meanwhile;
//   - at start, the messages a previous holder fetched and did not ack
//     (consumer ack floor .. last delivered) are read from the stream and
//     applied before anything is fetched.
//
// A crash between commit and publish leaves the events in pending_events:
// they are published at the next start (msg ids let the stream drop
// copies).

// advisory lock key of the varbind projection's holder.
var varbindLockKey = advisoryLockKey("facho:" + streams.ConsumerProjectorVarbinds)

// groupItem is one message of a group: decoded, with its JetStream handle
// (nil for a message read from the stream at start).
type groupItem struct {
	msg vbMsg
	raw jetstream.Msg
	// leave: not applied and not dead-lettered (the dead letter failed):
	// not acked, so it comes back.
	leave bool
}

type varbindLoop struct {
	p  *projector
	js jetstream.JetStream
	db *pgxpool.Pool
	// consumer is the JetStream durable this loop reads (a partition's
	// with Partitions > 1), the name of its own checkpoint row and of its
	// pending_events rows.
	consumer string
	// logical is the projection's name (ConsumerProjectorVarbinds): its
	// per-OLT checkpoints, its consumer checkpoint (the one a rebuild
	// locks and moves; with partitions, the lowest of theirs), its dead
	// letters.
	logical string
	// partition of partitions this loop applies (partitions 1: all).
	partition, partitions int
	health                func(ctx context.Context, cause error) error
	// yield, when set, is asked between fetches whether to stop leading
	// (a partition given back to balance the replicas).
	yield func() bool
}

// runVarbinds holds the varbind consumer while ctx lasts: waits for the
// lock, leads, and waits again if leading failed.
func (p *projector) runVarbinds(ctx context.Context) error {
	if p.cfg.Partitions > 1 {
		return p.runPartitions(ctx)
	}
	l := &varbindLoop{p: p, js: p.js, db: p.db, consumer: streams.ConsumerProjectorVarbinds, logical: streams.ConsumerProjectorVarbinds,
		partitions: 1, health: p.health}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.holdAndLead(ctx)
		if ctx.Err() != nil {
			return nil
		}
		p.log.Warn().Err(err).Str(telemetry.KeyConsumer, l.consumer).Msg("varbind projection stopped leading; will try again")
		sleepCtx(ctx, backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
	return nil
}

func (l *varbindLoop) holdAndLead(ctx context.Context) error {
	standby := func() {
		l.p.log.Info().Str(telemetry.KeyConsumer, l.consumer).Msg("another projector holds the varbind projection; standing by")
	}
	return holdLock(ctx, l.db, varbindLockKey, "varbind projection", time.Second, standby, func(conn *pgxpool.Conn) error {
		// Partitioned replicas (another count) must not run beside it;
		// they check for this holder's lock, and it for theirs.
		joined, err := tryJoin(ctx, conn, 1, otherRegimes(1))
		if err != nil {
			return err
		}
		if !joined {
			return errOtherPartitionCount
		}
		defer unlockAdvisory(ctx, conn, `SELECT pg_advisory_unlock_shared($1)`, regimeKey(1))
		l.p.metrics.varbindLeader.Inc()
		defer l.p.metrics.varbindLeader.Dec()
		return l.lead(ctx, conn)
	})
}

func (l *varbindLoop) lead(ctx context.Context, lock *pgxpool.Conn) error {
	cfg := l.p.cfg
	for _, c := range []string{l.logical, l.consumer} {
		if _, err := l.db.Exec(ctx, `INSERT INTO checkpoints (consumer, last_seq) VALUES ($1, 0) ON CONFLICT (consumer) DO NOTHING`, c); err != nil {
			return fmt.Errorf("create checkpoint of %s: %w", c, err)
		}
	}
	if err := l.publishLeftovers(ctx); err != nil {
		return err
	}
	if l.partition == 0 {
		// The former durables hold no events: what their loops left in
		// pending_events is published by each partition for its OLTs.
		l.dropOtherCounts(ctx)
	}
	// Events of the per-event outbox of earlier versions.
	if err := l.p.outbox.flush(ctx); err != nil {
		return fmt.Errorf("drain the old outbox: %w", err)
	}
	cons, err := l.bind(ctx)
	if err != nil {
		return err
	}
	if err := l.recover(ctx, cons); err != nil {
		return err
	}
	l.p.log.Info().Str(telemetry.KeyConsumer, l.consumer).Int("workers", cfg.Workers).Int("group_messages", cfg.GroupMessages).Msg("varbind projection leading")
	return l.pipeline(ctx, lock, cons)
}

// moveCheckpoint moves the consumer's checkpoint to seq once every message
// up to it ended (applied, skipped or dead-lettered): it says how far the
// projection got (lag, rebuilds).
func (l *varbindLoop) moveCheckpoint(ctx context.Context, seq uint64) {
	if seq == 0 {
		return
	}
	if _, err := l.db.Exec(ctx, `UPDATE checkpoints SET last_seq = GREATEST(last_seq, $2), updated_at = now() WHERE consumer = $1`, l.consumer, int64(seq)); err != nil {
		if ctx.Err() == nil {
			l.p.log.Warn().Err(err).Str(telemetry.KeyConsumer, l.consumer).Msg("move consumer checkpoint failed; per-OLT checkpoints hold")
		}
		return
	}
	if l.partitions > 1 {
		l.moveLogicalCheckpoint(ctx)
	}
}

// fetch returns the next group: what is waiting (up to GroupMessages), or
// else the first message to arrive within FetchWait. Malformed messages
// are dead-lettered and acked here. seen is the last stream sequence
// fetched (0: none).
func (l *varbindLoop) fetch(ctx context.Context, cons jetstream.Consumer) (items []groupItem, seen uint64, err error) {
	batch, err := cons.FetchNoWait(l.p.cfg.GroupMessages)
	if err != nil {
		return nil, 0, err
	}
	items, seen, err = l.collect(ctx, batch)
	if err != nil || seen > 0 {
		return items, seen, err
	}
	batch, err = cons.Fetch(1, jetstream.FetchMaxWait(l.p.cfg.FetchWait))
	if err != nil {
		return nil, 0, err
	}
	return l.collect(ctx, batch)
}

func (l *varbindLoop) collect(ctx context.Context, batch jetstream.MessageBatch) ([]groupItem, uint64, error) {
	var items []groupItem
	var seen uint64
	for m := range batch.Messages() {
		meta, err := m.Metadata()
		if err != nil {
			l.deadLetter(ctx, m, fmt.Sprintf("no metadata: %v", err))
			continue
		}
		seen = max(seen, meta.Sequence.Stream)
		if !l.mine(m.Subject()) {
			_ = m.Ack() // another partition's: ended here
			continue
		}
		msg, err := decodeVarbindMsg(m.Subject(), meta.Sequence.Stream, m.Data())
		if err != nil {
			if l.deadLetter(ctx, m, err.Error()) {
				if kind := refusalKind(err); kind != "" {
					l.p.metrics.refused.WithLabelValues(kind).Inc()
				}
			}
			continue
		}
		msg.PublishedAt = meta.Timestamp
		items = append(items, groupItem{msg: msg, raw: m})
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) {
		if seen > 0 {
			return items, seen, nil // process what came; the next fetch reports again
		}
		return nil, 0, err
	}
	return items, seen, nil
}

// deadLetter ends m in facho.dlq.projector-varbinds; if that fails the
// message is left unacked and comes back (it never applies, so it may).
func (l *varbindLoop) deadLetter(ctx context.Context, m jetstream.Msg, reason string) bool {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := deadletter.Publish(dctx, l.js, l.logical, l.p.cfg.Source, m, reason); err != nil {
		l.p.log.Warn().Err(err).Str(telemetry.KeyConsumer, l.consumer).Msg("dead letter failed; the message comes back")
		return false
	}
	_ = m.Ack()
	l.p.metrics.varbindMessages.WithLabelValues("dead_lettered").Inc()
	seq := ""
	if meta, err := m.Metadata(); err == nil {
		seq = fmt.Sprint(meta.Sequence.Stream)
	}
	l.p.log.Warn().Str(telemetry.KeyConsumer, l.consumer).Str(telemetry.KeyStreamSeq, seq).Str(telemetry.KeySubject, m.Subject()).
		Str("reason", deadletter.Bound(reason, streams.DeadLetterReasonBytes)).Msg("message dead-lettered")
	return true
}

// recover applies the messages a previous holder fetched and left unacked,
// read from the stream in order, before anything new is fetched.
func (l *varbindLoop) recover(ctx context.Context, cons jetstream.Consumer) error {
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("consumer %s info: %w", l.consumer, err)
	}
	// Every message up to the ack floor ended; the checkpoint may lag it
	// (a stop between a worker's ack and its checkpoint move).
	l.moveCheckpoint(ctx, info.AckFloor.Stream)
	from, to := info.AckFloor.Stream+1, info.Delivered.Stream
	if to < from {
		return nil
	}
	stream, err := l.js.Stream(ctx, streams.StreamVarbinds)
	if err != nil {
		return fmt.Errorf("bind stream %s: %w", streams.StreamVarbinds, err)
	}
	var items []groupItem
	flush := func() error {
		if len(items) == 0 {
			return nil
		}
		err := l.processGroup(ctx, items)
		if err == nil {
			l.moveCheckpoint(ctx, items[len(items)-1].msg.Seq)
		}
		items = items[:0]
		return err
	}
	for seq := from; seq <= to; seq++ {
		raw, err := stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read unacked batch %d: %w", seq, err)
		}
		if !l.mine(raw.Subject) {
			continue
		}
		msg, err := decodeVarbindMsg(raw.Subject, seq, raw.Data)
		if err != nil {
			continue // malformed: dead-lettered when it is redelivered
		}
		msg.PublishedAt = raw.Time
		items = append(items, groupItem{msg: msg})
		if len(items) >= l.p.cfg.GroupMessages {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	l.p.log.Info().Str(telemetry.KeyConsumer, l.consumer).Uint64("from_seq", from).Uint64("to_seq", to).Msg("applied the batches a previous holder left unacked")
	return nil
}

// processGroup applies a group, publishes its events and acks it. It returns an error only when ctx ended.
func (l *varbindLoop) processGroup(ctx context.Context, items []groupItem) error {
	if len(items) == 0 {
		return nil
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // keep the group's messages from being redelivered
		defer wg.Done()
		t := time.NewTicker(streams.ProjectionAckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, it := range items {
					if it.raw != nil {
						_ = it.raw.InProgress()
					}
				}
			}
		}
	}()
	workers := l.p.cfg.Workers
	parts := make([][]groupItem, workers)
	for _, it := range items {
		w := workerOf(it.msg.Batch.OLTID, workers)
		parts[w] = append(parts[w], it)
	}
	g, gctx := errgroup.WithContext(ctx)
	for w, part := range parts {
		if len(part) == 0 {
			continue
		}
		g.Go(func() error { return l.applyPart(gctx, w, part) })
	}
	err := g.Wait()
	close(done)
	wg.Wait()
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.raw != nil && !it.leave {
			_ = it.raw.Ack()
		}
	}
	l.p.metrics.varbindGroups.Observe(float64(len(items)))
	l.p.metrics.varbindGroupSeconds.Observe(time.Since(start).Seconds())
	return nil
}

func workerOf(olt string, workers int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(olt))
	return int(h.Sum32() % uint32(workers))
}

// errPoison marks a message that fails on a healthy database.
var errPoison = errors.New("message fails on a healthy database")

// applyPart applies one worker's share: in one transaction, retried in
// place; held without counting while the database is unavailable; on a
// healthy database that keeps refusing it, split until the failing
// message is found and dead-lettered. Only a ctx end returns an error.
func (l *varbindLoop) applyPart(ctx context.Context, worker int, part []groupItem) error {
	failures := 0
	backoff := 100 * time.Millisecond
	for {
		events, applied, refused, err := l.applyTx(ctx, worker, part)
		if err == nil {
			l.p.metrics.varbindMessages.WithLabelValues("applied").Add(float64(applied))
			l.p.metrics.varbindMessages.WithLabelValues("skipped").Add(float64(len(part) - applied - len(refused)))
			l.deadLetterRefused(ctx, part, refused)
			if l.p.cfg.afterCommit != nil {
				l.p.cfg.afterCommit()
			}
			if err := l.publish(ctx, worker, events); err != nil {
				// Shutting down: the events wait in pending_events for
				// the next start; the batches are applied, so acked.
				l.p.log.Info().Int("events", len(events)).Int("worker", worker).Msg("stopped before publishing; the events are published at the next start")
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		herr := l.health(hctx, err)
		cancel()
		if herr != nil && errors.Is(err, errScheduleBehind) {
			l.p.log.Info().Str(telemetry.KeyConsumer, l.consumer).Int("messages", len(part)).Msg("holding varbind batches until the schedule projection catches up")
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		if herr != nil && !errors.Is(err, errPoison) {
			l.p.metrics.varbindOutageTries.Inc()
			l.p.log.Warn().Err(err).Str(telemetry.KeyConsumer, l.consumer).Int("messages", len(part)).Msg("database unavailable; holding varbind batches")
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		failures++
		if failures < 3 && !errors.Is(err, errPoison) && !projection.Permanent(err) {
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		if len(part) > 1 {
			// Find the message that fails, in order: an OLT's later
			// batches wait for its earlier ones.
			mid := len(part) / 2
			if err := l.applyPart(ctx, worker, part[:mid]); err != nil {
				return err
			}
			return l.applyPart(ctx, worker, part[mid:])
		}
		it := part[0]
		reason := fmt.Sprintf("gave up after %d tries on a healthy database: %v", failures, err)
		if it.raw == nil || !l.deadLetter(ctx, it.raw, reason) {
			// Read at start, or the dead letter failed: left unacked
			// for its redelivery, which dead-letters it. (part shares
			// the caller's array: the caller sees the mark.)
			part[0].leave = true
			l.p.log.Warn().Err(err).Uint64("stream_seq", it.msg.Seq).Msg("varbind batch left for redelivery")
		}
		return nil
	}
}

// deadLetterRefused dead-letters the refused messages of a committed
// part. One read at start (no handle) or whose dead letter failed is left
// unacked: its redelivery is screened again.
func (l *varbindLoop) deadLetterRefused(ctx context.Context, part []groupItem, refused map[uint64]*refusal) {
	for i := range part {
		r := refused[part[i].msg.Seq]
		if r == nil {
			continue
		}
		if part[i].raw == nil || !l.deadLetter(ctx, part[i].raw, r.Error()) {
			part[i].leave = true
			continue
		}
		l.p.metrics.refused.WithLabelValues(r.kind).Inc()
	}
}

// applyTx is one try of a worker's share. A panic while applying is a
// poison message, not a crash.
func (l *varbindLoop) applyTx(ctx context.Context, worker int, part []groupItem) (events []outboxRow, applied int, refused map[uint64]*refusal, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: panic: %v\n%s", errPoison, r, debug.Stack())
		}
	}()
	err = pgx.BeginFunc(ctx, l.db, func(tx pgx.Tx) error {
		// FOR KEY SHARE: workers run side by side; a rebuild's swap (FOR
		// UPDATE) waits for them and they for it, while moveCheckpoint's
		// UPDATE (a no-key update) does not wait for an open transaction.
		// The value read is at most the pipeline's watermark, below every
		// message still pending, unless a swap moved it (the shadow
		// applied up to it).
		var global int64
		if err := tx.QueryRow(ctx, `SELECT last_seq FROM checkpoints WHERE consumer = $1 FOR KEY SHARE`, l.logical).Scan(&global); err != nil {
			return fmt.Errorf("read checkpoint of %s: %w", l.logical, err)
		}
		olts := map[string]int64{}
		var names []string
		for _, it := range part {
			if _, ok := olts[it.msg.Batch.OLTID]; !ok {
				olts[it.msg.Batch.OLTID] = global
				names = append(names, it.msg.Batch.OLTID)
			}
		}
		rows, err := tx.Query(ctx, `SELECT olt_id, last_seq FROM olt_checkpoints WHERE consumer = $1 AND olt_id = ANY($2) FOR UPDATE`, planEachTime, l.logical, names)
		if err != nil {
			return fmt.Errorf("read olt checkpoints of %s: %w", l.logical, err)
		}
		for rows.Next() {
			var olt string
			var seq int64
			if err := rows.Scan(&olt, &seq); err != nil {
				rows.Close()
				return fmt.Errorf("read olt checkpoints of %s: %w", l.logical, err)
			}
			olts[olt] = max(olts[olt], seq)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read olt checkpoints of %s: %w", l.logical, err)
		}
		todo := make([]vbMsg, 0, len(part))
		for _, it := range part {
			if int64(it.msg.Seq) <= olts[it.msg.Batch.OLTID] {
				continue
			}
			todo = append(todo, it.msg)
		}
		if len(todo) == 0 {
			return nil
		}
		// What may not be applied (trust.go) is left out, and dead-lettered
		// after the commit; its sequence does not move the checkpoint.
		todo, refused, err = l.p.screen(ctx, tx, todo)
		if err != nil {
			return err
		}
		moved := map[string]int64{}
		for _, m := range todo {
			moved[m.Batch.OLTID] = max(moved[m.Batch.OLTID], int64(m.Seq))
		}
		if len(todo) == 0 {
			return nil
		}
		ev, err := l.p.applyVarbinds(ctx, tx, todo)
		if err != nil {
			return err
		}
		ids := make([]string, 0, len(moved))
		seqs := make([]int64, 0, len(moved))
		for olt, seq := range moved {
			ids, seqs = append(ids, olt), append(seqs, seq)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO olt_checkpoints (consumer, olt_id, last_seq)
			SELECT $1, u.olt, u.seq FROM unnest($2::text[], $3::bigint[]) AS u(olt, seq)
			ON CONFLICT (consumer, olt_id) DO UPDATE SET last_seq = EXCLUDED.last_seq, updated_at = now()`, l.logical, ids, seqs); err != nil {
			return fmt.Errorf("advance olt checkpoints of %s: %w", l.logical, err)
		}
		if err := writePending(ctx, tx, l.consumer, worker, ev); err != nil {
			return err
		}
		events, applied = ev, len(todo)
		return nil
	})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("project %d varbind batches: %w", len(part), err)
	}
	return events, applied, refused, nil
}

// publish sends a committed transaction's events and clears the worker's
// pending row; it retries until JetStream takes them or ctx ends (the row
// keeps them for the next start).
func (l *varbindLoop) publish(ctx context.Context, worker int, events []outboxRow) error {
	return l.publishFor(ctx, l.consumer, worker, events)
}

// publishFor is publish for the pending row of consumer and worker.
func (l *varbindLoop) publishFor(ctx context.Context, consumer string, worker int, events []outboxRow) error {
	if len(events) == 0 {
		return nil
	}
	if err := l.publishRetry(ctx, events); err != nil {
		return err
	}
	if _, err := l.db.Exec(ctx, `UPDATE pending_events SET events = NULL WHERE consumer = $1 AND worker = $2`, consumer, worker); err != nil && ctx.Err() == nil {
		// Published already: at worst they are published again at the
		// next start, where the duplicate window drops recent copies.
		l.p.log.Warn().Err(err).Msg("clear pending events failed")
	}
	return nil
}

// publishRetry publishes events, in order, retrying until JetStream takes
// them all (nil) or ctx ends (its error). A retry starts at the first event
// not acknowledged: a large transaction's events (a first discovery's
// thousands of ONUs) are not sent again from the start each round.
func (l *varbindLoop) publishRetry(ctx context.Context, events []outboxRow) error {
	backoff := 100 * time.Millisecond
	for {
		n, err := publishAll(ctx, l.js, events, l.p.cfg.PublishTimeout)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		events = events[n:]
		if n > 0 {
			backoff = 100 * time.Millisecond // it moved: the next round need not wait long
		}
		l.p.metrics.outboxFailures.Inc()
		l.p.log.Warn().Err(err).Int("events", len(events)).Int("events_acknowledged", n).Msg("publishing onu events failed; will retry")
		sleepCtx(ctx, backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
}

// publishLeftovers publishes what was committed and not published (a
// crash between commit and publish) before the loop applies anything:
// first what the partitions of a former count left for this loop's OLTs
// (publishFormer), then this loop's own rows, clearing each.
func (l *varbindLoop) publishLeftovers(ctx context.Context) error {
	if err := l.publishFormer(ctx); err != nil {
		return err
	}
	rows, err := l.db.Query(ctx, `SELECT worker, events FROM pending_events WHERE events IS NOT NULL AND consumer = $1`, l.consumer)
	if err != nil {
		return fmt.Errorf("read pending events of %s: %w", l.consumer, err)
	}
	type left struct {
		Worker int
		Events []byte
	}
	lefts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[left])
	if err != nil {
		return fmt.Errorf("read pending events of %s: %w", l.consumer, err)
	}
	for _, lf := range lefts {
		events, err := decodePending(lf.Events)
		if err != nil {
			l.p.log.Error().Err(err).Str(telemetry.KeyConsumer, l.consumer).Int("worker", lf.Worker).Msg("dropping unreadable pending events")
		} else if err := l.publishRetry(ctx, events); err != nil {
			return err
		}
		// Published (or unreadable): cleared, once.
		if _, err := l.db.Exec(ctx, `UPDATE pending_events SET events = NULL WHERE consumer = $1 AND worker = $2`, l.consumer, lf.Worker); err != nil {
			return fmt.Errorf("clear pending events of %s worker %d: %w", l.consumer, lf.Worker, err)
		}
		l.p.log.Info().Str(telemetry.KeyConsumer, l.consumer).Int("events", len(events)).Int("worker", lf.Worker).Msg("published onu events left by a previous holder")
	}
	return nil
}

// publishFormer publishes the events that the loops of a former partition
// count (N changed; the unpartitioned projection is the count 1) left in
// pending_events for the OLTs this loop applies now, in their order, and
// removes them from those rows. It runs before this loop applies anything,
// and this loop alone publishes its OLTs' newer events, so an ONU's older
// events cannot be overtaken by its newer ones. Each loop takes only its
// own OLTs' share: no loop waits for another (a partition not led yet
// leaves its OLTs' share, and holds back their newer events alike).
//
// All of an OLT's unpublished events are in one row: the loops of a count
// publish their own rows before applying, and this share before that.
func (l *varbindLoop) publishFormer(ctx context.Context) error {
	rows, err := l.db.Query(ctx, `SELECT consumer, worker, events FROM pending_events
		WHERE events IS NOT NULL AND consumer <> $1 AND (consumer = $2 OR consumer LIKE $2 || '-p%') AND consumer <> ALL($3)`,
		l.consumer, l.logical, l.regimeDurables())
	if err != nil {
		return fmt.Errorf("read pending events of former partitions: %w", err)
	}
	type left struct {
		Consumer string
		Worker   int
		Events   []byte
	}
	lefts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[left])
	if err != nil {
		return fmt.Errorf("read pending events of former partitions: %w", err)
	}
	for _, lf := range lefts {
		events, err := decodePending(lf.Events)
		var mine []outboxRow
		if err == nil {
			for _, e := range events {
				if l.ownsEvent(e) {
					mine = append(mine, e)
				}
			}
			if len(mine) == 0 {
				continue
			}
			if err := l.publishRetry(ctx, mine); err != nil {
				return err
			}
		}
		// Unreadable: whichever loop reads it first drops it (in takeFormer).
		if err := l.takeFormer(ctx, lf.Consumer, lf.Worker); err != nil {
			return err
		}
		l.p.log.Info().Str(telemetry.KeyConsumer, l.consumer).Str("former", lf.Consumer).Int("worker", lf.Worker).Int("events", len(mine)).
			Msg("published the onu events a former partition left for this partition's OLTs")
	}
	return nil
}

// takeFormer removes this loop's OLTs' events from a former partition's
// pending row (NULL once empty). It reads the row again under a row lock:
// the loops of the other partitions take their shares of it meanwhile.
func (l *varbindLoop) takeFormer(ctx context.Context, consumer string, worker int) error {
	err := pgx.BeginFunc(ctx, l.db, func(tx pgx.Tx) error {
		var blob []byte
		err := tx.QueryRow(ctx, `SELECT events FROM pending_events WHERE consumer = $1 AND worker = $2 FOR UPDATE`, consumer, worker).Scan(&blob)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && blob == nil) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the row: %w", err)
		}
		events, err := decodePending(blob)
		var rest []byte
		if err != nil {
			l.p.log.Error().Err(err).Str("former", consumer).Int("worker", worker).Msg("dropping unreadable pending events")
		} else {
			var keep []outboxRow
			for _, e := range events {
				if !l.ownsEvent(e) {
					keep = append(keep, e)
				}
			}
			if len(keep) > 0 {
				rest = encodePending(keep)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE pending_events SET events = $3 WHERE consumer = $1 AND worker = $2`, consumer, worker, rest); err != nil {
			return fmt.Errorf("write what is left: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("take the published events out of %s worker %d: %w", consumer, worker, err)
	}
	return nil
}

// publishWindow bounds the events one publishAll has sent and not seen
// acknowledged. The JetStream context stalls (and then refuses) async
// publishes past its pending limit (4,000 by default, shared by the
// workers of a process): a transaction's events sent all at once, when
// they are more than that (a first discovery of a few OLTs), failed every
// round while the server was slow, and were sent again from the start.
const publishWindow = 512

// publishAll publishes rows asynchronously, at most publishWindow awaiting
// their acks at a time, and waits for every ack. It returns how many rows,
// from the first, were acknowledged (all of them when err is nil). timeout
// bounds each wait for the next ack, not the whole call: a slow server
// that keeps acknowledging is waited for, one that stops is given up on.
func publishAll(ctx context.Context, js jetstream.JetStream, rows []outboxRow, timeout time.Duration) (int, error) {
	futures := make([]jetstream.PubAckFuture, len(rows))
	acked := 0
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	// waitNext waits for the ack of rows[acked].
	waitNext := func() error {
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(timeout)
		select {
		case <-futures[acked].Ok():
			acked++
			return nil
		case err := <-futures[acked].Err():
			return fmt.Errorf("publish onu event %s: %w", rows[acked].MsgID, err)
		case <-timer.C:
			return fmt.Errorf("publish onu event %s: no acknowledgement within %s", rows[acked].MsgID, timeout)
		case <-ctx.Done():
			return fmt.Errorf("publish onu events: %w", ctx.Err())
		}
	}
	for i, r := range rows {
		for i-acked >= publishWindow {
			if err := waitNext(); err != nil {
				return acked, err
			}
		}
		f, err := js.PublishAsync(r.Subject, r.Payload, jetstream.WithMsgID(r.MsgID))
		if err != nil {
			return acked, fmt.Errorf("publish onu event %s: %w", r.MsgID, err)
		}
		futures[i] = f
	}
	for acked < len(rows) {
		if err := waitNext(); err != nil {
			return acked, err
		}
	}
	return acked, nil
}

// sleepCtx waits d or until ctx ends; false when ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
