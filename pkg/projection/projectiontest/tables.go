// Package projectiontest compares a read model's tables with a copy of
// them, for tests that check a rebuild against the live projection without
// the rebuild's own comparison.
package projectiontest

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/facho-olt/facho/pkg/projection"
)

// Snapshot copies tables (of the current schema) into schema snap.
func Snapshot(t testing.TB, db *pgxpool.Pool, snap string, tables []projection.Table) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{snap}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if _, err := db.Exec(ctx, `CREATE TABLE `+pgx.Identifier{snap, tb.Name}.Sanitize()+` AS TABLE `+pgx.Identifier{tb.Name}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
}

// Diff compares each table of the current schema with its copy in schema
// snap, row for row on every column but the table's Ignore ones (EXCEPT
// ALL both ways: duplicates count), and returns the differing rows per
// table, logging a few of each side.
func Diff(t testing.TB, db *pgxpool.Pool, snap string, tables []projection.Table) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	out := map[string]int64{}
	for _, tb := range tables {
		rows, err := db.Query(ctx, `SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, tb.Name)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(cols) == 0 {
			t.Fatalf("columns of %s: %v %v", tb.Name, cols, err)
		}
		var keep []string
		for _, c := range cols {
			ignored := false
			for _, ig := range tb.Ignore {
				ignored = ignored || ig == c
			}
			if !ignored {
				keep = append(keep, pgx.Identifier{c}.Sanitize())
			}
		}
		list := strings.Join(keep, ", ")
		name := pgx.Identifier{tb.Name}.Sanitize()
		other := pgx.Identifier{snap, tb.Name}.Sanitize()
		var n int64
		if err := db.QueryRow(ctx, `SELECT count(*) FROM ((SELECT `+list+` FROM `+name+` EXCEPT ALL SELECT `+list+` FROM `+other+`)
			UNION ALL (SELECT `+list+` FROM `+other+` EXCEPT ALL SELECT `+list+` FROM `+name+`)) d`).Scan(&n); err != nil {
			t.Fatalf("compare %s: %v", tb.Name, err)
		}
		out[tb.Name] = n
		if n > 0 {
			ex, err := db.Query(ctx, `SELECT 'current: ' || d::text FROM (SELECT `+list+` FROM `+name+` EXCEPT ALL SELECT `+list+` FROM `+other+` LIMIT 3) d
				UNION ALL SELECT 'copy: ' || d::text FROM (SELECT `+list+` FROM `+other+` EXCEPT ALL SELECT `+list+` FROM `+name+` LIMIT 3) d`)
			if err == nil {
				lines, _ := pgx.CollectRows(ex, pgx.RowTo[string])
				t.Logf("%s differs, e.g.:\n  %s", tb.Name, strings.Join(lines, "\n  "))
			}
		}
	}
	return out
}
