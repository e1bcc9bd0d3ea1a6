package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/facho-olt/facho/pkg/pgtest"
)

// The CSV of facho export onu-data (Postgres's COPY of onu_data, the
// walks applied on the way out) has the rows of the parquet export
// (read into Go through the join), whatever the walks, removals, empty
// strings, NULLs, quoted fields and fractions of a second; --olt keeps
// one OLT's.
func TestExportONUDataCSVAsParquet(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.New(t)
	if _, err := pool.Exec(ctx, `INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, description, status, rx_power_dbm, first_seen, last_seen, last_execution_id,
			onu_index, port_name, name, tx_power_dbm, last_down_cause, last_down_at, last_up_at, model, removed_at) VALUES
		-- olt-1's walk is later than these two: seen by it
		('olt-1', 1, 1, 'HWTC1', 'cliente, "uno"', 'ONLINE', -21.5, '2026-01-02T03:04:05Z', '2026-01-02T03:04:05Z', 'e1', '1.1', '0/1/0:1', 'casa', 2.25, 'dying-gasp', '2026-01-01T10:00:00Z', '2026-01-01T10:05:00.5Z', 'HG8245H', NULL),
		('olt-1', 1, 2, '', '', 'OFFLINE', NULL, '2026-01-02T03:04:05Z', '2026-01-02T03:04:05.999999Z', '', '', '', '', NULL, '', NULL, NULL, '', NULL),
		-- removed: the walk does not count
		('olt-1', 1, 3, 'HWTC3', 'b', 'OFFLINE', NULL, '2026-01-02T03:04:05Z', '2026-01-02T03:04:05Z', 'e1', '', '', '', NULL, '', NULL, NULL, '', '2026-01-03T00:00:00.25Z'),
		-- later than the walk
		('olt-1', 1, 4, 'HWTC4', 'line
break', 'ONLINE', -19, '2026-01-02T03:04:05Z', '2026-01-02T03:04:06.5Z', 'e9', '', '', '', NULL, '', NULL, NULL, '', NULL),
		-- the same time as the walk: its own
		('olt-1', 1, 5, 'HWTC5', '', 'ONLINE', -19, '2026-01-02T03:04:05Z', '2026-01-02T03:04:06.25Z', 'e8', '', '', '', NULL, '', NULL, NULL, '', NULL),
		-- an OLT id COPY quotes, walked; an OLT without a walk
		('olt,2', 7, 1, 'HWTC6', '', 'ONLINE', -20, '2026-01-02T03:04:05Z', '2026-01-02T03:04:05Z', 'e2', '', '', '', NULL, '', NULL, NULL, '', NULL),
		('olt-3', 1, 1, 'HWTC7', '', 'ONLINE', -20, '2026-01-02T03:04:05Z', '2026-01-02T03:04:05Z', 'e3', '', '', '', NULL, '', NULL, NULL, '', NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO onu_walks (olt_id, execution_id, seen_at) VALUES
		('olt-1', 'walk-1', '2026-01-02T03:04:06.25Z'), ('olt,2', 'walk, 2', '2026-01-05T00:00:00Z')`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		olt  string
		want []string // of each row: olt_id, onu_id, last_seen, last_execution_id
	}{
		{"", []string{ // parquet's order: by OLT ("," before "-"), PON, ONU
			"olt,2 1 2026-01-05T00:00:00Z walk, 2",
			"olt-1 1 2026-01-02T03:04:06.25Z walk-1", "olt-1 2 2026-01-02T03:04:06.25Z walk-1", "olt-1 3 2026-01-02T03:04:05Z e1",
			"olt-1 4 2026-01-02T03:04:06.5Z e9", "olt-1 5 2026-01-02T03:04:06.25Z e8", "olt-3 1 2026-01-02T03:04:05Z e3"}},
		{"olt,2", []string{"olt,2 1 2026-01-05T00:00:00Z walk, 2"}},
	} {
		var csvOut, pqOut bytes.Buffer
		n, err := exportONUData(ctx, pool, tc.olt, "csv", &csvOut)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := exportONUData(ctx, pool, tc.olt, "parquet", &pqOut); err != nil {
			t.Fatal(err)
		}
		got, err := csv.NewReader(&csvOut).ReadAll()
		if err != nil {
			t.Fatalf("olt %q: csv: %v", tc.olt, err)
		}
		if len(got) == 0 || !slices.Equal(got[0], onuDataHeader) || n != int64(len(got)-1) {
			t.Fatalf("olt %q: %d rows, csv %v", tc.olt, n, got)
		}
		rows, err := parquet.Read[onuDataRow](bytes.NewReader(pqOut.Bytes()), int64(pqOut.Len()))
		if err != nil {
			t.Fatal(err)
		}
		var want [][]string
		var summary []string
		for _, r := range rows {
			want = append(want, r.csv())
			summary = append(summary, strings.Join([]string{r.OLTID, r.csv()[2], microsText(r.LastSeen), r.LastExecutionID}, " "))
		}
		if !slices.Equal(summary, tc.want) {
			t.Errorf("olt %q: parquet rows\n%s\nwant\n%s", tc.olt, strings.Join(summary, "\n"), strings.Join(tc.want, "\n"))
		}
		cmp := func(a, b []string) int { return slices.Compare(a, b) }
		got = got[1:]
		slices.SortFunc(got, cmp)
		slices.SortFunc(want, cmp)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("olt %q: csv rows\n%q\nwant (the parquet export's)\n%q", tc.olt, got, want)
		}
	}
}
