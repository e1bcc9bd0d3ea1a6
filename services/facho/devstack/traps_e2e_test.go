package devstack_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/alerter"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// TestTrapEndToEnd: the whole system with a simulated Huawei OLT sending
// its traps to the receiver. A dying gasp of a polled ONU sets its status
// in onu_data at once (through trapd, FACHO_TRAP and the projector), an
// onu.changed of source trap is published and the alerter fires its
// onu_down alert; the confirmation poll the trap requested then reads the
// OLT and its answer (offline) is the ONU's status; the trap is listed
// by GET /api/v1/olts/{id}/traps. The jobs' interval is an hour: only the
// confirmation run reads the OLT after the discovery.
func TestTrapEndToEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const community = "e2e-trap-community"
	hold := time.Duration(0)
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir: t.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(t), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 1,
		Planner: planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Alerter: alerter.Config{Tick: 100 * time.Millisecond, Rules: alerter.Rules{Global: alerter.Override{ONUDownHold: &hold}}},
		Fleet: oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "olt-t", Listen: "127.0.0.1:0", Community: community,
			Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 8}, Seed: 4}}},
	}, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	if _, err := devstack.ConfigureProfile(ctx, client, s.Fleet.OLTs(), "huawei-ma5800", devstack.DemoOptions{Community: community, IntervalSeconds: 3600}); err != nil {
		t.Fatal(err)
	}
	olt := s.Fleet.OLT("olt-t")
	var u oltsim.ONU
	for _, x := range olt.ONUs() {
		if x.Online {
			u = x
			break
		}
	}
	status := func() string {
		var st string
		if err := s.DB.QueryRow(ctx, `SELECT status FROM onu_data WHERE olt_id = 'olt-t' AND pon_index = $1 AND onu_id = $2`, u.PonIndex, u.ID).Scan(&st); err != nil {
			return err.Error()
		}
		return st
	}
	waitFor(t, "the ONU polled online", 60*time.Second, func() (bool, string) { st := status(); return st == "ONLINE", st })
	// The discovery and the first optical get have run (the status above
	// may be the discovery's, and the health job runs too): wait until
	// both succeeded and nothing is in flight, so the confirmation run is
	// the next execution.
	waitFor(t, "the first discovery and get ended", 60*time.Second, func() (bool, string) {
		var open, jobs int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FILTER (WHERE e.status IN ('PENDING', 'RUNNING')),
				count(DISTINCT e.job_id) FILTER (WHERE e.status = 'SUCCESS' AND j.kind IN ('discovery', 'get'))
			FROM executions e LEFT JOIN snmp_jobs j ON j.id = e.job_id WHERE e.olt_id = 'olt-t'`).Scan(&open, &jobs)
		return open == 0 && jobs == 2, fmt.Sprintf("%d open, %d of the discovery and get jobs succeeded", open, jobs)
	})
	// The projector finds the get job to confirm a trap with in its read
	// model of the configuration, which trails the configuration stream:
	// under load it can still miss the OLT's assignment here.
	waitFor(t, "the OLT's get job in the configuration read model", 30*time.Second, func() (bool, string) {
		var n int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM snmp_jobs j
			JOIN snmp_job_olts a ON a.job_id = j.id AND a.olt_id = 'olt-t' AND a.enabled
			JOIN olts o ON o.id = a.olt_id AND o.enabled AND NOT o.deleted
			WHERE j.kind = 'get' AND j.enabled AND NOT j.deleted`).Scan(&n)
		return n == 1, fmt.Sprintf("%d enabled get jobs of the OLT", n)
	})
	if err := olt.SetTrapTarget(oltsim.TrapTarget{Dest: s.TrapAddr}); err != nil {
		t.Fatal(err)
	}

	off := false
	start := time.Now()
	if err := olt.PatchONU(u.Index, oltsim.ONUPatch{Online: &off, DownCause: oltsim.DownCauseDyingGasp}); err != nil {
		t.Fatal(err)
	}
	// The status the trap set (the confirmation poll may already have
	// replaced it: its history row stays).
	waitFor(t, "the trap's status in onu_history", 30*time.Second, func() (bool, string) {
		var n int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM onu_history WHERE olt_id = 'olt-t' AND pon_index = $1 AND onu_id = $2 AND field = 'status'
			AND old_value = 'ONLINE' AND new_value = 'DYING_GASP' AND source = 'trap'`, u.PonIndex, u.ID).Scan(&n)
		return n == 1, status()
	})
	t.Logf("trap sent -> status DYING_GASP committed: %s", time.Since(start).Round(time.Millisecond))

	// The alerter's onu_down alert.
	waitFor(t, "the onu_down alert", 30*time.Second, func() (bool, string) {
		var n int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM alerts WHERE rule = 'onu_down' AND olt_id = 'olt-t' AND onu_id = $1 AND state = 'firing'`, u.ID).Scan(&n)
		return n == 1, fmt.Sprintf("%d firing", n)
	})
	t.Logf("trap sent -> onu_down alert firing: %s", time.Since(start).Round(time.Millisecond))
	// The onu.changed of the trap.
	cons, err := s.JS.OrderedConsumer(ctx, streams.StreamONU, jetstream.OrderedConsumerConfig{FilterSubjects: []string{streams.SubjectONU("olt-t", streams.ONUStatusChanged)}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for !found {
		msgs, err := cons.Fetch(100, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range msgs.Messages() {
			n++
			_, ev, err := streams.Decode[streams.ONUChanged](m.Data())
			if err == nil && ev.Source == streams.ONUChangeSourceTrap && ev.ONUID == int64(u.ID) && ev.Current.Status == "DYING_GASP" {
				found = true
			}
		}
		if n == 0 && !found {
			t.Fatal("no onu.changed of source trap")
		}
	}
	// The confirmation poll: the OLT says offline, which stands.
	waitFor(t, "the confirmation poll's reading", 60*time.Second, func() (bool, string) { st := status(); return st == "OFFLINE", st })
	waitFor(t, "the confirmation run's MANUAL_RUN log", 30*time.Second, func() (bool, string) {
		var manual int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM coordinator_logs WHERE event_type = 'MANUAL_RUN' AND olt_id = 'olt-t'`).Scan(&manual)
		return manual == 1, fmt.Sprintf("%d MANUAL_RUN logs", manual)
	})
	var traps struct {
		Traps []struct {
			Kind    *string `json:"kind"`
			Applied bool    `json:"applied"`
			ONUID   *int64  `json:"onu_id"`
		} `json:"traps"`
	}
	if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/olt-t/traps", nil, &traps); err != nil {
		t.Fatal(err)
	}
	if len(traps.Traps) != 1 || traps.Traps[0].Kind == nil || *traps.Traps[0].Kind != streams.TrapKindDyingGasp || !traps.Traps[0].Applied {
		t.Fatalf("traps of the OLT: %+v", traps.Traps)
	}
}
