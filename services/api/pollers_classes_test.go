package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// /pollers/stats/ and /metrics per queue class, from the pollers' bucket
// and the planner's queue report: the discovery slots all busy with a
// backlog make the whole saturated though the mean busy share is low.
func TestPollerStatsPerClass(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	now := time.Now().UTC()
	slot := func(i int, class, status string, pct float64) streams.PollerState {
		return streams.PollerState{PollerID: "p1." + string(rune('0'+i)), ProcessID: "p1", Slot: i, Class: class, Status: status, BusyPercentage: pct, UpdatedAt: now}
	}
	proc := streams.PollerProcess{ProcessID: "p1", StartedAt: now, UpdatedAt: now, Workers: 6, Pollers: []streams.PollerState{
		slot(0, streams.ClassDiscovery, streams.PollerBusy, 20), slot(1, streams.ClassDiscovery, streams.PollerBusy, 20),
		slot(2, streams.ClassPolling, streams.PollerFree, 0), slot(3, streams.ClassPolling, streams.PollerFree, 0),
		slot(4, streams.ClassPolling, streams.PollerFree, 0), slot(5, streams.ClassPolling, streams.PollerFree, 0)}}
	pollers, err := f.js.KeyValue(ctx, streams.BucketPollers)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(proc)
	if _, err := pollers.Put(ctx, "p1", b); err != nil {
		t.Fatal(err)
	}
	leader, err := f.js.KeyValue(ctx, streams.BucketPlannerLeader)
	if err != nil {
		t.Fatal(err)
	}
	two := 2
	rep, _ := json.Marshal(streams.QueueReport{GeneratedAt: now, Size: 3, Waiting: 3,
		Classes: map[string]streams.ClassQueue{streams.ClassDiscovery: {Size: 3, Waiting: 3, Dispatched: 2, Running: 2, Capacity: &two}}})
	if _, err := leader.Put(ctx, streams.QueueKey, rep); err != nil {
		t.Fatal(err)
	}
	out := f.must("GET", "/api/v1/pollers/stats/", "", http.StatusOK)
	classes, _ := out["classes"].(map[string]any)
	d, _ := classes[streams.ClassDiscovery].(map[string]any)
	p, _ := classes[streams.ClassPolling].(map[string]any)
	if out["queue_size"] != float64(3) || out["is_saturated"] != true || out["total_pollers"] != float64(6) {
		t.Fatalf("stats %v", out)
	}
	if d["total_pollers"] != float64(2) || d["busy_pollers"] != float64(2) || d["queue_size"] != float64(3) || d["is_saturated"] != true {
		t.Fatalf("discovery %v", d)
	}
	if p["free_pollers"] != float64(4) || p["is_saturated"] != false {
		t.Fatalf("polling %v", p)
	}
	mreq, err := http.NewRequest("GET", f.srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	mreq.Header.Set("Authorization", "Bearer "+token) // /metrics on the API port needs a token
	resp, err := http.DefaultClient.Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`facho_pollers_class_saturated{class="discovery"} 1`, `facho_pollers_class_queue_size{class="discovery"} 3`,
		`facho_pollers_class{class="polling"} 4`, `facho_pollers_saturated 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics without %s", want)
		}
	}
}
