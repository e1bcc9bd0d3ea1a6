package projector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// Partitions of the varbind projection (Config.Partitions > 1): replicas
// that add throughput. The OLTs are split into N partitions
// (streams.VarbindPartition); partition i has a durable of its own
// (streams.ConsumerProjectorVarbindsPartition) that reads the whole stream
// and acks the other partitions' batches unread (the OLT is in the
// subject), a checkpoint row and pending_events rows of its own, and an
// advisory lock: one leader per partition, so each OLT's batches are still
// applied in stream order by one loop. Per-OLT checkpoints stay under the
// projection's name, so an OLT that changes partition (N changed) keeps
// its exactly-once; the projection's checkpoint is the lowest of the
// partitions' (every batch at or below it ended), which is what a rebuild
// locks and moves.
//
// Every replica runs a loop per partition and leads at most its fair
// share, ceil(N / replicas) (replicas: the holders of the shared advisory
// lock of the partition count); a replica above its share gives back its
// highest partition, which a replica below its share takes. Replicas
// configured with different partition counts would apply an OLT in two
// loops at once, so a replica joins only when none of another count runs
// (joinRegime), and stands by otherwise.

// errYield: a partition given back to balance the replicas.
var errYield = errors.New("partition given back to balance the replicas")

// regimeKey is the shared advisory lock every replica of a partition
// count holds while it runs.
func regimeKey(n int) int64 {
	return advisoryLockKey(fmt.Sprintf("facho:%s:partitions:%d", streams.ConsumerProjectorVarbinds, n))
}

var regimeCheckKey = advisoryLockKey("facho:" + streams.ConsumerProjectorVarbinds + ":regime-check")

// heldAdvisory counts the granted session advisory locks on keys (of any
// session; shared ones once per holder) in this database. pg_locks lists
// the whole server's locks: without the database, the projectors of
// another Facho on the same server (another database) counted as replicas
// here, and one of another partition count kept these standing by.
const heldAdvisory = `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND ((classid::bigint << 32) | objid::bigint) = ANY($1::bigint[])`

// joinRegime waits until no replica of another partition count runs, then
// holds the shared lock of n on a connection of its own (released when
// the returned func runs or the connection dies). (With one partition the
// holder joins on its lock's connection, holdAndLead: standbys need not.)
func (p *projector) joinRegime(ctx context.Context, n int) (leave func(), err error) {
	others := otherRegimes(n)
	warned := false
	for {
		conn, err := p.db.Acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			p.log.Warn().Err(err).Msg("join the varbind projection's replicas: no database connection; will try again")
			sleepCtx(ctx, time.Second)
			continue
		}
		joined, err := tryJoin(ctx, conn, n, others)
		if err == nil && joined {
			p.log.Info().Int("partitions", n).Msg("joined the varbind projection's replicas")
			return func() {
				unlockAdvisory(ctx, conn, `SELECT pg_advisory_unlock_shared($1)`, regimeKey(n))
				conn.Release()
			}, nil
		}
		conn.Release()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			p.log.Warn().Err(err).Msg("join the varbind projection's replicas failed; will try again")
		} else if !warned {
			p.log.Error().Int("partitions", n).Msg("a projector with another partition count (FACHO_PROJECTOR_PARTITIONS) runs; standing by until it stops: all replicas must use the same count")
			warned = true
		}
		sleepCtx(ctx, 5*time.Second)
	}
}

// otherRegimes are the locks of the replicas of counts other than n.
func otherRegimes(n int) []int64 {
	var others []int64
	for m := 1; m <= streams.ProjectorPartitionsMax; m++ {
		if m != n {
			others = append(others, regimeKey(m))
		}
	}
	if n > 1 {
		// The holder of the unpartitioned projection (a version before
		// partitions holds only this).
		others = append(others, varbindLockKey)
	}
	return others
}

var errOtherPartitionCount = errors.New("a projector with another partition count (FACHO_PROJECTOR_PARTITIONS) runs: all replicas must use the same count")

// tryJoin checks for other partition counts and takes n's shared lock,
// both under the exclusive check lock, so two replicas of different counts
// cannot both join.
func tryJoin(ctx context.Context, conn *pgxpool.Conn, n int, others []int64) (bool, error) {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, regimeCheckKey); err != nil {
		return false, fmt.Errorf("take the partition count check lock: %w", err)
	}
	defer unlockAdvisory(ctx, conn, `SELECT pg_advisory_unlock($1)`, regimeCheckKey)
	var running int
	if err := conn.QueryRow(ctx, heldAdvisory, others).Scan(&running); err != nil {
		return false, fmt.Errorf("look for replicas of another partition count: %w", err)
	}
	if running > 0 {
		return false, nil
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock_shared($1)`, regimeKey(n)); err != nil {
		return false, fmt.Errorf("join the replicas of %d partitions: %w", n, err)
	}
	return true, nil
}

// balance is what partitions this replica leads.
type balance struct {
	p    *projector
	n    int
	mu   sync.Mutex
	held map[int]bool // led, or reserved by a loop taking its lock
	// lastCheck and share: the fair share, read at most every second.
	lastCheck time.Time
	share     int
}

// fairShare is ceil(n / replicas).
func (b *balance) fairShare(ctx context.Context) int {
	b.mu.Lock()
	fresh := time.Since(b.lastCheck) < time.Second
	share := b.share
	b.mu.Unlock()
	if fresh {
		return share
	}
	var replicas int
	if err := b.p.db.QueryRow(ctx, heldAdvisory, []int64{regimeKey(b.n)}).Scan(&replicas); err != nil || replicas < 1 {
		replicas = 1 // cannot tell: lead what comes
	}
	share = (b.n + replicas - 1) / replicas
	b.mu.Lock()
	b.lastCheck, b.share = time.Now(), share
	b.mu.Unlock()
	return share
}

// reserve marks partition i held if this replica is below its share.
func (b *balance) reserve(ctx context.Context, i int) bool {
	share := b.fairShare(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.held) >= share {
		return false
	}
	b.held[i] = true
	return true
}

func (b *balance) drop(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, i)
}

// shouldYield: this replica leads more than its share and i is its
// highest partition.
func (b *balance) shouldYield(ctx context.Context, i int) bool {
	share := b.fairShare(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.held) <= share {
		return false
	}
	top := -1
	for h := range b.held {
		top = max(top, h)
	}
	return top == i
}

// runPartitions leads the partitions this replica gets until ctx ends.
func (p *projector) runPartitions(ctx context.Context) error {
	n := p.cfg.Partitions
	leave, err := p.joinRegime(ctx, n)
	if err != nil {
		return nil // ctx ended
	}
	defer leave()
	b := &balance{p: p, n: n, held: map[int]bool{}}
	g, ctx := errgroup.WithContext(ctx)
	for i := range n {
		g.Go(func() error { return p.runPartition(ctx, b, i) })
	}
	return g.Wait()
}

// runPartition takes partition i's lock whenever this replica is below its
// share and nobody holds it, and leads it.
func (p *projector) runPartition(ctx context.Context, b *balance, i int) error {
	n := p.cfg.Partitions
	durable := streams.ConsumerProjectorVarbindsPartition(i, n)
	key := advisoryLockKey("facho:" + durable)
	poll := time.Second
	for ctx.Err() == nil {
		if !b.reserve(ctx, i) {
			sleepCtx(ctx, poll)
			continue
		}
		err := p.leadPartition(ctx, b, i, durable, key)
		b.drop(i)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errNotHeld):
			sleepCtx(ctx, poll)
		case errors.Is(err, errYield):
			p.log.Info().Str(telemetry.KeyConsumer, durable).Msg("gave the partition back to balance the replicas")
			sleepCtx(ctx, 3*poll) // let a replica below its share take it
		default:
			p.log.Warn().Err(err).Str(telemetry.KeyConsumer, durable).Msg("varbind partition stopped leading; will try again")
			sleepCtx(ctx, poll)
		}
	}
	return nil
}

var errNotHeld = errors.New("partition lock held by another replica")

func (p *projector) leadPartition(ctx context.Context, b *balance, i int, durable string, key int64) error {
	conn, err := p.db.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire %s lock connection: %w", durable, err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil {
		return fmt.Errorf("take %s lock: %w", durable, err)
	}
	if !got {
		return errNotHeld
	}
	defer unlockAdvisory(ctx, conn, `SELECT pg_advisory_unlock($1)`, key)
	l := &varbindLoop{p: p, js: p.js, db: p.db, consumer: durable, logical: streams.ConsumerProjectorVarbinds,
		partition: i, partitions: b.n, health: p.health}
	var lastAsk time.Time
	l.yield = func() bool {
		if time.Since(lastAsk) < 5*time.Second {
			return false
		}
		lastAsk = time.Now()
		return b.shouldYield(ctx, i)
	}
	p.metrics.varbindLeader.Inc()
	defer p.metrics.varbindLeader.Dec()
	p.log.Info().Str(telemetry.KeyConsumer, durable).Int("partition", i).Int("partitions", b.n).Msg("leading a varbind partition")
	return l.lead(ctx, conn)
}

// mine: the batch on subject is this loop's partition's.
func (l *varbindLoop) mine(subject string) bool {
	return l.owns(streams.OLTOfVarbindsSubject(subject))
}

// owns: olt's batches are this loop's partition's.
func (l *varbindLoop) owns(olt string) bool {
	return l.partitions <= 1 || streams.VarbindPartition(olt, l.partitions) == l.partition
}

// ownsEvent: the pending event is of an OLT this loop owns; one whose
// subject names no OLT is partition 0's.
func (l *varbindLoop) ownsEvent(e outboxRow) bool {
	olt := streams.OLTOfONUSubject(e.Subject)
	if olt == "" {
		return l.partition == 0
	}
	return l.owns(olt)
}

// regimeDurables are the durables of this loop's partition count (none
// with one partition: ConsumerProjectorVarbinds).
func (l *varbindLoop) regimeDurables() []string {
	if l.partitions <= 1 {
		return []string{}
	}
	out := make([]string, l.partitions)
	for i := range out {
		out[i] = streams.ConsumerProjectorVarbindsPartition(i, l.partitions)
	}
	return out
}

// bind returns the loop's durable; a partition's is created the first
// time it is led, starting after the projection's checkpoint (every batch
// at or below it ended), with its own checkpoint there.
func (l *varbindLoop) bind(ctx context.Context) (jetstream.Consumer, error) {
	cons, err := l.js.Consumer(ctx, streams.StreamVarbinds, l.consumer)
	if err == nil {
		return cons, nil
	}
	if l.partitions <= 1 || !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("bind consumer %s: %w", l.consumer, err)
	}
	var from int64
	if err := l.db.QueryRow(ctx, `SELECT last_seq FROM checkpoints WHERE consumer = $1`, l.logical).Scan(&from); err != nil {
		return nil, fmt.Errorf("read checkpoint of %s: %w", l.logical, err)
	}
	if _, err := l.db.Exec(ctx, `UPDATE checkpoints SET last_seq = GREATEST(last_seq, $2), updated_at = now() WHERE consumer = $1`, l.consumer, from); err != nil {
		return nil, fmt.Errorf("start checkpoint of %s: %w", l.consumer, err)
	}
	cons, err = l.js.CreateConsumer(ctx, streams.StreamVarbinds, streams.ProjectorVarbindsPartitionConfig(l.partition, l.partitions, uint64(from)+1))
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", l.consumer, err)
	}
	l.p.log.Info().Str(telemetry.KeyConsumer, l.consumer).Int64("start_seq", from+1).Msg("created the partition's durable")
	return cons, nil
}

// dropOtherCounts deletes the partition durables of other partition
// counts: no replica of another count runs (joinRegime), so they are
// left from before N changed, and would only hold their messages' state
// on the server.
func (l *varbindLoop) dropOtherCounts(ctx context.Context) {
	for n := 2; n <= streams.ProjectorPartitionsMax; n++ {
		if n == l.partitions {
			continue
		}
		for i := range n {
			name := streams.ConsumerProjectorVarbindsPartition(i, n)
			err := l.js.DeleteConsumer(ctx, streams.StreamVarbinds, name)
			switch {
			case err == nil:
				l.p.log.Info().Str(telemetry.KeyConsumer, name).Msg("deleted the durable of a former partition count")
			case errors.Is(err, jetstream.ErrConsumerNotFound):
			default:
				l.p.log.Warn().Err(err).Str(telemetry.KeyConsumer, name).Msg("delete the durable of a former partition count failed")
			}
		}
	}
}

// moveLogicalCheckpoint moves the projection's checkpoint to the lowest of
// its partitions' (a partition that never led counts as 0).
func (l *varbindLoop) moveLogicalCheckpoint(ctx context.Context) {
	_, err := l.db.Exec(ctx, `UPDATE checkpoints SET last_seq = GREATEST(last_seq,
			(SELECT min(COALESCE(c.last_seq, 0)) FROM unnest($2::text[]) AS n(name) LEFT JOIN checkpoints c ON c.consumer = n.name)),
			updated_at = now() WHERE consumer = $1`, l.logical, l.regimeDurables())
	if err != nil && ctx.Err() == nil {
		l.p.log.Warn().Err(err).Str(telemetry.KeyConsumer, l.logical).Msg("move the projection's checkpoint failed; the partitions' hold")
	}
}
