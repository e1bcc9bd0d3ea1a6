package projector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/jsrouter"
)

// onu_history retention (issue 11). Nothing else deletes history rows: the
// projector holding the prune lock deletes those older than
// Config.HistoryRetention (by their time, at, which onu_history_at indexes)
// at once when it takes the lock and then every Config.HistoryPruneEvery,
// in transactions of at most Config.HistoryPruneBatch rows, so a pass never
// holds long locks or makes one huge transaction, however far behind it is
// (a first pass on a year of history, say). Replicas stand by on the lock
// as they do on the varbind projection's (varbindloop.go); the lock is a
// session lock on the connection the deletes run on, so a holder that lost
// its connection notices at its next delete and a standby takes over.

// DefaultHistoryRetention is the binary's default FACHO_HISTORY_RETENTION:
// a year. An ISP answers "what was this ONU's signal last winter?" and
// compares a season with the same one a year before; a year of Rx changes
// costs about 33 GB per 1,000 ONUs in the worst case (every 5-minute poll
// moves every Rx; see the README), a status change one row.
const DefaultHistoryRetention = 365 * 24 * time.Hour

// historyPruneLockName names the advisory lock of the history pruner.
const historyPruneLockName = "facho:onu-history-prune"

// historyPruneLockKey is the advisory lock key of the history pruner.
func historyPruneLockKey() int64 { return advisoryLockKey(historyPruneLockName) }

// historyPruneMetrics are the pruner's metrics.
type historyPruneMetrics struct {
	pruned prometheus.Counter
	leader prometheus.Gauge
}

func newHistoryPruneMetrics(reg prometheus.Registerer) (*historyPruneMetrics, error) {
	m := &historyPruneMetrics{
		pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_history_pruned_rows_total",
			Help: "onu_history rows deleted because they were older than the history retention (FACHO_HISTORY_RETENTION).",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_projector_history_prune_leader",
			Help: "1 while this projector holds the onu_history pruning (0: standing by, or retention 0: keep forever).",
		}),
	}
	if reg == nil {
		return m, nil
	}
	if err := errors.Join(jsrouter.Register(reg, &m.pruned), jsrouter.Register(reg, &m.leader)); err != nil {
		return nil, fmt.Errorf("history prune metrics: %w", err)
	}
	return m, nil
}

// historyPruner deletes onu_history rows older than the retention.
type historyPruner struct {
	p       *projector
	metrics *historyPruneMetrics
	key     int64
}

// runHistoryPrune prunes onu_history while ctx lasts (nothing when the
// retention is 0: keep forever): waits for the lock, prunes on the
// interval, and waits again if that failed.
func (p *projector) runHistoryPrune(ctx context.Context, reg prometheus.Registerer) error {
	if p.cfg.HistoryRetention == 0 {
		p.log.Info().Msg("onu_history kept forever (history retention 0)")
		return nil
	}
	m, err := newHistoryPruneMetrics(reg)
	if err != nil {
		return err
	}
	h := &historyPruner{p: p, metrics: m, key: historyPruneLockKey()}
	backoff := time.Second
	for ctx.Err() == nil {
		err := h.holdAndPrune(ctx)
		if ctx.Err() != nil {
			return nil
		}
		p.log.Warn().Err(err).Int64("retention_s", int64(p.cfg.HistoryRetention/time.Second)).Msg("onu_history pruning stopped; will try again")
		sleepCtx(ctx, backoff)
		backoff = min(2*backoff, time.Minute)
	}
	return nil
}

// holdAndPrune takes the prune lock (standing by while another projector
// holds it) and prunes every HistoryPruneEvery until ctx ends or a pass
// fails.
func (h *historyPruner) holdAndPrune(ctx context.Context) error {
	cfg := h.p.cfg
	standby := func() { h.p.log.Info().Msg("another projector prunes onu_history; standing by") }
	return holdLock(ctx, h.p.db, h.key, "history prune", min(cfg.HistoryPruneEvery, 10*time.Second), standby, func(conn *pgxpool.Conn) error {
		h.metrics.leader.Set(1)
		defer h.metrics.leader.Set(0)
		h.p.log.Info().Int64("retention_s", int64(cfg.HistoryRetention/time.Second)).Int64("every_s", int64(cfg.HistoryPruneEvery/time.Second)).
			Int("batch_rows", cfg.HistoryPruneBatch).Msg("onu_history pruning leading")
		t := time.NewTicker(cfg.HistoryPruneEvery)
		defer t.Stop()
		for {
			if err := h.pass(ctx, conn.Conn()); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
		}
	})
}

// pass deletes what is older than the retention now, and logs it.
func (h *historyPruner) pass(ctx context.Context, conn *pgx.Conn) error {
	cfg := h.p.cfg
	start := time.Now()
	before := cfg.now().Add(-cfg.HistoryRetention)
	n, batches, err := pruneHistory(ctx, conn, before, cfg.HistoryPruneBatch)
	h.metrics.pruned.Add(float64(n))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if n > 0 {
		h.p.log.Info().Int64("rows_deleted", n).Int("batches", batches).Time("before", before).
			Int64("duration_ms", time.Since(start).Milliseconds()).Msg("onu_history pruned")
	}
	return nil
}

// execer runs one statement (a connection or a pool; each statement its
// own transaction).
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// pruneHistory deletes the onu_history rows older than before, at most
// batch rows per statement (each its own transaction), until none is
// left. It returns the rows deleted and the statements run.
func pruneHistory(ctx context.Context, db execer, before time.Time, batch int) (int64, int, error) {
	var total int64
	batches := 0
	for {
		// History rows are never updated: a row's ctid holds between the
		// select and the delete of one statement.
		tag, err := db.Exec(ctx, `DELETE FROM onu_history WHERE ctid = ANY(ARRAY(
			SELECT ctid FROM onu_history WHERE at < $1 LIMIT $2))`, before, batch)
		if err != nil {
			return total, batches, fmt.Errorf("prune onu_history before %s (%d rows deleted so far): %w", before.UTC().Format(time.RFC3339), total, err)
		}
		batches++
		n := tag.RowsAffected()
		total += n
		if n < int64(batch) || ctx.Err() != nil {
			return total, batches, ctx.Err()
		}
	}
}

// pruneHistoryShadow is the read model's Prune: what the live pruner
// deletes is deleted from a rebuild's shadow too (one statement: the
// shadow is a throwaway copy, in the swap's transaction anyway).
func pruneHistoryShadow(retention time.Duration, now func() time.Time) func(ctx context.Context, tx pgx.Tx) error {
	if retention == 0 {
		return nil
	}
	return func(ctx context.Context, tx pgx.Tx) error {
		before := now().Add(-retention)
		if _, err := tx.Exec(ctx, `DELETE FROM onu_history WHERE at < $1`, before); err != nil {
			return fmt.Errorf("prune rebuilt onu_history before %s: %w", before.UTC().Format(time.RFC3339), err)
		}
		return nil
	}
}
