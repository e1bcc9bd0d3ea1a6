package dbmigrate_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/facho-olt/facho/migrations"
	"github.com/facho-olt/facho/pkg/pgtest"
)

// The migration that partitions onu_history keeps the rows a database
// already has: the old table becomes the partition of everything before
// today, the numeric changes get their hourly rollups, today and the next
// week get their partitions, and a row of any time can still be inserted.
func TestHistoryPartitioningKeepsRows(t *testing.T) {
	url := pgtest.EmptyURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	sqlFS, err := fs.Sub(migrations.FS, "sql")
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewMigrator(ctx, conn, "schema_version")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(sqlFS); err != nil {
		t.Fatal(err)
	}
	var seq int32
	for _, mg := range m.Migrations {
		if strings.Contains(mg.Name, "onu_history_partitions") {
			seq = mg.Sequence
		}
	}
	if seq == 0 {
		t.Fatal("no onu_history_partitions migration")
	}
	if err := m.MigrateTo(ctx, seq-1); err != nil {
		t.Fatal(err)
	}
	old := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Hour)
	if _, err := conn.Exec(ctx, `INSERT INTO onu_history (olt_id, pon_index, onu_id, field, old_value, new_value, at, execution_id, stream_seq) VALUES
		('o', 1, 1, 'rx_power_dbm', NULL, '-20', $1, 'e1', 1),
		('o', 1, 1, 'status', NULL, 'ONLINE', $1, 'e1', 1),
		('o', 1, 1, 'rx_power_dbm', '-20', '-23.5', $1::timestamptz + interval '10 minutes', 'e2', 2),
		('o', 1, 1, 'rx_power_dbm', '-23.5', NULL, $1::timestamptz + interval '20 minutes', 'e3', 3)`, old); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, seq); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT tableoid::regclass::text, count(*) FROM onu_history GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type part struct {
		Name string
		N    int
	}
	parts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[part])
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 1 || parts[0] != (part{"onu_history_legacy", 4}) {
		t.Errorf("rows by partition %v, want the 4 in onu_history_legacy", parts)
	}
	var mn, mx float64
	var last *float64
	if err := conn.QueryRow(ctx, `SELECT min_value, max_value, last_value FROM onu_history_hourly WHERE field = 'rx_power_dbm' AND hour = $1`, old).Scan(&mn, &mx, &last); err != nil {
		t.Fatalf("rollup of the old rows: %v", err)
	}
	if mn != -23.5 || mx != -20 || last != nil {
		t.Errorf("rollup min %v max %v last %v, want -23.5 -20 null", mn, mx, last)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'onu_history'::regclass AND c.relname LIKE 'onu_history_p%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 8 {
		t.Errorf("%d day partitions, want today's and the next 7", n)
	}
	// Any time goes somewhere: the past (legacy), today, far ahead (default).
	for i, at := range []time.Time{old.Add(-1000 * time.Hour), time.Now(), time.Now().Add(1000 * time.Hour)} {
		if _, err := conn.Exec(ctx, `INSERT INTO onu_history (olt_id, pon_index, onu_id, field, new_value, at, stream_seq) VALUES ('o', 1, 2, 'status', 'ONLINE', $1, $2)`, at, 10+i); err != nil {
			t.Errorf("insert at %s: %v", at, err)
		}
	}
}
