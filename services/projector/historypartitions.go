package projector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// onu_history, onu_history_hourly and pon_history_hourly are partitioned
// by UTC day (migrations 020 and 022): <table>_pYYYYMMDD covers [day, day + 24h), <table>_default
// takes any row no day covers (so no insert ever fails), and
// onu_history_legacy, on a database migrated with history, everything
// before the day of the migration. The projector holding the history
// maintenance lock, each pass:
//
//   - creates the partitions of today and the next HistoryPartitionsAhead
//     days, and of every day (within the retention) the default partition
//     took rows of, moving those rows into it;
//   - drops the days older than the retention: a day is dropped whole
//     once all of it is older (so a row is kept up to a day longer than
//     the retention); the default and legacy partitions, which are not one
//     day, have their expired rows deleted in batches instead, and the
//     legacy one is dropped once nothing in it is left.

// HistoryPartitionsAhead is how many days after today have their
// partitions made in advance.
const HistoryPartitionsAhead = 7

// historyTables are the day-partitioned tables and their time column.
var historyTables = []struct{ Table, Column string }{
	{"onu_history", "at"},
	{"onu_history_hourly", "hour"},
	{"pon_history_hourly", "hour"},
}

// maxSplitDays bounds how many days of rows one pass moves out of a
// default partition.
const maxSplitDays = 31

// partitionName is the name of table's partition of day.
func partitionName(table string, day time.Time) string {
	return table + "_p" + day.UTC().Format("20060102")
}

// partitionDay reads the day of a partition name of table (false: not a
// day's partition).
func partitionDay(table, name string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name, table+"_p")
	if !ok || len(rest) != 8 {
		return time.Time{}, false
	}
	d, err := time.Parse("20060102", rest)
	return d, err == nil
}

// partitionSet is a table's partitions: its days, and the others (the
// default, legacy).
type partitionSet struct {
	days   map[time.Time]string
	others []string
	def    string // the default partition ("" none)
}

// queryer runs statements and queries (a connection or a transaction).
type queryer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func listPartitions(ctx context.Context, db queryer, table string) (partitionSet, error) {
	ps := partitionSet{days: map[time.Time]string{}}
	rows, err := db.Query(ctx, `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass`, table)
	if err != nil {
		return ps, fmt.Errorf("list the partitions of %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var isDefault bool
		if err := rows.Scan(&name, &isDefault); err != nil {
			return ps, fmt.Errorf("list the partitions of %s: %w", table, err)
		}
		switch d, ok := partitionDay(table, name); {
		case isDefault:
			ps.def = name
		case ok:
			ps.days[d] = name
		default:
			ps.others = append(ps.others, name)
		}
	}
	if err := rows.Err(); err != nil {
		return ps, fmt.Errorf("list the partitions of %s: %w", table, err)
	}
	return ps, nil
}

// maintenanceLockTimeout bounds how long a partition change waits for
// the table's lock (a long export, say): the next pass tries again.
const maintenanceLockTimeout = "10s"

// addDayPartition creates table's partition of day, moving into it the
// rows of that day the default partition def holds, and returns how many
// it moved. An attach waits for no reader of the table; only the default
// partition is locked while it is checked.
func addDayPartition(ctx context.Context, conn *pgx.Conn, table, column, def string, day time.Time) (int64, error) {
	name := pgx.Identifier{partitionName(table, day)}.Sanitize()
	t, col := pgx.Identifier{table}.Sanitize(), pgx.Identifier{column}.Sanitize()
	next := day.Add(24 * time.Hour)
	var moved int64
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout TO '`+maintenanceLockTimeout+`'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE `+name+` (LIKE `+t+` INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`); err != nil {
			return err
		}
		if def != "" {
			d := pgx.Identifier{def}.Sanitize()
			tag, err := tx.Exec(ctx, `WITH m AS (DELETE FROM `+d+` WHERE `+col+` >= $1 AND `+col+` < $2 RETURNING *)
				INSERT INTO `+name+` SELECT * FROM m`, day, next)
			if err != nil {
				return fmt.Errorf("move the rows of the default partition: %w", err)
			}
			moved = tag.RowsAffected()
		}
		// Bounds as UTC literals: the session's time zone plays no part.
		_, err := tx.Exec(ctx, `ALTER TABLE `+t+` ATTACH PARTITION `+name+` FOR VALUES FROM ('`+day.Format(time.RFC3339)+`') TO ('`+next.Format(time.RFC3339)+`')`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("create partition %s of %s: %w", partitionName(table, day), table, err)
	}
	return moved, nil
}

// dropPartition detaches and drops a partition of table.
func dropPartition(ctx context.Context, conn *pgx.Conn, table, name string) error {
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout TO '`+maintenanceLockTimeout+`'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ALTER TABLE `+pgx.Identifier{table}.Sanitize()+` DETACH PARTITION `+pgx.Identifier{name}.Sanitize()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DROP TABLE `+pgx.Identifier{name}.Sanitize())
		return err
	})
	if err != nil {
		return fmt.Errorf("drop partition %s of %s: %w", name, table, err)
	}
	return nil
}

// maintenanceResult is what one pass over a table did.
type maintenanceResult struct {
	Created, Dropped int   // partitions
	Moved            int64 // rows moved out of the default partition
	Deleted          int64 // expired rows deleted in batches (default, legacy)
	Vacuumed         int   // ended days' rollup partitions vacuumed
}

// maintainPartitions runs one pass over table (column its time): the
// partitions of today and the days ahead, and of the days within the
// retention whose rows the default partition holds; with before not zero
// (a day's start: everything older has expired), the days before it
// dropped and the expired rows of the other partitions deleted, at most
// batch rows per statement.
func maintainPartitions(ctx context.Context, conn *pgx.Conn, table, column string, now, before time.Time, batch int) (maintenanceResult, error) {
	var res maintenanceResult
	ps, err := listPartitions(ctx, conn, table)
	if err != nil {
		return res, err
	}
	want := map[time.Time]bool{}
	today := utcDay(now)
	for i := 0; i <= HistoryPartitionsAhead; i++ {
		want[today.Add(time.Duration(i)*24*time.Hour)] = true
	}
	if ps.def != "" {
		// The days the default partition took rows of (a projector that
		// was down at midnight, a replay of older history).
		rows, err := conn.Query(ctx, `SELECT DISTINCT date_trunc('day', `+pgx.Identifier{column}.Sanitize()+`, 'UTC') FROM `+
			pgx.Identifier{ps.def}.Sanitize()+` WHERE `+pgx.Identifier{column}.Sanitize()+` >= $1 ORDER BY 1 LIMIT `+fmt.Sprint(maxSplitDays), before)
		if err != nil {
			return res, fmt.Errorf("days in %s: %w", ps.def, err)
		}
		days, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
		if err != nil {
			return res, fmt.Errorf("days in %s: %w", ps.def, err)
		}
		for _, d := range days {
			want[d.UTC()] = true
		}
	}
	for day := range want {
		if _, ok := ps.days[day]; ok || (!before.IsZero() && day.Before(before)) {
			continue
		}
		moved, err := addDayPartition(ctx, conn, table, column, ps.def, day)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P17" {
			continue // another partition (legacy) covers that day
		}
		if err != nil {
			return res, err
		}
		res.Created++
		res.Moved += moved
	}
	if before.IsZero() {
		return res, nil
	}
	for day, name := range ps.days {
		if day.Add(24 * time.Hour).After(before) {
			continue
		}
		if err := dropPartition(ctx, conn, table, name); err != nil {
			return res, err
		}
		res.Dropped++
	}
	for _, name := range append(ps.others, ps.def) {
		if name == "" {
			continue
		}
		n, _, err := pruneHistory(ctx, conn, name, column, before, batch)
		res.Deleted += n
		if err != nil {
			return res, err
		}
		if name == ps.def {
			continue
		}
		var left bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{name}.Sanitize()+`)`).Scan(&left); err != nil {
			return res, fmt.Errorf("rows left in %s: %w", name, err)
		}
		if !left {
			if err := dropPartition(ctx, conn, table, name); err != nil {
				return res, err
			}
			res.Dropped++
		}
	}
	return res, nil
}

// vacuumDays is how many ended days of a rollup table a maintenance pass
// looks at (yesterday and the two before: late rows of a projector that
// was behind).
const vacuumDays = 3

// vacuumEndedDays vacuums the partitions of table's last vacuumDays ended
// UTC days that were written since their last vacuum: a chart reads a
// day's rollups from their covering index only once vacuum has marked the
// pages all-visible, and autovacuum may leave a finished day's last hours
// unmarked. A partition vacuumed and untouched since is skipped, so a pass
// vacuums each ended day once (again only after late rows). It returns the
// partitions vacuumed.
func vacuumEndedDays(ctx context.Context, conn *pgx.Conn, table string, now time.Time) (int, error) {
	ps, err := listPartitions(ctx, conn, table)
	if err != nil {
		return 0, err
	}
	today := utcDay(now)
	n := 0
	for i := 1; i <= vacuumDays; i++ {
		name, ok := ps.days[today.Add(-time.Duration(i)*24*time.Hour)]
		if !ok {
			continue
		}
		var written bool
		if err := conn.QueryRow(ctx, `SELECT coalesce(n_ins_since_vacuum > 0 OR n_dead_tup > 0, false) FROM pg_stat_user_tables WHERE relid = $1::regclass`,
			pgx.Identifier{name}.Sanitize()).Scan(&written); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return n, fmt.Errorf("vacuum state of %s: %w", name, err)
		}
		if !written {
			continue
		}
		if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) `+pgx.Identifier{name}.Sanitize()); err != nil {
			return n, fmt.Errorf("vacuum %s: %w", name, err)
		}
		n++
	}
	return n, nil
}
