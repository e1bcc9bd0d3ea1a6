package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/oltsim"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A tiny fleet through the whole bench, so the command cannot rot: the
// figures are printed, not asserted; what is checked is that a cycle was
// measured, the JSON has its keys, and nothing is left behind. Two cycles
// with BurstEveryCycle: the second falls due together because the bench
// disabled and enabled the jobs once the first was committed.
func TestBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the service binaries")
	}
	server := pgtest.ServerURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	before := leftovers(t, ctx, server)
	var progress bytes.Buffer
	res, err := Run(ctx, Config{
		OLTs: 2, Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 8}, Cycles: 2, Interval: time.Minute, BurstEveryCycle: true,
		BaselineOLTs: 1, ProfileSeconds: 1, DatabaseURL: server, Progress: &progress, Log: zerolog.Nop(), StatusChurnPercent: 20,
		Timeout: 2 * time.Minute,
	})
	if err != nil {
		t.Fatalf("bench: %v\nprogress:\n%s", err, progress.String())
	}
	var table bytes.Buffer
	res.WriteTable(&table)
	t.Logf("\n%s", table.String())
	if res.Incomplete != "" || len(res.PerCycle) != 2 || res.Varbinds == 0 {
		t.Fatalf("not 2 complete cycles measured: %+v", res)
	}
	// Cycle 2 counts as fallen due together only when the bench re-enabled
	// the jobs before its natural runs (end + 1 minute) started.
	for _, c := range res.PerCycle {
		if !c.FellDueTogether {
			t.Errorf("cycle %d did not fall due together", c.Cycle)
		}
	}
	if res.PerCycle[1].EndToEndSeconds <= 0 {
		t.Errorf("cycle 2 has no end-to-end time: %+v", res.PerCycle[1])
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(js.Bytes(), &keys); err != nil {
		t.Fatal(err)
	}
	// The alerter evaluated at least the first discovery's new ONUs.
	if a := res.Alerting; a == nil || a.ONUEvents < int64(res.ONUs) || a.LagP99 <= 0 || a.PendingAtEnd != 0 {
		t.Errorf("alerting figures: %+v, want every discovered ONU (%d) evaluated", a, res.ONUs)
	}
	for _, k := range []string{"walk_varbinds_per_s", "end_to_end_varbinds_per_s", "cycle_seconds", "lateness_p99_seconds", "stream_bytes_per_varbind", "alerting"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("JSON lacks %s", k)
		}
	}
	if after := leftovers(t, ctx, server); after != before {
		t.Errorf("left behind: before %q, after %q", before, after)
	}
}

// leftovers lists the bench's temporary folders and databases.
func leftovers(t *testing.T, ctx context.Context, server string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "facho-bench-*"))
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname LIKE 'facho\_bench\_%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%v databases:%d", dirs, n)
}
