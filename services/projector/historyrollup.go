package projector

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// onu_history_hourly (migration 021): per ONU, numeric field and UTC hour
// in which the field changed, the least and greatest value it held during
// the hour and its value at the end of the hour. The varbind projection
// writes it with the raw rows, in the same transaction; RebuildHourly
// recomputes it from onu_history. Charts over long ranges read it instead
// of every change (services/api).
//
// pon_history_hourly (migration 022) is onu_history_hourly aggregated by
// PON, field and hour: the least and greatest of its ONUs' rows and how
// many ONUs have a row, so a PON's chart reads a row per hour instead of
// one per ONU and hour. It is written by the statement that writes
// onu_history_hourly (upsertHourly) and recomputed with it
// (RebuildHourly); after either, for every PON, field and hour,
//
//	(min_value, max_value, onus) = (min(min_value), max(max_value), count(*))
//
// of the PON's onu_history_hourly rows of that field and hour
// (ponFromHourly).

// RollupFields are the onu_history fields rolled up hourly: the numeric
// ones.
var RollupFields = []string{"rx_power_dbm", "tx_power_dbm", "olt_rx_power_dbm", "distance_m", "temperature_c", "voltage_v", "bias_ma"}

func isRollupField(f string) bool {
	switch f {
	case "rx_power_dbm", "tx_power_dbm", "olt_rx_power_dbm", "distance_m", "temperature_c", "voltage_v", "bias_ma":
		return true
	}
	return false
}

// hourlyRows are the changes of rolled-up fields of one transaction.
type hourlyRows struct {
	olt, field []string
	pon, onu   []int64
	old, new   []*float64
	at         []time.Time
	seq        []int64
}

// numValue is a history value as a number (nil: no value, or not a number).
func numValue(v optText) *float64 {
	if !v.set {
		return nil
	}
	f, err := strconv.ParseFloat(v.v, 64)
	if err != nil {
		return nil
	}
	return &f
}

func (h *hourlyRows) push(olt string, k ONUKey, field string, old, cur optText, at time.Time, seq uint64) {
	h.olt, h.field = append(h.olt, olt), append(h.field, field)
	h.pon, h.onu = append(h.pon, k.PonIndex), append(h.onu, k.ONUID)
	h.old, h.new = append(h.old, numValue(old)), append(h.new, numValue(cur))
	h.at, h.seq = append(h.at, at), append(h.seq, int64(seq))
}

// hourlyAggregate is the rollup of a set of changes c (olt, pon, onu,
// field, o: old value, n: new value, at, seq): min and max over the old
// and new values (the old value is what the field held before the change,
// within the hour), the last change's new value and position.
const hourlyAggregate = `SELECT olt, pon, onu, field, date_trunc('hour', at, 'UTC') AS hour,
		min(least(o, n)) AS min_value, max(greatest(o, n)) AS max_value,
		(array_agg(n ORDER BY at DESC, seq DESC))[1] AS last_value, max(at) AS last_at,
		(array_agg(seq ORDER BY at DESC, seq DESC))[1] AS last_seq
	FROM c GROUP BY 1, 2, 3, 4, 5`

// hourlyMerge merges a rollup row into the one already there: the range
// widens, the later change is the last.
const hourlyMerge = ` ON CONFLICT (olt_id, pon_index, onu_id, field, hour) DO UPDATE SET
		min_value = least(t.min_value, EXCLUDED.min_value),
		max_value = greatest(t.max_value, EXCLUDED.max_value),
		last_value = CASE WHEN (EXCLUDED.last_at, EXCLUDED.last_seq) >= (t.last_at, t.last_seq) THEN EXCLUDED.last_value ELSE t.last_value END,
		last_seq = CASE WHEN (EXCLUDED.last_at, EXCLUDED.last_seq) >= (t.last_at, t.last_seq) THEN EXCLUDED.last_seq ELSE t.last_seq END,
		last_at = greatest(t.last_at, EXCLUDED.last_at)`

// upsertHourly merges a transaction's changes into onu_history_hourly
// and their PON's rows into pon_history_hourly, in one statement. The
// ONUs of a PON row are counted by the ONU rows the statement inserts,
// not those it merges into: whether the ONU's row of the hour was there
// is read in the statement's snapshot (existed), one primary key lookup
// per ONU row. $9 and $10, the first and last hour of the changes, prune
// that lookup to their days' partitions when the statement starts, not
// at each lookup among a year of them. A replay of changes
// already rolled up merges into rows that are all there, so it changes
// no count; the range only widens, so merging the new rows' range into
// the PON's is the same as merging theirs after the ONU rows merged.
// The varbind projection applies an OLT's changes one transaction at a
// time, so no other writer inserts the PON's ONU rows meanwhile.
const upsertHourly = `WITH c AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::float8[], $6::float8[], $7::timestamptz[], $8::bigint[])
		AS u(olt, pon, onu, field, o, n, at, seq)),
	a AS (SELECT g.*, EXISTS (SELECT 1 FROM onu_history_hourly e
			WHERE e.olt_id = g.olt AND e.pon_index = g.pon AND e.onu_id = g.onu AND e.field = g.field AND e.hour = g.hour
				AND e.hour >= $9 AND e.hour <= $10) AS existed
		FROM (` + hourlyAggregate + `) g),
	up AS (INSERT INTO onu_history_hourly AS t (olt_id, pon_index, onu_id, field, hour, min_value, max_value, last_value, last_at, last_seq)
		SELECT olt, pon, onu, field, hour, min_value, max_value, last_value, last_at, last_seq FROM a` + hourlyMerge + `)
	INSERT INTO pon_history_hourly AS p (olt_id, pon_index, field, hour, min_value, max_value, onus)
	SELECT olt, pon, field, hour, min(min_value), max(max_value), count(*) FILTER (WHERE NOT existed) FROM a GROUP BY 1, 2, 3, 4` +
	ponMerge

// ponMerge merges a PON's rollup row into the one already there: the
// range widens, the ONUs new to the hour add up.
const ponMerge = ` ON CONFLICT (olt_id, pon_index, field, hour) DO UPDATE SET
		min_value = least(p.min_value, EXCLUDED.min_value),
		max_value = greatest(p.max_value, EXCLUDED.max_value),
		onus = p.onus + EXCLUDED.onus`

// upsert merges the changes into onu_history_hourly and
// pon_history_hourly.
func (h *hourlyRows) upsert(ctx context.Context, tx pgx.Tx) error {
	if len(h.olt) == 0 {
		return nil
	}
	first, last := h.at[0], h.at[0]
	for _, at := range h.at {
		if at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	first, last = first.UTC().Truncate(time.Hour), last.UTC().Truncate(time.Hour)
	if _, err := tx.Exec(ctx, upsertHourly, h.olt, h.pon, h.onu, h.field, h.old, h.new, h.at, h.seq, first, last); err != nil {
		return fmt.Errorf("roll up %d onu history rows by hour: %w", len(h.olt), err)
	}
	return nil
}

// rollupFromHistory recomputes onu_history_hourly for [from, to) from
// onu_history: its rows of those hours are replaced (from and to are
// whole hours). A row the projector committed meanwhile is merged (its
// changes are among those read, or newer).
const rollupFromHistory = `WITH c AS (SELECT olt_id AS olt, pon_index AS pon, onu_id AS onu, field,
			CASE WHEN old_value ~ '^-?[0-9.]+([eE][-+]?[0-9]+)?$' THEN old_value::float8 END AS o,
			CASE WHEN new_value ~ '^-?[0-9.]+([eE][-+]?[0-9]+)?$' THEN new_value::float8 END AS n,
			at, stream_seq AS seq
		FROM onu_history WHERE at >= $1 AND at < $2 AND field = ANY($3))
	INSERT INTO onu_history_hourly AS t (olt_id, pon_index, onu_id, field, hour, min_value, max_value, last_value, last_at, last_seq) ` +
	hourlyAggregate + hourlyMerge

// ponFromHourly recomputes pon_history_hourly for [$1, $2) from
// onu_history_hourly, over rows deleted first: a row the projector
// committed meanwhile is replaced (the statement reads every ONU row
// committed before it, the projector's included).
const ponFromHourly = `INSERT INTO pon_history_hourly AS p (olt_id, pon_index, field, hour, min_value, max_value, onus)
	SELECT olt_id, pon_index, field, hour, min(min_value), max(max_value), count(*) FROM onu_history_hourly
	WHERE hour >= $1 AND hour < $2 GROUP BY 1, 2, 3, 4
	ON CONFLICT (olt_id, pon_index, field, hour) DO UPDATE SET
		min_value = EXCLUDED.min_value, max_value = EXCLUDED.max_value, onus = EXCLUDED.onus`

// HourlyRebuildReport is what RebuildHourly did.
type HourlyRebuildReport struct {
	Days     int   // days recomputed
	Deleted  int64 // rollup rows replaced
	Inserted int64 // rollup rows written
	// PONRows: pon_history_hourly rows written (as many replaced).
	PONRows int64
}

// RebuildHourly recomputes onu_history_hourly from onu_history, and
// pon_history_hourly from it, for the UTC days from from's to to's
// (inclusive), one transaction per day, so that a long range neither
// holds long locks nor makes one huge transaction. A day's rollup is consistent with its raw rows when its
// transaction commits; the projector may write both meanwhile (its
// upserts merge into the recomputed rows). progress, if not nil, is called
// after each day.
func RebuildHourly(ctx context.Context, db interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}, from, to time.Time, progress func(day time.Time, r HourlyRebuildReport)) (HourlyRebuildReport, error) {
	var rep HourlyRebuildReport
	day := utcDay(from)
	last := utcDay(to)
	for n := 0; !day.After(last) && n < 100000; n++ { // bounded: 270 years of days
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		next := day.Add(24 * time.Hour)
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `DELETE FROM onu_history_hourly WHERE hour >= $1 AND hour < $2`, day, next)
			if err != nil {
				return fmt.Errorf("clear the rollup of %s: %w", day.Format(time.DateOnly), err)
			}
			rep.Deleted += tag.RowsAffected()
			tag, err = tx.Exec(ctx, rollupFromHistory, day, next, RollupFields)
			if err != nil {
				return fmt.Errorf("roll up %s: %w", day.Format(time.DateOnly), err)
			}
			rep.Inserted += tag.RowsAffected()
			if _, err := tx.Exec(ctx, `DELETE FROM pon_history_hourly WHERE hour >= $1 AND hour < $2`, day, next); err != nil {
				return fmt.Errorf("clear the PON rollup of %s: %w", day.Format(time.DateOnly), err)
			}
			tag, err = tx.Exec(ctx, ponFromHourly, day, next)
			if err != nil {
				return fmt.Errorf("roll up the PONs of %s: %w", day.Format(time.DateOnly), err)
			}
			rep.PONRows += tag.RowsAffected()
			return nil
		})
		if err != nil {
			return rep, err
		}
		rep.Days++
		if progress != nil {
			progress(day, rep)
		}
		day = next
	}
	return rep, nil
}

// utcDay is the start of t's UTC day.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
