package integration_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/poller"
	"github.com/facho-olt/facho/services/projector"
	"github.com/facho-olt/facho/streams"
)

// demoColumns are the discovery job `facho dev` configures on its
// simulated Huawei OLTs (devstack.HuaweiOIDs), as the planner puts them in
// a NodeDue.
var demoColumns = []streams.OIDSpec{
	{ID: "hw-ont-serial", OID: hwBase + ".43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
	{ID: "hw-ont-description", OID: hwBase + ".43.1.9", Field: streams.FieldDescription, Decoder: streams.Decoder{Kind: "string"}},
	{ID: "hw-ont-run-status", OID: hwBase + ".46.1.15", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}},
	{ID: "hw-ont-rx-power", OID: hwBase + ".51.1.4", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01, NoReading: new(int64(2147483647))}},
}

// historyRow is an onu_history row as the test compares it ("-": NULL).
type historyRow struct {
	Field, Old, New, Exec string
	Seq                   uint64
}

func (h historyRow) String() string {
	return fmt.Sprintf("%s:%s->%s@%s", h.Field, h.Old, h.New, h.Exec)
}

// startProjector runs the projector on its own connection as the
// projector identity.
func startProjector(t *testing.T, env *jstest.Env, pool *pgxpool.Pool, cfg projector.Config) {
	t.Helper()
	_, js := env.Connect(t, natsauth.Projector)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- projector.Run(ctx, cfg, projector.Deps{JS: js, DB: pool, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("projector: %v", err)
		}
	})
}

// An ONU's life scripted on the simulator (online at -19 dBm, a power
// drop to -29, offline, back at -19.5 after a repair, a poll that changes
// nothing), each step read by a real discovery (a poller over SNMP/UDP,
// the projector into Postgres through JetStream, with their own NATS
// identities), yields exactly its history rows, each linked to the
// execution and the varbind batch that made it, and exactly one
// ONU-change event per real change; the other ONUs of the OLT have only
// their first reading.
func TestSimulatedONULifeYieldsItsHistory(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	pool := pgtest.New(t)
	k, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := secret.ParseKey(k)
	box, err := secret.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := box.Seal(community)
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{olt("life", oltsim.Faults{})}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })
	sim := fleet.OLT("life")
	startPoller(t, env, box, poller.Config{PollerID: "p1", LeaseBusyDelay: 100 * time.Millisecond})
	startProjector(t, env, pool, projector.Config{FetchWait: 100 * time.Millisecond})

	onus := sim.ONUs()
	var target oltsim.ONU
	for _, o := range onus {
		if o.Online {
			target = o
			break
		}
	}
	if !target.Online {
		t.Fatal("no online onu in the simulator")
	}
	if err := sim.SetONURxPower(target.Index, -19); err != nil {
		t.Fatal(err)
	}

	addr := sim.Addr()
	vs, err := env.JS.Stream(ctx, streams.StreamVarbinds)
	if err != nil {
		t.Fatal(err)
	}
	discover := func(exec string) {
		t.Helper()
		n := streams.NodeDue{ExecutionID: exec, NodeID: "huawei-onu-discovery.life", JobID: "huawei-onu-discovery", JobName: "ONU discovery",
			OLTID: "life", BrandID: "huawei", IndexScheme: streams.IndexSchemePonONU, Kind: streams.KindDiscovery,
			Target: streams.Target{Host: addr.IP.String(), Port: addr.Port, CommunityEnc: sealed}, OIDs: demoColumns,
			Priority: 90, IntervalSeconds: 60, TimeoutSeconds: 60, ScheduledAt: time.Now().UTC()}
		b, err := streams.EncodeWithID(exec, "test", time.Now(), n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.JS.Publish(ctx, streams.SubjectNodeDue("life"), b); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "execution "+exec+" ended", 20*time.Second, func() (bool, string) {
			var status string
			err := pool.QueryRow(ctx, `SELECT status FROM executions WHERE id = $1`, exec).Scan(&status)
			return err == nil && status != projector.StatusRunning && status != projector.StatusPending, fmt.Sprint(status, err)
		})
		var status string
		if err := pool.QueryRow(ctx, `SELECT status FROM executions WHERE id = $1`, exec).Scan(&status); err != nil || status != projector.StatusSuccess {
			t.Fatalf("execution %s: %s (%v)", exec, status, err)
		}
		// Every batch of it applied, its events published.
		info, err := vs.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "varbinds of "+exec+" projected", 20*time.Second, func() (bool, string) {
			var cp uint64
			var pending int
			err := pool.QueryRow(ctx, `SELECT (SELECT last_seq FROM checkpoints WHERE consumer = $1),
				(SELECT count(*) FROM pending_events WHERE events IS NOT NULL)`, streams.ConsumerProjectorVarbinds).Scan(&cp, &pending)
			return err == nil && cp >= info.State.LastSeq && pending == 0, fmt.Sprintf("checkpoint %d of %d, %d pending (%v)", cp, info.State.LastSeq, pending, err)
		})
	}

	// The expected rows of the target, step by step.
	fields := func(exec string, kv ...string) []historyRow {
		var out []historyRow
		for i := 0; i < len(kv); i += 3 {
			out = append(out, historyRow{Field: kv[i], Old: kv[i+1], New: kv[i+2], Exec: exec})
		}
		return out
	}
	portName := fmt.Sprintf("%d:%d", target.PonIndex, target.ID)
	steps := []struct {
		exec   string
		script func() error
		rows   []historyRow // this step's rows, by field
		event  string       // this step's event kind ("": none)
	}{
		{"life-1", nil, fields("life-1",
			"description", "-", target.Description,
			"onu_index", "-", target.Index,
			"port_name", "-", portName,
			"rx_power_dbm", "-", "-19",
			"serial", "-", target.Serial,
			"status", "-", "ONLINE"), streams.ONUDiscovered},
		{"life-2", func() error { return sim.SetONURxPower(target.Index, -29) }, fields("life-2",
			"rx_power_dbm", "-19", "-29"), streams.ONUUpdated},
		{"life-3", func() error { return sim.SetONUOnline(target.Index, false) }, fields("life-3",
			"rx_power_dbm", "-29", "-",
			"status", "ONLINE", "OFFLINE"), streams.ONUStatusChanged},
		{"life-4", func() error {
			online, rx := true, -19.5
			return sim.PatchONU(target.Index, oltsim.ONUPatch{Online: &online, RxPowerDBm: &rx}) // repaired
		}, fields("life-4",
			"rx_power_dbm", "-", "-19.5",
			"status", "OFFLINE", "ONLINE"), streams.ONUStatusChanged},
		{"life-5", nil, nil, ""},
	}

	var want []historyRow
	var wantEvents []string
	othersEvents := len(onus) - 1
	for _, st := range steps {
		if st.script != nil {
			if err := st.script(); err != nil {
				t.Fatal(err)
			}
		}
		discover(st.exec)
		want = append(want, st.rows...)
		if st.event != "" {
			wantEvents = append(wantEvents, st.event+"/"+st.exec)
		}
		got := onuHistory(t, ctx, pool, target.PonIndex, int64(target.ID))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after %s: history of onu %s\n got %v\nwant %v", st.exec, target.Index, got, want)
		}
		// Each step's rows come from one varbind batch of that execution.
		for _, h := range got {
			if batchExec(t, ctx, vs, h.Seq) != h.Exec {
				t.Fatalf("row %v: batch %d is not of execution %s", h, h.Seq, h.Exec)
			}
		}
		evs := onuEvents(t, ctx, env.JS, len(wantEvents)+othersEvents)
		var gotEvents []string
		for _, e := range evs {
			if e.PonIndex == target.PonIndex && e.ONUID == int64(target.ID) {
				gotEvents = append(gotEvents, e.Change+"/"+e.ExecutionID)
			}
		}
		if fmt.Sprint(gotEvents) != fmt.Sprint(wantEvents) || len(evs) != len(wantEvents)+othersEvents {
			t.Fatalf("after %s: %d onu events, target's %v; want %d, target's %v", st.exec, len(evs), gotEvents, len(wantEvents)+othersEvents, wantEvents)
		}
		// The event carries what the rows say.
		if st.event != "" {
			last := lastEventOf(evs, target)
			if rx := rxText(last.Current.RxPowerDBm); rx != rowValue(want, "rx_power_dbm") || last.Current.Status != rowValue(want, "status") {
				t.Fatalf("%s event: status %s rx %s; history says %s, %s", st.exec, last.Current.Status, rx, rowValue(want, "status"), rowValue(want, "rx_power_dbm"))
			}
		}
	}

	// The other ONUs: their first reading only (one discovered event each,
	// from life-1, checked above), every field with a value, old NULL.
	for _, o := range onus {
		if o.Index == target.Index {
			continue
		}
		wantRows := []historyRow{
			{Field: "description", Old: "-", New: o.Description, Exec: "life-1"},
			{Field: "onu_index", Old: "-", New: o.Index, Exec: "life-1"},
			{Field: "port_name", Old: "-", New: fmt.Sprintf("%d:%d", o.PonIndex, o.ID), Exec: "life-1"},
		}
		if !math.IsNaN(o.RxPowerDBm) {
			wantRows = append(wantRows, historyRow{Field: "rx_power_dbm", Old: "-", New: strconv.FormatFloat(o.RxPowerDBm, 'g', -1, 64), Exec: "life-1"})
		}
		status := "OFFLINE"
		if o.Online {
			status = "ONLINE"
		}
		wantRows = append(wantRows, historyRow{Field: "serial", Old: "-", New: o.Serial, Exec: "life-1"},
			historyRow{Field: "status", Old: "-", New: status, Exec: "life-1"})
		if got := onuHistory(t, ctx, pool, o.PonIndex, int64(o.ID)); fmt.Sprint(got) != fmt.Sprint(wantRows) {
			t.Errorf("history of onu %s\n got %v\nwant %v", o.Index, got, wantRows)
		}
	}
	var total, onusWithHistory int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT (pon_index, onu_id)) FROM onu_history WHERE olt_id = 'life'`).Scan(&total, &onusWithHistory); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d onus, %d history rows (target: %d), %d onu events", onusWithHistory, total, len(want), len(wantEvents)+othersEvents)
}

// onuHistory returns an ONU's history rows in stream order, fields sorted
// within a batch.
func onuHistory(t *testing.T, ctx context.Context, pool *pgxpool.Pool, pon, onu int64) []historyRow {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT field, COALESCE(old_value, '-'), COALESCE(new_value, '-'), execution_id, stream_seq
		FROM onu_history WHERE olt_id = 'life' AND pon_index = $1 AND onu_id = $2 ORDER BY stream_seq, field`, pon, onu)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []historyRow
	for rows.Next() {
		var h historyRow
		if err := rows.Scan(&h.Field, &h.Old, &h.New, &h.Exec, &h.Seq); err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// batchExec returns the execution of the FACHO_VARBINDS message seq.
func batchExec(t *testing.T, ctx context.Context, vs jetstream.Stream, seq uint64) string {
	t.Helper()
	m, err := vs.GetMsg(ctx, seq)
	if err != nil {
		t.Fatalf("varbind batch %d: %v", seq, err)
	}
	_, b, err := streams.Decode[streams.VarbindBatch](m.Data)
	if err != nil {
		t.Fatalf("varbind batch %d: %v", seq, err)
	}
	return b.ExecutionID
}

// onuEvents reads FACHO_ONU once it holds at least want events.
func onuEvents(t *testing.T, ctx context.Context, js jetstream.JetStream, want int) []streams.ONUChanged {
	t.Helper()
	s, err := js.Stream(ctx, streams.StreamONU)
	if err != nil {
		t.Fatal(err)
	}
	var info *jetstream.StreamInfo
	waitFor(t, fmt.Sprintf("%d onu events", want), 20*time.Second, func() (bool, string) {
		info, err = s.Info(ctx)
		return err == nil && info.State.Msgs >= uint64(want), fmt.Sprint(info, err)
	})
	var out []streams.ONUChanged
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(m.Subject, "facho.onu.life.") {
			t.Fatalf("onu event on %s", m.Subject)
		}
		_, ev, err := streams.Decode[streams.ONUChanged](m.Data)
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != streams.SubjectONU("life", ev.Change) {
			t.Fatalf("%s event on %s", ev.Change, m.Subject)
		}
		out = append(out, ev)
	}
	return out
}

func lastEventOf(evs []streams.ONUChanged, o oltsim.ONU) streams.ONUChanged {
	var last streams.ONUChanged
	for _, e := range evs {
		if e.PonIndex == o.PonIndex && e.ONUID == int64(o.ID) {
			last = e
		}
	}
	return last
}

// rowValue is the latest new value of field in rows.
func rowValue(rows []historyRow, field string) string {
	v := "-"
	for _, h := range rows {
		if h.Field == field {
			v = h.New
		}
	}
	return v
}

func rxText(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}
