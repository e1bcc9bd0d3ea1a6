package devstack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/facho/devstack"
)

// facho dev configures its demo from the huawei-ma5800 profile: the ONUs
// get the vendor's port names (0/1/0:5, not raw indexes) and their optical
// readings from the profile's GET job; a second start on the same data
// leaves the OLTs as they are and reports it.
func TestConfigureProfileDemo(t *testing.T) {
	s := startStack(t, 1)
	ctx := context.Background()
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	demo, err := devstack.ConfigureProfile(ctx, client, s.Fleet.OLTs(), devstack.DemoProfile, devstack.DemoOptions{Community: "e2e-secret-community", IntervalSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	// The profile's jobs, its health job among them (sorted).
	want := []string{devstack.DemoProfile + "-discovery", devstack.DemoProfile + "-health", devstack.DemoProfile + "-optical"}
	if demo.Existing || len(demo.OLTs) != 1 || strings.Join(demo.Jobs, ",") != strings.Join(want, ",") {
		t.Fatalf("first configuration: %+v, want jobs %v", demo, want)
	}
	// The API answers the PATCH at once; the jobs read model follows the
	// configuration events a moment later.
	jobsDeadline := time.Now().Add(30 * time.Second)
	for {
		var jobs struct {
			Jobs []struct {
				ID       string `json:"id"`
				Interval int    `json:"interval_seconds"`
			} `json:"jobs"`
		}
		if err := client.Do(ctx, "GET", "/api/v1/jobs?brand_id="+devstack.DemoProfile, nil, &jobs); err != nil {
			t.Fatal(err)
		}
		var wrong []string
		for _, j := range jobs.Jobs {
			if j.Interval != 30 {
				wrong = append(wrong, fmt.Sprintf("job %s every %ds", j.ID, j.Interval))
			}
		}
		if len(jobs.Jobs) == len(want) && len(wrong) == 0 {
			break
		}
		if time.Now().After(jobsDeadline) {
			t.Fatalf("jobs %v, want %d jobs every 30s (the demo's interval)", wrong, len(want))
		}
		time.Sleep(100 * time.Millisecond)
	}

	olt := demo.OLTs[0]
	deadline := time.Now().Add(60 * time.Second)
	for {
		var onus struct {
			Total int              `json:"total"`
			ONUs  []map[string]any `json:"onus"`
		}
		if err := client.Do(ctx, "GET", "/api/v1/olts/"+olt+"/onus", nil, &onus); err != nil {
			t.Fatal(err)
		}
		named := 0
		for _, o := range onus.ONUs {
			if pn, _ := o["port_name"].(string); strings.HasPrefix(pn, "0/1/") && strings.Contains(pn, ":") {
				named++
			}
		}
		if onus.Total == 32 && named == 32 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %d ONUs, %d with a vendor port name: %v", onus.Total, named, onus.ONUs)
		}
		time.Sleep(300 * time.Millisecond)
	}

	again, err := devstack.ConfigureProfile(ctx, client, s.Fleet.OLTs(), devstack.DemoProfile, devstack.DemoOptions{Community: "e2e-secret-community", IntervalSeconds: 45})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Existing || strings.Join(again.Jobs, ",") != strings.Join(want, ",") {
		t.Fatalf("second configuration: %+v", again)
	}
}
