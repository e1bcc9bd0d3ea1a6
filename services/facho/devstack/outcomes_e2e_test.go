package devstack_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
)

type outcomeExec struct {
	ID         string     `json:"id"`
	JobID      string     `json:"job_id"`
	Status     string     `json:"status"`
	Cause      *string    `json:"cause"`
	Error      string     `json:"error"`
	Varbinds   int        `json:"varbinds"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

func (e outcomeExec) String() string {
	c := "-"
	if e.Cause != nil {
		c = *e.Cause
	}
	return fmt.Sprintf("%s %s %s cause=%s varbinds=%d %q", e.ID, e.JobID, e.Status, c, e.Varbinds, e.Error)
}

// Honest outcomes and a new OLT's first readings, through the whole stack
// (planner, pollers, projector, API; real SNMP against the simulator):
//   - a new Huawei OLT added with its profile: its discovery runs first
//     (a short first-run delay), its get waits for the discovered ONUs and
//     its first run is a success with readings: Rx of every online ONU in
//     the API within a minute of adding the OLT;
//   - a V-SOL OLT added under the Huawei profile: its discovery is FAILED
//     profile_mismatch with the operator's text, its get (nothing known)
//     FAILED no_onus_known; never a SUCCESS; both visible in the API;
//   - an agent whose OIDs do not increase: FAILED oid_not_increasing.
func TestHonestOutcomesThroughTheStack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const comm = "outcomes-secret-community"
	shape := oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 4}
	fleet := oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{
		{Name: "new", Listen: "127.0.0.1:0", Community: comm, Profile: "huawei-ma5800", Shape: shape, Seed: 41},
		{Name: "mismatch", Listen: "127.0.0.1:0", Community: comm, Profile: "vsol-v1600g", Shape: shape, Seed: 42},
		{Name: "broken", Listen: "127.0.0.1:0", Community: comm, Profile: "huawei-ma5800", Shape: shape, Seed: 43,
			Faults: oltsim.Faults{OIDNotIncreasing: true}},
	}}
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir: t.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(t), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 2,
		// A short discovery delay; three OLTs added together would be
		// spread as a burst otherwise.
		Planner: planner.Config{FirstRunDelay: 2 * time.Second, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Fleet:   fleet,
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
	added := time.Now()
	for _, name := range []string{"new", "mismatch", "broken"} {
		body := map[string]any{"id": name, "name": name, "ip": "127.0.0.1", "port": s.Fleet.OLT(name).Addr().Port,
			"community": comm, "profile": "huawei-ma5800"}
		if err := client.Do(ctx, http.MethodPost, "/api/v1/olts", body, &map[string]any{}); err != nil {
			t.Fatalf("add %s: %v", name, err)
		}
	}
	execs := func(olt, query string) []outcomeExec {
		var out struct {
			Executions []outcomeExec `json:"executions"`
		}
		if err := client.Do(ctx, http.MethodGet, "/api/v1/executions?limit=200&sort=started_at&olt_id="+olt+query, nil, &out); err != nil {
			t.Fatalf("executions of %s: %v", olt, err)
		}
		return out.Executions
	}

	// The new OLT: Rx of every online ONU within the first minute.
	online := 0
	for _, o := range s.Fleet.OLT("new").ONUs() {
		if o.Online {
			online++
		}
	}
	waitFor(t, "Rx readings of the new OLT", time.Minute-time.Since(added), func() (bool, string) {
		var got struct {
			ONUs []profileONU `json:"onus"`
		}
		if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/new/onus", nil, &got); err != nil {
			return false, err.Error()
		}
		rx := 0
		for _, o := range got.ONUs {
			if o.RxPowerDBm != nil {
				rx++
			}
		}
		return online > 0 && rx == online, fmt.Sprintf("%d of %d online ONUs with Rx", rx, online)
	})
	t.Logf("new OLT: Rx of its %d online ONUs %s after it was added", online, time.Since(added).Round(100*time.Millisecond))
	// The readings and the execution's end are projected by different
	// consumers: the end may land a moment after the Rx.
	var disc, firstGet *outcomeExec
	waitFor(t, "the new OLT's discovery and first get ended", 30*time.Second, func() (bool, string) {
		disc, firstGet = nil, nil
		for _, e := range execs("new", "") {
			switch {
			case e.JobID == "huawei-ma5800-discovery" && disc == nil:
				disc = &e
			case e.JobID == "huawei-ma5800-optical" && firstGet == nil:
				firstGet = &e
			}
		}
		ended := func(e *outcomeExec) bool { return e != nil && e.FinishedAt != nil }
		return ended(disc) && ended(firstGet), fmt.Sprintf("discovery %v, first get %v", disc, firstGet)
	})
	if disc.Status != "SUCCESS" || firstGet.Status != "SUCCESS" || firstGet.Cause != nil || firstGet.Varbinds == 0 {
		t.Errorf("new OLT: discovery %s; first get %s: want both SUCCESS, the get with readings", disc, firstGet)
	}
	if disc.FinishedAt == nil || firstGet.StartedAt == nil || firstGet.StartedAt.Before(*disc.FinishedAt) {
		t.Errorf("new OLT: first get started %v, before its discovery ended %v", firstGet.StartedAt, disc.FinishedAt)
	}

	// The V-SOL OLT under the Huawei profile.
	waitFor(t, "mismatch: discovery profile_mismatch and get no_onus_known in the API", time.Minute, func() (bool, string) {
		mism := execs("mismatch", "&cause=profile_mismatch")
		none := execs("mismatch", "&cause=no_onus_known")
		return len(mism) > 0 && len(none) > 0, fmt.Sprintf("%v", execs("mismatch", ""))
	})
	for _, e := range execs("mismatch", "") {
		t.Logf("mismatch: %s", e)
		switch {
		case e.JobID == "huawei-ma5800-health":
			// Its PON and uplink tables are IF-MIB's, which this OLT has:
			// the OLT's health is read whatever its ONU tables.
		case e.Status == "SUCCESS":
			t.Errorf("mismatch: %s is a SUCCESS", e)
		case e.Status == "FAILED" && e.JobID == "huawei-ma5800-discovery":
			if e.Cause == nil || *e.Cause != "profile_mismatch" || !strings.Contains(e.Error, "the profile huawei-ma5800 matched but none of its tables answered") {
				t.Errorf("mismatch discovery: %s", e)
			}
		case e.Status == "FAILED" && e.JobID == "huawei-ma5800-optical":
			if e.Cause == nil || *e.Cause != "no_onus_known" {
				t.Errorf("mismatch get: %s", e)
			}
		}
	}
	// The item says the same as the list.
	one := execs("mismatch", "&cause=profile_mismatch")[0]
	var item struct {
		Execution outcomeExec `json:"execution"`
	}
	if err := client.Do(ctx, http.MethodGet, "/api/v1/executions/"+one.ID, nil, &item); err != nil {
		t.Fatal(err)
	}
	if item.Execution.Cause == nil || *item.Execution.Cause != "profile_mismatch" || item.Execution.Error != one.Error {
		t.Errorf("GET /executions/%s: %s", one.ID, item.Execution)
	}

	// The broken agent.
	waitFor(t, "broken: discovery oid_not_increasing in the API", time.Minute, func() (bool, string) {
		got := execs("broken", "&cause=oid_not_increasing")
		return len(got) > 0, fmt.Sprintf("%v", execs("broken", ""))
	})
	for _, e := range execs("broken", "") {
		t.Logf("broken: %s", e)
		if e.Status == "SUCCESS" && e.JobID != "huawei-ma5800-health" {
			t.Errorf("broken: %s is a SUCCESS", e)
		}
	}
}
