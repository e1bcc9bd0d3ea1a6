package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
)

// swap is step 3 of Rebuild, in tx: lock the live checkpoints, catch the
// shadow up to them, compare, and replace the live rows and checkpoints.
func (rb *rebuild) swap(ctx context.Context, tx pgx.Tx, rep *Report) error {
	live := make(map[string]uint64)
	for _, c := range rb.model.Consumers() { // sorted: a fixed lock order
		if _, err := tx.Exec(ctx, `INSERT INTO `+rb.live+`.checkpoints (consumer, last_seq) VALUES ($1, 0) ON CONFLICT (consumer) DO NOTHING`, c); err != nil {
			return fmt.Errorf("checkpoint of %s: %w", c, err)
		}
		var last int64
		if err := tx.QueryRow(ctx, `SELECT last_seq FROM `+rb.live+`.checkpoints WHERE consumer = $1 FOR UPDATE`, c).Scan(&last); err != nil {
			return fmt.Errorf("lock checkpoint of %s: %w", c, err)
		}
		// A partitioned projection (the varbind batches) also keeps a
		// checkpoint per OLT, ahead of its consumer checkpoint while a
		// group is half committed: the live rows hold messages up to the
		// highest of them, and the shadow catches up that far.
		var perOLT int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(max(last_seq), 0) FROM `+rb.live+`.olt_checkpoints WHERE consumer = $1`, c).Scan(&perOLT); err != nil {
			return fmt.Errorf("read olt checkpoints of %s: %w", c, err)
		}
		live[c] = uint64(max(last, perOLT))
	}
	// The live consumers are paused now: catch up to their checkpoints.
	phase := time.Now()
	for i, s := range rb.model.Sources {
		cp := live[s.Consumer]
		rb.src[i].LiveCheckpoint = cp
		if cp > rb.pos[i] {
			if err := rb.indexShadow(ctx, tx); err != nil {
				return err
			}
			var msgs []jsrouter.Msg
			var last uint64
			if err := rb.read(ctx, i, cp, func(m jsrouter.Msg) error {
				last = m.Seq
				msgs = append(msgs, m)
				if len(msgs) >= rb.batch(i) {
					err := rb.apply(ctx, tx, i, msgs)
					msgs = msgs[:0]
					return err
				}
				return nil
			}); err != nil {
				return err
			}
			if err := rb.apply(ctx, tx, i, msgs); err != nil {
				return err
			}
			if last > 0 {
				rb.pos[i] = last
			}
		}
		rb.src[i].RebuiltTo = rb.pos[i]
	}
	if rb.model.Prune != nil {
		if err := rb.useShadow(ctx, tx); err != nil {
			return err
		}
		if err := rb.model.Prune(ctx, tx); err != nil {
			return fmt.Errorf("prune shadow: %w", err)
		}
		if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+rb.live); err != nil {
			return fmt.Errorf("live search_path: %w", err)
		}
	}
	rep.Phases.SwapApply = time.Since(phase)
	phase = time.Now()
	// The compare and the copy hash-join the whole shadow with the live
	// table: with the default 4 MB the hash of 100k coordinator logs went
	// to disk in four batches.
	if _, err := tx.Exec(ctx, `SET LOCAL work_mem TO '64MB'`); err != nil {
		return fmt.Errorf("swap memory: %w", err)
	}
	rep.Identical = true
	for _, t := range rb.model.Tables {
		tr, err := rb.compare(ctx, tx, t.Name, t.Key, t.Ignore)
		if err != nil {
			return err
		}
		rep.Tables = append(rep.Tables, tr)
		if tr.Differing > 0 || tr.LiveRows != tr.ShadowRows {
			rep.Identical = false
		}
	}
	// Identical tables stay as they are, checkpoints too: where the shadow
	// went further (the live consumer was behind, or the messages were
	// ones it ignores), the live consumer gets there by itself.
	rep.Phases.Compare = time.Since(phase)
	if rep.Identical || rb.opts.DryRun {
		return errDryRun // roll back: nothing to change
	}
	phase = time.Now()
	defer func() { rep.Phases.Copy = time.Since(phase) }()
	// The anti-joins below must be hash (or merge) joins: with a live
	// table whose statistics say it is empty (a first rebuild, an
	// emptied table), the planner may pick a nested loop scanning the
	// live table once per shadow row, rows this statement inserts
	// included: minutes for 100k rows, against a second.
	if _, err := tx.Exec(ctx, `SET LOCAL enable_nestloop TO off`); err != nil {
		return fmt.Errorf("swap plan: %w", err)
	}
	for _, t := range rb.model.Tables {
		cols, err := rb.columns(ctx, tx, t.Name)
		if err != nil {
			return err
		}
		// Only the rows that differ move: a live row with no identical
		// shadow row (by key, on every compared column) is deleted, a
		// shadow row with no identical live row is inserted. A row that
		// differs only in Ignore columns (a clock, a sequence) stays.
		// DELETE, not TRUNCATE: readers of the live table (the API) keep
		// reading the old rows until the commit instead of waiting.
		same := make([]string, 0, len(t.Key)+1)
		for _, k := range t.Key {
			q := pgx.Identifier{k}.Sanitize()
			same = append(same, "l."+q+" = s."+q)
		}
		compared := slices.DeleteFunc(slices.Clone(cols), func(c string) bool { return slices.Contains(t.Ignore, c) })
		var lc, sc []string
		for _, c := range compared {
			q := pgx.Identifier{c}.Sanitize()
			lc, sc = append(lc, "l."+q), append(sc, "s."+q)
		}
		same = append(same, `ROW(`+strings.Join(lc, ", ")+`) IS NOT DISTINCT FROM ROW(`+strings.Join(sc, ", ")+`)`)
		identical := strings.Join(same, " AND ")
		name := pgx.Identifier{t.Name}.Sanitize()
		cols = slices.DeleteFunc(cols, func(c string) bool { return slices.Contains(t.Generated, c) })
		list := quoteAll(cols)
		// An empty live table (a first rebuild) takes every shadow row,
		// with nothing to delete and nothing to compare them with.
		var empty bool
		if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM `+rb.live+`.`+name+`)`).Scan(&empty); err != nil {
			return fmt.Errorf("swap %s: %w", t.Name, err)
		}
		if empty {
			if _, err := tx.Exec(ctx, `INSERT INTO `+rb.live+`.`+name+` (`+list+`) SELECT `+list+` FROM `+rb.shadow+`.`+name); err != nil {
				return fmt.Errorf("swap %s: %w", t.Name, err)
			}
			continue
		}
		if _, err := tx.Exec(ctx, `DELETE FROM `+rb.live+`.`+name+` l
			WHERE NOT EXISTS (SELECT 1 FROM `+rb.shadow+`.`+name+` s WHERE `+identical+`)`); err != nil {
			return fmt.Errorf("clear %s: %w", t.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+rb.live+`.`+name+` (`+list+`) SELECT `+list+` FROM `+rb.shadow+`.`+name+` s
			WHERE NOT EXISTS (SELECT 1 FROM `+rb.live+`.`+name+` l WHERE `+identical+`)`); err != nil {
			return fmt.Errorf("swap %s: %w", t.Name, err)
		}
	}
	for i, s := range rb.model.Sources {
		if _, err := tx.Exec(ctx, `UPDATE `+rb.live+`.checkpoints SET last_seq = $2, updated_at = now() WHERE consumer = $1`, s.Consumer, int64(rb.pos[i])); err != nil {
			return fmt.Errorf("move checkpoint of %s: %w", s.Consumer, err)
		}
	}
	rep.Swapped = true
	return nil
}

// columns lists table's columns in the live schema, in order.
func (rb *rebuild) columns(ctx context.Context, tx pgx.Tx, table string) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT a.attname FROM pg_attribute a
		WHERE a.attrelid = ($1 || '.' || $2)::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
		rb.live, pgx.Identifier{table}.Sanitize())
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	return cols, nil
}

func quoteAll(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = pgx.Identifier{c}.Sanitize()
	}
	return strings.Join(q, ", ")
}

// compare counts both tables' rows and the rows that differ (by key, on
// every column but ignore), with up to MaxExamples keys.
func (rb *rebuild) compare(ctx context.Context, tx pgx.Tx, table string, key, ignore []string) (TableReport, error) {
	tr := TableReport{Name: table}
	name := pgx.Identifier{table}.Sanitize()
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+rb.live+`.`+name+`), (SELECT count(*) FROM `+rb.shadow+`.`+name+`)`).
		Scan(&tr.LiveRows, &tr.ShadowRows); err != nil {
		return tr, fmt.Errorf("count %s: %w", table, err)
	}
	if tr.LiveRows == 0 || tr.ShadowRows == 0 {
		return rb.compareOneSided(ctx, tx, tr, key)
	}
	cols, err := rb.columns(ctx, tx, table)
	if err != nil {
		return tr, err
	}
	cols = slices.DeleteFunc(cols, func(c string) bool { return slices.Contains(ignore, c) })
	var on, lcols, scols, keyText []string
	for _, k := range key {
		q := pgx.Identifier{k}.Sanitize()
		on = append(on, "l."+q+" = s."+q)
		keyText = append(keyText, fmt.Sprintf(`'%s=' || COALESCE(l.%s, s.%s)::text`, strings.ReplaceAll(k, "'", ""), q, q))
	}
	for _, c := range cols {
		q := pgx.Identifier{c}.Sanitize()
		lcols = append(lcols, "l."+q)
		scols = append(scols, "s."+q)
	}
	k0 := pgx.Identifier{key[0]}.Sanitize()
	rows, err := tx.Query(ctx, `SELECT count(*) OVER (), `+strings.Join(keyText, ` || ' ' || `)+`,
		CASE WHEN s.`+k0+` IS NULL THEN 'live only' WHEN l.`+k0+` IS NULL THEN 'rebuild only' ELSE 'differs' END
		FROM `+rb.live+`.`+name+` l FULL JOIN `+rb.shadow+`.`+name+` s ON `+strings.Join(on, " AND ")+`
		WHERE ROW(`+strings.Join(lcols, ", ")+`) IS DISTINCT FROM ROW(`+strings.Join(scols, ", ")+`)
		ORDER BY 2 LIMIT `+fmt.Sprint(MaxExamples))
	if err != nil {
		return tr, fmt.Errorf("compare %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var d RowDiff
		if err := rows.Scan(&tr.Differing, &d.Key, &d.Where); err != nil {
			return tr, fmt.Errorf("compare %s: %w", table, err)
		}
		tr.Examples = append(tr.Examples, d)
	}
	if err := rows.Err(); err != nil {
		return tr, fmt.Errorf("compare %s: %w", table, err)
	}
	return tr, nil
}

// compareOneSided is compare when one side is empty (a first rebuild, an
// empty stream): every row of the other side differs, and the examples
// are its first keys in the order compare lists them, without joining.
func (rb *rebuild) compareOneSided(ctx context.Context, tx pgx.Tx, tr TableReport, key []string) (TableReport, error) {
	from, where := rb.shadow, "rebuild only"
	tr.Differing = tr.ShadowRows
	if tr.ShadowRows == 0 {
		from, where, tr.Differing = rb.live, "live only", tr.LiveRows
	}
	if tr.Differing == 0 {
		return tr, nil
	}
	var keyText []string
	for _, k := range key {
		keyText = append(keyText, fmt.Sprintf(`'%s=' || %s::text`, strings.ReplaceAll(k, "'", ""), pgx.Identifier{k}.Sanitize()))
	}
	rows, err := tx.Query(ctx, `SELECT `+strings.Join(keyText, ` || ' ' || `)+` FROM `+from+`.`+pgx.Identifier{tr.Name}.Sanitize()+`
		ORDER BY 1 LIMIT `+fmt.Sprint(MaxExamples))
	if err != nil {
		return tr, fmt.Errorf("compare %s: %w", tr.Name, err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return tr, fmt.Errorf("compare %s: %w", tr.Name, err)
	}
	for _, k := range keys {
		tr.Examples = append(tr.Examples, RowDiff{Key: k, Where: where})
	}
	return tr, nil
}
