package devstack_test

import (
	"context"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

const token = "e2e-token-0123456789"

// startStack runs the whole system against a fresh database and a fleet
// of nOLTs simulated Huawei OLTs of 1 slot x 2 ports x 16 ONUs.
func startStack(t *testing.T, nOLTs int) *devstack.Stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var fleet oltsim.FleetConfig
	for i := 0; i < nOLTs; i++ {
		fleet.OLTs = append(fleet.OLTs, oltsim.OLTConfig{
			Name: "olt-" + string(rune('a'+i)), Listen: "127.0.0.1:0", Community: "e2e-secret-community",
			Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 16}, Seed: int64(i + 1),
		})
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	if testing.Verbose() {
		log = log.Level(zerolog.InfoLevel)
	}
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir:     t.TempDir(),
		NATSPort:    -1,
		DatabaseURL: pgtest.URL(t),
		APIAddr:     "127.0.0.1:0",
		APIToken:    token,
		Pollers:     2,
		Planner:     planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Fleet:       fleet,
	}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return s
}

type onuView struct {
	PonIndex    int64    `json:"pon_index"`
	ONUID       int64    `json:"onu_id"`
	Serial      string   `json:"serial"`
	Description string   `json:"description"`
	Status      string   `json:"status"`
	RxPowerDBm  *float64 `json:"rx_power_dbm"`
}

type onuList struct {
	OLTID string    `json:"olt_id"`
	Count int       `json:"count"`
	ONUs  []onuView `json:"onus"`
}

func waitFor(t testing.TB, what string, limit time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not reached in %s; last state: %s", what, limit, last)
}

// TestEndToEnd: 3 OLTs x 2 PON ports x 16 ONUs configured through the API;
// every ONU lands in onu_data with the simulator's values and every
// execution has its coordinator_logs rows.
func TestEndToEnd(t *testing.T) {
	s := startStack(t, 3)
	ctx := context.Background()
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	ids, err := devstack.ConfigureHuawei(ctx, client, s.Fleet.OLTs(), devstack.DemoOptions{Community: "e2e-secret-community", IntervalSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}

	for _, id := range ids {
		olt := s.Fleet.OLT(id)
		want := olt.ONUs()
		if len(want) != 32 {
			t.Fatalf("simulator %s has %d ONUs, want 32", id, len(want))
		}
		var got onuList
		waitFor(t, "ONUs of "+id+" in the API", 60*time.Second, func() (bool, string) {
			got = onuList{}
			if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/"+id+"/onus", nil, &got); err != nil {
				return false, err.Error()
			}
			return len(got.ONUs) == len(want), "onus: " + itoa(len(got.ONUs))
		})
		byKey := map[[2]int64]onuView{}
		for _, o := range got.ONUs {
			byKey[[2]int64{o.PonIndex, o.ONUID}] = o
		}
		for _, w := range want {
			g, ok := byKey[[2]int64{w.PonIndex, int64(w.ID)}]
			if !ok {
				t.Errorf("%s: ONU %d.%d missing", id, w.PonIndex, w.ID)
				continue
			}
			if g.Serial != w.Serial || g.Description != w.Description {
				t.Errorf("%s ONU %d.%d: serial/description %q/%q, want %q/%q", id, w.PonIndex, w.ID, g.Serial, g.Description, w.Serial, w.Description)
			}
			wantStatus := "OFFLINE"
			if w.Online {
				wantStatus = "ONLINE"
			}
			if g.Status != wantStatus {
				t.Errorf("%s ONU %d.%d: status %s, want %s", id, w.PonIndex, w.ID, g.Status, wantStatus)
			}
			switch {
			case w.Online && (g.RxPowerDBm == nil || math.Abs(*g.RxPowerDBm-w.RxPowerDBm) > 0.006):
				t.Errorf("%s ONU %d.%d: rx %v, want %.2f", id, w.PonIndex, w.ID, g.RxPowerDBm, w.RxPowerDBm)
			case !w.Online && g.RxPowerDBm != nil:
				t.Errorf("%s ONU %d.%d: offline ONU has rx %v, want none", id, w.PonIndex, w.ID, *g.RxPowerDBm)
			}
		}
	}

	// Exactly one ONU row per simulated ONU in Postgres.
	var rows int
	if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM onu_data`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 96 {
		t.Errorf("onu_data has %d rows, want 96", rows)
	}

	// Every execution succeeded and has its coordinator_logs rows.
	waitFor(t, "executions logged by the auditor", 30*time.Second, func() (bool, string) {
		var execs, success, logged int
		err := s.DB.QueryRow(ctx, `
			SELECT count(*), count(*) FILTER (WHERE status = 'SUCCESS'),
			       count(*) FILTER (WHERE EXISTS (
			           SELECT 1 FROM coordinator_logs l
			           WHERE l.details->>'execution_id' = e.id AND l.olt_id = e.olt_id
			             AND l.event_type = 'EXECUTION_SUCCEEDED'))
			FROM executions e`).Scan(&execs, &success, &logged)
		if err != nil {
			return false, err.Error()
		}
		state := "executions " + itoa(execs) + ", success " + itoa(success) + ", logged " + itoa(logged)
		return execs == 3 && success == 3 && logged == 3, state
	})
	var started int
	if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM coordinator_logs WHERE event_type = 'EXECUTION_STARTED'`).Scan(&started); err != nil {
		t.Fatal(err)
	}
	if started != 3 {
		t.Errorf("EXECUTION_STARTED rows = %d, want 3", started)
	}
	// The auditor's hourly quota trackers count them (one per OLT).
	waitFor(t, "quota trackers", 30*time.Second, func() (bool, string) {
		var trackers, completed int
		err := s.DB.QueryRow(ctx, `SELECT count(*), coalesce(sum(quota_completed), 0) FROM quota_tracker WHERE quota_required >= 1`).Scan(&trackers, &completed)
		if err != nil {
			return false, err.Error()
		}
		return trackers == 3 && completed == 3, "trackers " + itoa(trackers) + ", completed " + itoa(completed)
	})

	// No plaintext community anywhere in Postgres.
	var leaks int
	if err := s.DB.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM coordinator_logs WHERE message LIKE '%e2e-secret-community%' OR details::text LIKE '%e2e-secret-community%')
		     + (SELECT count(*) FROM olts WHERE row_to_json(olts)::text LIKE '%e2e-secret-community%')`).Scan(&leaks); err != nil {
		t.Fatal(err)
	}
	if leaks != 0 {
		t.Errorf("plaintext community found in %d Postgres rows", leaks)
	}
	// Nor in any stream.
	for _, name := range []string{streams.StreamConfig, streams.StreamSchedule, streams.StreamExec, streams.StreamVarbinds, streams.StreamAudit} {
		assertStreamLacks(t, s, name, "e2e-secret-community")
	}
}

func assertStreamLacks(t *testing.T, s *devstack.Stack, stream, needle string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := s.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		if strings.Contains(string(m.Data), needle) {
			t.Errorf("stream %s seq %d carries the plaintext community", stream, seq)
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

// TestAPIRejectsBadInput: a bad IP or OID gets 400 with a JSON error naming
// the field, through the running system.
func TestAPIRejectsBadInput(t *testing.T) {
	s := startStack(t, 1)
	ctx := context.Background()
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	if err := client.Do(ctx, http.MethodPost, "/api/v1/brands", map[string]any{"id": "huawei", "name": "Huawei", "index_scheme": "pon.onu"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, field string
		body              map[string]any
	}{
		{"bad ip", "/api/v1/olts", "ip", map[string]any{"name": "x", "ip": "300.1.1.1", "port": 161, "community": "c", "brand_id": "huawei"}},
		{"bad oid", "/api/v1/oids", "oid", map[string]any{"brand_id": "huawei", "name": "x", "oid": "1.3.6..1", "field": "serial", "decoder": map[string]any{"kind": "string"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := client.Do(ctx, http.MethodPost, tc.path, tc.body, nil)
			apiErr, ok := err.(*devstack.APIError)
			if !ok || apiErr.Status != http.StatusBadRequest {
				t.Fatalf("err = %v, want HTTP 400", err)
			}
			if !strings.Contains(apiErr.Body, `"field":"`+tc.field+`"`) {
				t.Errorf("body %s does not name field %q", apiErr.Body, tc.field)
			}
		})
	}
}

// TestMain stops the shared private test cluster when this binary is its
// last user (see pgtest.Main).
func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m))
}
