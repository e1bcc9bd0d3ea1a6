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

// onu_history maintenance: partitions and retention. One projector, the
// one holding the maintenance lock, keeps the day partitions of
// onu_history and onu_history_hourly (historypartitions.go) at once when
// it takes the lock and then every Config.HistoryPruneEvery: the days
// ahead are created, and with a retention (Config.HistoryRetention; 0
// keeps the history forever) the days all older than it are dropped
// whole; the rows of the partitions that are not one day (the default,
// the legacy one of a migrated database) are deleted in transactions of
// at most Config.HistoryPruneBatch rows, so a pass never holds long locks
// or makes one huge transaction. Replicas stand by on the lock as they do
// on the varbind projection's (varbindloop.go); the lock is a session lock
// on the connection the maintenance runs on, so a holder that lost its
// connection notices at its next statement and a standby takes over.

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
	pruned  prometheus.Counter
	leader  prometheus.Gauge
	created *prometheus.CounterVec
	dropped *prometheus.CounterVec
	moved   prometheus.Counter
}

func newHistoryPruneMetrics(reg prometheus.Registerer) (*historyPruneMetrics, error) {
	m := &historyPruneMetrics{
		pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_history_pruned_rows_total",
			Help: "onu_history and onu_history_hourly rows deleted one by one because they were older than the history retention (FACHO_HISTORY_RETENTION): those of the default and legacy partitions; the days are dropped whole (facho_projector_history_partitions_dropped_total).",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_projector_history_prune_leader",
			Help: "1 while this projector holds the onu_history maintenance (day partitions, retention); 0: standing by.",
		}),
		created: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_history_partitions_created_total",
			Help: "Day partitions created, by table (onu_history, onu_history_hourly).",
		}, []string{"table"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_history_partitions_dropped_total",
			Help: "Partitions dropped because all of their rows were older than the history retention, by table.",
		}, []string{"table"}),
		moved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_history_default_rows_moved_total",
			Help: "Rows moved out of a default partition into the day partition made for them (a day whose partition was missing when they were written).",
		}),
	}
	if reg == nil {
		return m, nil
	}
	if err := errors.Join(jsrouter.Register(reg, &m.pruned), jsrouter.Register(reg, &m.leader), jsrouter.Register(reg, &m.created),
		jsrouter.Register(reg, &m.dropped), jsrouter.Register(reg, &m.moved)); err != nil {
		return nil, fmt.Errorf("history prune metrics: %w", err)
	}
	return m, nil
}

// historyPruner keeps the history partitions and the retention.
type historyPruner struct {
	p       *projector
	metrics *historyPruneMetrics
	key     int64
}

// runHistoryPrune maintains onu_history while ctx lasts: waits for the
// lock, runs a pass on the interval, and waits again if that failed.
func (p *projector) runHistoryPrune(ctx context.Context, reg prometheus.Registerer) error {
	if p.cfg.HistoryRetention == 0 {
		p.log.Info().Msg("onu_history kept forever (history retention 0): its day partitions are still made ahead")
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
		p.log.Warn().Err(err).Int64("retention_s", int64(p.cfg.HistoryRetention/time.Second)).Msg("onu_history maintenance stopped; will try again")
		sleepCtx(ctx, backoff)
		backoff = min(2*backoff, time.Minute)
	}
	return nil
}

// holdAndPrune takes the maintenance lock (standing by while another
// projector holds it) and runs a pass every HistoryPruneEvery until ctx
// ends or a pass fails.
func (h *historyPruner) holdAndPrune(ctx context.Context) error {
	cfg := h.p.cfg
	standby := func() { h.p.log.Info().Msg("another projector maintains onu_history; standing by") }
	return holdLock(ctx, h.p.db, h.key, "history prune", min(cfg.HistoryPruneEvery, 10*time.Second), standby, func(conn *pgxpool.Conn) error {
		h.metrics.leader.Set(1)
		defer h.metrics.leader.Set(0)
		h.p.log.Info().Int64("retention_s", int64(cfg.HistoryRetention/time.Second)).Int64("every_s", int64(cfg.HistoryPruneEvery/time.Second)).
			Int("batch_rows", cfg.HistoryPruneBatch).Msg("onu_history maintenance leading")
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

// historyExpiry is the start of the oldest day kept with retention at now
// (zero: retention 0, nothing expires): a row is kept until all of its
// UTC day is older than the retention.
func historyExpiry(now time.Time, retention time.Duration) time.Time {
	if retention == 0 {
		return time.Time{}
	}
	return utcDay(now.Add(-retention))
}

// pass maintains both tables now, and logs what it did.
func (h *historyPruner) pass(ctx context.Context, conn *pgx.Conn) error {
	cfg := h.p.cfg
	now := cfg.now()
	before := historyExpiry(now, cfg.HistoryRetention)
	for _, t := range historyTables {
		start := time.Now()
		res, err := maintainPartitions(ctx, conn, t.Table, t.Column, now, before, cfg.HistoryPruneBatch)
		h.metrics.pruned.Add(float64(res.Deleted))
		h.metrics.created.WithLabelValues(t.Table).Add(float64(res.Created))
		h.metrics.dropped.WithLabelValues(t.Table).Add(float64(res.Dropped))
		h.metrics.moved.Add(float64(res.Moved))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if t.Table != "onu_history" {
			// The rollups charts read: their ended days vacuumed once.
			vacuumed, err := vacuumEndedDays(ctx, conn, t.Table, now)
			res.Vacuumed = vacuumed
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
		}
		if res != (maintenanceResult{}) {
			h.p.log.Info().Str("table", t.Table).Int("partitions_created", res.Created).Int("partitions_dropped", res.Dropped).
				Int64("rows_moved", res.Moved).Int64("rows_deleted", res.Deleted).Int("partitions_vacuumed", res.Vacuumed).Time("before", before).
				Int64("duration_ms", time.Since(start).Milliseconds()).Msg("onu_history maintained")
		}
	}
	return nil
}

// execer runs one statement (a connection or a pool; each statement its
// own transaction).
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// pruneHistory deletes the rows of table (a partition: the default or
// the legacy one) older than before (by column), at most batch rows per
// statement (each its own transaction), until none is left. It returns
// the rows deleted and the statements run.
func pruneHistory(ctx context.Context, db execer, table, column string, before time.Time, batch int) (int64, int, error) {
	var total int64
	batches := 0
	t, col := pgx.Identifier{table}.Sanitize(), pgx.Identifier{column}.Sanitize()
	for {
		// History rows are never updated: a row's ctid holds between the
		// select and the delete of one statement.
		tag, err := db.Exec(ctx, `DELETE FROM `+t+` WHERE ctid = ANY(ARRAY(
			SELECT ctid FROM `+t+` WHERE `+col+` < $1 LIMIT $2))`, before, batch)
		if err != nil {
			return total, batches, fmt.Errorf("prune %s before %s (%d rows deleted so far): %w", table, before.UTC().Format(time.RFC3339), total, err)
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
		before := historyExpiry(now(), retention)
		for _, t := range historyTables {
			if _, err := tx.Exec(ctx, `DELETE FROM `+pgx.Identifier{t.Table}.Sanitize()+` WHERE `+pgx.Identifier{t.Column}.Sanitize()+` < $1`, before); err != nil {
				return fmt.Errorf("prune rebuilt %s before %s: %w", t.Table, before.UTC().Format(time.RFC3339), err)
			}
		}
		return nil
	}
}
