package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/facho-olt/facho/pkg/pgtest"
)

// facho export onu-history reads onu_history from Postgres: CSV with a
// header and the rows of the range (NULL an empty cell), parquet read back
// with its nulls, time range and --olt filters, --out written whole.
func TestExportONUHistory(t *testing.T) {
	dbURL := pgtest.URL(t)
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	db, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, r := range []struct {
		olt        string
		field      string
		old, new   any
		at         time.Time
		seq        int
		exec, note string
	}{
		{olt: "olt-1", field: "status", old: nil, new: "ONLINE", at: t0, seq: 1, exec: "e1"},
		{olt: "olt-1", field: "rx_power_dbm", old: nil, new: "-20.5", at: t0, seq: 1, exec: "e1"},
		{olt: "olt-2", field: "description", old: nil, new: `cliente, "uno"`, at: t0.Add(30 * time.Minute), seq: 7, exec: "e7"},
		{olt: "olt-1", field: "rx_power_dbm", old: "-20.5", new: nil, at: t0.Add(time.Hour), seq: 2, exec: "e2"},
		{olt: "olt-1", field: "status", old: "ONLINE", new: "OFFLINE", at: t0.Add(2 * time.Hour), seq: 3, exec: "e3"},
	} {
		if _, err := db.Exec(context.Background(), `INSERT INTO onu_history (olt_id, pon_index, onu_id, field, old_value, new_value, at, execution_id, stream_seq)
			VALUES ($1, 4194304000, 1, $2, $3, $4, $5, $6, $7)`, r.olt, r.field, r.old, r.new, r.at, r.exec, r.seq); err != nil {
			t.Fatal(err)
		}
	}

	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"export", "onu-history", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T01:00:00Z"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("export: %v (%s)", err, errOut.String())
	}
	want := "at,olt_id,pon_index,onu_id,field,old_value,new_value,execution_id,stream_seq\n" +
		"2026-01-01T00:00:00Z,olt-1,4194304000,1,rx_power_dbm,,-20.5,e1,1\n" +
		"2026-01-01T00:00:00Z,olt-1,4194304000,1,status,,ONLINE,e1,1\n" +
		"2026-01-01T00:30:00Z,olt-2,4194304000,1,description,,\"cliente, \"\"uno\"\"\",e7,7\n" +
		"2026-01-01T01:00:00Z,olt-1,4194304000,1,rx_power_dbm,-20.5,,e2,2\n"
	// Oldest first; the changes of one time in any order.
	if !sameRowsByTime(out.String(), want) {
		t.Errorf("csv:\n%s\nwant (rows of one time in any order):\n%s", out.String(), want)
	}
	if !strings.Contains(errOut.String(), "export onu-history: 4 rows") {
		t.Errorf("summary: %q", errOut.String())
	}
	recs, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil || len(recs) != 5 || recs[3][6] != `cliente, "uno"` || recs[3][0] != "2026-01-01T00:30:00Z" {
		t.Errorf("csv does not read back: %v %v", recs, err)
	}

	// Parquet to a file, one OLT, from the oldest to now.
	path := filepath.Join(t.TempDir(), "history.parquet")
	out.Reset()
	if err := run(context.Background(), []string{"export", "onu-history", "--olt", "olt-1", "--format", "parquet", "--out", path}, getenv, &out, &errOut); err != nil {
		t.Fatalf("export parquet: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("--out also wrote %d bytes to stdout", out.Len())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte("PAR1")) || !bytes.HasSuffix(raw, []byte("PAR1")) {
		t.Fatalf("not a parquet file")
	}
	rows, err := parquet.Read[onuHistoryRow](bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("parquet rows %+v", rows)
	}
	if rows[0].Field != "rx_power_dbm" || rows[0].OldValue != nil || *rows[0].NewValue != "-20.5" || rows[0].PonIndex != 4194304000 ||
		microsText(rows[0].At) != "2026-01-01T00:00:00Z" || rows[2].NewValue != nil || *rows[2].OldValue != "-20.5" ||
		rows[3].Field != "status" || *rows[3].NewValue != "OFFLINE" || rows[3].StreamSeq != 3 || rows[3].ExecutionID != "e3" {
		t.Errorf("parquet rows %+v", rows)
	}
	// What DuckDB reads: the column names and types of the schema.
	f, err := parquet.OpenFile(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range f.Schema().Fields() {
		cols = append(cols, c.Name())
	}
	if strings.Join(cols, ",") != strings.Join(onuHistoryHeader, ",") {
		t.Errorf("parquet columns %v, want %v", cols, onuHistoryHeader)
	}
	if _, ok := f.Schema().Fields()[0].Type().LogicalType().Value.(*format.TimestampType); !ok {
		t.Errorf("at is not a parquet timestamp: %v", f.Schema().Fields()[0].Type())
	}
	if nv := f.Schema().Fields()[6]; !nv.Optional() || nv.Type().LogicalType() == nil {
		t.Errorf("new_value is not optional: %v", nv.Type())
	} else if _, ok := nv.Type().LogicalType().Value.(*format.StringType); !ok {
		t.Errorf("new_value is not an optional string: %v", nv.Type())
	}
	if f.NumRows() != 4 {
		t.Errorf("parquet footer: %d rows", f.NumRows())
	}

	// An empty range is a header alone; a failed export leaves no file.
	out.Reset()
	if err := run(context.Background(), []string{"export", "onu-history", "--from", "2025-01-01T00:00:00Z", "--to", "2025-01-02T00:00:00Z"}, getenv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if out.String() != strings.Join(onuHistoryHeader, ",")+"\n" {
		t.Errorf("empty range: %q", out.String())
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	badDB := func(k string) string {
		if k == "DATABASE_URL" {
			return "postgres://postgres@127.0.0.1:1/nope?connect_timeout=1"
		}
		return ""
	}
	if err := run(context.Background(), []string{"export", "onu-history", "--out", bad}, badDB, &out, &errOut); err == nil {
		t.Error("export against no database succeeded")
	}
	if entries, _ := os.ReadDir(filepath.Dir(bad)); len(entries) != 0 {
		t.Errorf("a failed export left %v", entries)
	}
}

// sameRowsByTime reports whether CSV got has want's header and rows, the
// rows in want's order but for rows of the same first field (time), in
// any order among themselves. Rows are lines: no field of these tests
// has a line break.
func sameRowsByTime(got, want string) bool {
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	if len(g) != len(w) || g[0] != w[0] {
		return false
	}
	for i := 1; i < len(w); {
		j := i // w[i:j]: the rows of one time
		at, _, _ := strings.Cut(w[i], ",")
		for j < len(w) && strings.HasPrefix(w[j], at+",") {
			j++
		}
		gs, ws := slices.Clone(g[i:max(j, i+1)]), slices.Clone(w[i:max(j, i+1)])
		slices.Sort(gs)
		slices.Sort(ws)
		if !slices.Equal(gs, ws) {
			return false
		}
		i = max(j, i+1)
	}
	return true
}
