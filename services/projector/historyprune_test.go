package projector

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/streams"
)

// insertHistory writes n history rows of ONU onu at at (stream_seq from
// seq on).
func (r *rig) insertHistory(onu int64, at time.Time, seq, n int) {
	r.t.Helper()
	for i := range n {
		if _, err := r.pool.Exec(context.Background(), `INSERT INTO onu_history (olt_id, pon_index, onu_id, field, old_value, new_value, at, execution_id, stream_seq)
			VALUES ('olt-p', 1, $1, 'rx_power_dbm', '-20', '-21', $2, 'e', $3)`, onu, at, seq+i); err != nil {
			r.t.Fatal(err)
		}
	}
}

// historyAts returns the times of the history rows, oldest first, and how
// many there are.
func (r *rig) historyAts() []time.Time {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), `SELECT at FROM onu_history ORDER BY at, stream_seq`)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, at.UTC())
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *rig) countHistoryBefore(before time.Time) int {
	r.t.Helper()
	var n int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM onu_history WHERE at < $1`, before).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// gaugeOf is the value of the gauge or counter name (-1: not registered).
func gaugeOf(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// partitionsOf lists table's partitions, sorted.
func (r *rig) partitionsOf(table string) []string {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass ORDER BY 1`, table)
	if err != nil {
		r.t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		r.t.Fatal(err)
	}
	return names
}

// countIn counts the rows of a partition.
func (r *rig) countIn(table string) int {
	r.t.Helper()
	var n int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// The projector holding the maintenance lock keeps the history's day
// partitions: today's and the week ahead are made; the days of rows the
// default partition took are made and those rows moved into them; a day
// all older than the retention is dropped whole; the expired rows of the
// default partition are deleted in batches, the newer ones (and one at
// the start of the oldest day kept) are kept. A standby projector takes
// over when the holder stops. The metrics count what was done.
func TestHistoryPrunedOlderThanRetention(t *testing.T) {
	r := newRig(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	const retention = 24 * time.Hour
	// Kept: the rows of 2026-11-20 (its end is within the retention).
	limit := historyExpiry(now, retention)
	if want := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC); !limit.Equal(want) {
		t.Fatalf("expiry %s, want %s", limit, want)
	}
	conn, err := r.pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	old := time.Date(2026, 11, 18, 0, 0, 0, 0, time.UTC)
	if _, err := addDayPartition(context.Background(), conn.Conn(), "onu_history", "at", "onu_history_default", old); err != nil {
		t.Fatal(err)
	}
	conn.Release()
	r.insertHistory(7, old.Add(10*time.Hour), 600, 5)    // a day partition all expired: dropped
	r.insertHistory(1, now.Add(-400*24*time.Hour), 1, 9) // a year and more
	r.insertHistory(2, limit.Add(-time.Second), 100, 14) // just too old
	r.insertHistory(3, limit, 200, 2)                    // the oldest day kept: kept
	r.insertHistory(4, now.Add(-time.Hour), 300, 3)      // recent
	r.insertHistory(5, now.Add(time.Minute), 400, 1)     // a clock ahead
	if got := r.countIn("onu_history_default"); got != 29 {
		t.Fatalf("%d rows in the default partition before, want 29 (no partition of those days yet)", got)
	}
	cfg := Config{HistoryRetention: retention, HistoryPruneEvery: 100 * time.Millisecond, HistoryPruneBatch: 5,
		clock: func() time.Time { return now }}
	stop1 := r.startWith(cfg)
	r.eventually("rows older than the retention pruned", func() bool { return r.countHistoryBefore(limit) == 0 })
	r.eventually("partitions made", func() bool { return r.countIn("onu_history_default") == 0 })

	var want []time.Time
	for range 2 {
		want = append(want, limit)
	}
	for range 3 {
		want = append(want, now.Add(-time.Hour))
	}
	want = append(want, now.Add(time.Minute))
	if got := r.historyAts(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("history left\n got %v\nwant %v", got, want)
	}
	parts := r.partitionsOf("onu_history")
	for _, p := range []string{"onu_history_p20261120", "onu_history_p20261121", "onu_history_p20261128", "onu_history_default"} {
		if !slices.Contains(parts, p) {
			t.Errorf("no partition %s: %v", p, parts)
		}
	}
	if slices.Contains(parts, "onu_history_p20261118") || slices.Contains(parts, "onu_history_p20261119") {
		t.Errorf("expired days have partitions: %v", parts)
	}
	if got := r.countIn("onu_history_p20261120"); got != 2 {
		t.Errorf("%d rows moved into 2026-11-20's partition, want 2", got)
	}
	if !slices.Contains(r.partitionsOf("onu_history_hourly"), "onu_history_hourly_p20261128") {
		t.Errorf("rollup partitions %v: none made ahead", r.partitionsOf("onu_history_hourly"))
	}
	if got := gaugeOf(t, r.reg, "facho_projector_history_pruned_rows_total"); got != 23 {
		t.Errorf("pruned rows total %v, want 23 (the default partition's expired rows)", got)
	}
	if got := gaugeOf(t, r.reg, "facho_projector_history_default_rows_moved_total"); got != 6 {
		t.Errorf("moved rows total %v, want 6", got)
	}
	if got := gaugeOf(t, r.reg, "facho_projector_history_prune_leader"); got != 1 {
		t.Errorf("leader gauge %v, want 1", got)
	}
	if got := counterWith(t, r.reg, "facho_projector_history_partitions_dropped_total", "onu_history"); got != 1 {
		t.Errorf("dropped partitions %v, want 1", got)
	}

	// A second projector stands by while the first holds the lock.
	reg2 := prometheus.NewRegistry()
	stop2 := r.runProjector(cfg, reg2)
	defer stop2()
	r.eventually("second projector registered", func() bool { return gaugeOf(t, reg2, "facho_projector_history_prune_leader") == 0 })
	// The first stops (its session lock goes with it): the second leads
	// and prunes what is too old now.
	stop1()
	r.insertHistory(6, now.Add(-48*time.Hour), 500, 7)
	r.eventually("standby leads and prunes", func() bool {
		return gaugeOf(t, reg2, "facho_projector_history_prune_leader") == 1 && r.countHistoryBefore(limit) == 0
	})
	if got := gaugeOf(t, reg2, "facho_projector_history_pruned_rows_total"); got != 7 {
		t.Errorf("second projector pruned %v rows, want 7", got)
	}
	if got := len(r.historyAts()); got != len(want) {
		t.Errorf("%d rows left, want %d", got, len(want))
	}
}

// counterWith is the value of counter name with label value v.
func counterWith(t *testing.T, reg *prometheus.Registry, name, v string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == v {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// pruneHistory deletes in statements of at most batch rows until none is
// older than before.
func TestPruneHistoryBatches(t *testing.T) {
	r := newRig(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	r.insertHistory(1, now.Add(-2*time.Hour), 1, 12)
	r.insertHistory(2, now, 100, 1)
	n, batches, err := pruneHistory(context.Background(), r.pool, "onu_history_default", "at", now.Add(-time.Hour), 5)
	if err != nil || n != 12 || batches != 3 {
		t.Fatalf("pruned %d rows in %d statements (%v), want 12 in 3", n, batches, err)
	}
	n, batches, err = pruneHistory(context.Background(), r.pool, "onu_history_default", "at", now.Add(-time.Hour), 4)
	if err != nil || n != 0 || batches != 1 {
		t.Fatalf("second pass: %d rows in %d statements (%v), want 0 in 1", n, batches, err)
	}
	if got := r.historyAts(); len(got) != 1 || !got[0].Equal(now) {
		t.Fatalf("left %v", got)
	}
}

// Retention 0 keeps the history forever: nothing is pruned (the day
// partitions are still made ahead), and the rebuild prunes nothing either.
func TestHistoryRetentionZeroKeepsForever(t *testing.T) {
	r := newRig(t)
	now := time.Now().UTC().Truncate(time.Second)
	r.insertHistory(1, now.Add(-10*365*24*time.Hour), 1, 3)
	r.startWith(Config{HistoryPruneEvery: 100 * time.Millisecond})
	r.eventually("projector metrics registered", func() bool { return gaugeOf(t, r.reg, "facho_projector_varbind_leader") == 1 })
	// The partitions are still kept (made ahead), nothing is dropped.
	r.eventually("maintenance leading", func() bool { return gaugeOf(t, r.reg, "facho_projector_history_prune_leader") == 1 })
	r.eventually("a pass done", func() bool {
		return slices.Contains(r.partitionsOf("onu_history"), partitionName("onu_history", utcDay(time.Now()).Add(HistoryPartitionsAhead*24*time.Hour)))
	})
	// The old rows moved into a partition of their day, not pruned.
	r.eventually("old rows in their day's partition", func() bool { return r.countIn("onu_history_default") == 0 })
	if got := gaugeOf(t, r.reg, "facho_projector_history_pruned_rows_total"); got != 0 {
		t.Errorf("pruned %v rows with retention 0", got)
	}
	if got := len(r.historyAts()); got != 3 {
		t.Errorf("%d rows left, want 3", got)
	}
	models, err := ReadModels(Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		if m.Prune != nil {
			t.Errorf("read model %s prunes with retention 0", m.Name)
		}
	}
}

// A rebuild of onu_data prunes its shadow's onu_history as the live
// pruner prunes the live one: with the same retention the rebuild is
// identical; without it the rebuild would bring the pruned rows back.
func TestRebuildPrunesHistoryAsLive(t *testing.T) {
	r := newRig(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	const retention = 24 * time.Hour
	r.startWith(Config{HistoryRetention: retention, HistoryPruneEvery: 100 * time.Millisecond, clock: clock})
	o := huaweiONU{id: 3, serial: 0xBEEF, desc: "casa 3", online: true, rx: -1900}
	r.publish(streams.SubjectVarbinds("olt-r"), batch("olt-r", "old", 1, now.Add(-48*time.Hour), o)) // discovered 2 days ago
	o.rx = -2900
	last := r.publish(streams.SubjectVarbinds("olt-r"), batch("olt-r", "new", 1, now.Add(-time.Hour), o)) // power drop an hour ago
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, last)
	r.eventually("discovery rows pruned", func() bool { return r.countHistoryBefore(now.Add(-retention)) == 0 })
	if got := r.historyAts(); len(got) != 1 || !got[0].Equal(now.Add(-time.Hour)) {
		t.Fatalf("live history %v, want the power drop only", got)
	}

	rebuild := func(cfg Config) replay.Report {
		t.Helper()
		models, err := ReadModels(cfg, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range models {
			if m.Name == ReadModelONUData {
				rep, err := replay.Rebuild(context.Background(), r.js, r.pool, m, replay.RebuildOptions{DryRun: true, Log: zerolog.Nop()})
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
		}
		t.Fatal("no onu_data read model")
		return replay.Report{}
	}
	if rep := rebuild(Config{HistoryRetention: retention, clock: clock}); !rep.Identical {
		t.Errorf("rebuild with the live retention differs: %+v", rep.Tables)
	}
	rep := rebuild(Config{})
	var hist string
	for _, tr := range rep.Tables {
		if tr.Name == "onu_history" {
			hist = fmt.Sprintf("%d live, %d rebuilt", tr.LiveRows, tr.ShadowRows)
		}
	}
	// The discovery's 6 first-reading rows come back.
	if rep.Identical || hist != "1 live, 7 rebuilt" {
		t.Errorf("rebuild keeping history forever: identical %v, onu_history %s; want the pruned rows back", rep.Identical, hist)
	}
}

// A negative retention (or one under an hour) is refused, naming the
// setting; 0 keeps forever.
func TestHistoryRetentionValidated(t *testing.T) {
	for _, tc := range []struct {
		retention time.Duration
		ok        bool
	}{
		{0, true}, {time.Hour, true}, {DefaultHistoryRetention, true}, {-time.Hour, false}, {30 * time.Minute, false},
	} {
		err := Config{HistoryRetention: tc.retention}.WithDefaults().Validate()
		if (err == nil) != tc.ok {
			t.Errorf("retention %s: %v, want ok=%v", tc.retention, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "FACHO_HISTORY_RETENTION") {
			t.Errorf("retention %s: error %q does not name FACHO_HISTORY_RETENTION", tc.retention, err)
		}
	}
	if err := (Config{HistoryPruneBatch: -1}).WithDefaults().Validate(); err == nil {
		t.Error("negative prune batch accepted")
	}
}

// The maintenance vacuums an ended day's rollup partition once it was
// written, and again only after late rows; today's is left to autovacuum.
func TestRollupDaysVacuumedOnceEnded(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	now := time.Now().UTC()
	yesterday := utcDay(now).Add(-24 * time.Hour)
	insert := func(hour time.Time, onu int64) {
		t.Helper()
		if _, err := r.pool.Exec(ctx, `INSERT INTO onu_history_hourly (olt_id, pon_index, onu_id, field, hour, min_value, max_value, last_value, last_at, last_seq)
			VALUES ('olt-v', 1, $1, 'rx_power_dbm', $2, -21, -20, -20, $2, 1)`, onu, hour); err != nil {
			t.Fatal(err)
		}
	}
	insert(yesterday.Add(5*time.Hour), 1)
	insert(utcDay(now), 1)
	// Yesterday's partition made (its rows moved out of the default one).
	if _, err := maintainPartitions(ctx, conn.Conn(), "onu_history_hourly", "hour", now, time.Time{}, 1000); err != nil {
		t.Fatal(err)
	}
	// Statistics reach the shared counters within a second or so: poll.
	vacuumedOnce := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, err := vacuumEndedDays(ctx, conn.Conn(), "onu_history_hourly", now)
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				return
			}
			if n > 1 || time.Now().After(deadline) {
				t.Fatalf("%s: %d partitions vacuumed, want 1 (yesterday's)", what, n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	vacuumedOnce("written yesterday")
	if n, err := vacuumEndedDays(ctx, conn.Conn(), "onu_history_hourly", now); err != nil || n != 0 {
		t.Fatalf("again, nothing written since: %d vacuumed (%v), want 0", n, err)
	}
	var last *time.Time
	if err := r.pool.QueryRow(ctx, `SELECT last_vacuum FROM pg_stat_user_tables WHERE relname = $1`, partitionName("onu_history_hourly", yesterday)).Scan(&last); err != nil || last == nil {
		t.Fatalf("yesterday's partition: last_vacuum %v (%v)", last, err)
	}
	insert(yesterday.Add(6*time.Hour), 2) // a late row
	vacuumedOnce("a late row")
}
