package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// putNode writes a schedule entry as the planner does.
func (f *fixture) putNode(ns streams.NodeSchedule) {
	f.t.Helper()
	kv, err := f.js.KeyValue(context.Background(), streams.BucketSchedule)
	if err != nil {
		f.t.Fatal(err)
	}
	b, _ := json.Marshal(ns)
	if _, err := kv.Put(context.Background(), ns.NodeID, b); err != nil {
		f.t.Fatal(err)
	}
}

func TestNodesOfAnOLTAndOneNode(t *testing.T) {
	f := setup(t)
	f.seed()
	next := time.Date(2026, 11, 23, 10, 5, 0, 0, time.UTC)
	last := next.Add(-5 * time.Minute)
	f.putNode(streams.NodeSchedule{NodeID: "get-serial.olt-a", JobID: "get-serial", OLTID: "olt-a", JobName: "GET serial", Kind: streams.KindGet,
		Priority: 40, IntervalSeconds: 300, Chain: []string{}, Enabled: true, State: streams.NodeIdle,
		NextRunAt: &next, LastRunAt: &last, LastStatus: "SUCCESS", LastExecutionID: "e1"})
	f.putNode(streams.NodeSchedule{NodeID: "disc.olt-a", JobID: "disc", OLTID: "olt-a", Kind: streams.KindDiscovery,
		Chain: []string{}, State: streams.NodeDisabled, DisabledReason: "job disabled"})
	f.putNode(streams.NodeSchedule{NodeID: "get-serial.olt-b", JobID: "get-serial", OLTID: "olt-b", Chain: []string{}, Enabled: true})

	out := f.must("GET", "/api/v1/olts/olt-a/nodes", "", http.StatusOK)
	nodes, _ := out["nodes"].([]any)
	if out["olt_id"] != "olt-a" || out["count"] != float64(2) || len(nodes) != 2 {
		t.Fatalf("nodes of olt-a: %v", out)
	}
	disc, get := nodes[0].(map[string]any), nodes[1].(map[string]any)
	if disc["node_id"] != "disc.olt-a" || disc["enabled"] != false || disc["disabled_reason"] != "job disabled" || disc["next_run_at"] != nil {
		t.Errorf("disabled node %v", disc)
	}
	for k, want := range map[string]any{"node_id": "get-serial.olt-a", "job_id": "get-serial", "kind": "get", "enabled": true,
		"next_run_at": "2026-11-23T10:05:00Z", "last_run_at": "2026-11-23T10:00:00Z", "last_status": "SUCCESS", "state": "idle"} {
		if get[k] != want {
			t.Errorf("%s = %v, want %v (%v)", k, get[k], want, get)
		}
	}
	if c, ok := get["chain"].([]any); !ok || len(c) != 0 {
		t.Errorf("chain %v, want []", get["chain"])
	}

	one := f.must("GET", "/api/v1/nodes/get-serial.olt-a", "", http.StatusOK)
	if one["node_id"] != "get-serial.olt-a" || one["last_execution_id"] != "e1" {
		t.Errorf("node %v", one)
	}
	f.must("GET", "/api/v1/nodes/get-serial.olt-z", "", http.StatusNotFound)
	f.must("GET", "/api/v1/nodes/not-a-node-id", "", http.StatusNotFound)
	f.must("GET", "/api/v1/olts/olt-z/nodes", "", http.StatusNotFound)
	// An OLT without nodes has an empty list, not null.
	f.must("POST", "/api/v1/olts", `{"id":"olt-c","name":"OLT C","ip":"10.0.0.3","community":"s3cr3t-community","brand_id":"huawei"}`, http.StatusCreated)
	if out := f.must("GET", "/api/v1/olts/olt-c/nodes", "", http.StatusOK); out["count"] != float64(0) || out["nodes"] == nil {
		t.Errorf("nodes of olt-c %v", out)
	}
}

func TestManualRun(t *testing.T) {
	f := setup(t)
	f.seed()
	f.putNode(streams.NodeSchedule{NodeID: "get-serial.olt-a", JobID: "get-serial", OLTID: "olt-a", Chain: []string{}, Enabled: true, State: streams.NodeIdle})
	f.putNode(streams.NodeSchedule{NodeID: "off.olt-a", JobID: "off", OLTID: "olt-a", Chain: []string{}, State: streams.NodeDisabled, DisabledReason: "job disabled"})

	out := f.must("POST", "/api/v1/pollers/nodes/get-serial.olt-a/run/", "", http.StatusAccepted)
	id, _ := out["execution_id"].(string)
	if id == "" || out["node_id"] != "get-serial.olt-a" {
		t.Fatalf("answer %v", out)
	}
	env := f.lastOn(streams.StreamSchedule, streams.SubjectManualRun("olt-a"))
	var req streams.NodeRunRequested
	if err := streams.DecodeData(env, &req); err != nil {
		t.Fatal(err)
	}
	if req.ExecutionID != id || req.JobID != "get-serial" || req.OLTID != "olt-a" || req.NodeID != "get-serial.olt-a" || req.RequestedAt.IsZero() {
		t.Fatalf("request %+v", req)
	}
	f.must("POST", "/api/v1/pollers/nodes/get-serial.olt-z/run/", "", http.StatusNotFound)
	f.must("POST", "/api/v1/pollers/nodes/bad/run/", "", http.StatusNotFound)
	f.must("POST", "/api/v1/pollers/nodes/off.olt-a/run/", "", http.StatusConflict)
	// Auto-disabled by the planner: 409 with the reason.
	b, _ := streams.Encode("planner", time.Now(), streams.OLTAutoDisabled{ID: "olt-a", Reason: "3 consecutive failed executions", Failures: 3, DisabledAt: time.Now()})
	if _, err := f.js.Publish(context.Background(), streams.SubjectOLTDisabled("olt-a"), b); err != nil {
		t.Fatal(err)
	}
	if _, _, raw := f.do("POST", "/api/v1/pollers/nodes/get-serial.olt-a/run/", ""); !strings.Contains(raw, "3 consecutive failed executions") {
		t.Fatalf("auto-disabled OLT: %s", raw)
	}
	if o := f.must("GET", "/api/v1/olts/olt-a", "", http.StatusOK); o["enabled"] != false || o["disabled_reason"] != "3 consecutive failed executions" || o["disabled_at"] == nil {
		t.Fatalf("auto-disabled OLT as the API shows it: %v", o)
	}
	// Re-enabled (a newer OLT event): runnable again.
	f.must("PUT", "/api/v1/olts/olt-a", `{"name":"OLT A","ip":"10.0.0.1","brand_id":"huawei"}`, http.StatusAccepted)
	f.must("POST", "/api/v1/pollers/nodes/get-serial.olt-a/run/", "", http.StatusAccepted)
	// A disabled OLT: 409 naming it.
	f.must("PUT", "/api/v1/olts/olt-a", `{"name":"OLT A","ip":"10.0.0.1","brand_id":"huawei","enabled":false}`, http.StatusAccepted)
	_, body, raw := f.do("POST", "/api/v1/pollers/nodes/get-serial.olt-a/run/", "")
	if body["error"] == nil || !strings.Contains(raw, "OLT olt-a is disabled") {
		t.Fatalf("disabled OLT: %s", raw)
	}
	if code, _, _ := f.do("POST", "/api/v1/pollers/nodes/get-serial.olt-a/run/", ""); code != http.StatusConflict {
		t.Fatalf("disabled OLT: %d, want 409", code)
	}
}

func TestQueueReportEndpoint(t *testing.T) {
	f := setup(t)
	f.must("GET", "/api/v1/pollers/queue/", "", http.StatusServiceUnavailable)
	kv, err := f.js.KeyValue(context.Background(), streams.BucketPlannerLeader)
	if err != nil {
		t.Fatal(err)
	}
	rep := streams.QueueReport{GeneratedAt: time.Now().UTC(), Planner: "planner-a", Size: 2, IsOverload: true,
		NextNodes: []streams.QueuedNode{{NodeID: "disc.olt-a", OLTID: "olt-a", JobID: "disc", DueAt: time.Now().UTC(), DelaySeconds: 12.5, Priority: 90, Class: "discovery"}},
		Delayed:   map[string]int{"5s": 1, "10s": 1, "30s": 0, "1m": 0, "5m": 0, "10m": 0},
		Waiting:   1, DispatchedWaiting: 1,
		Classes: map[string]streams.ClassQueue{"discovery": {Size: 2, Waiting: 1, Dispatched: 1, DispatchedWaiting: 1}}}
	b, _ := json.Marshal(rep)
	if _, err := kv.Put(context.Background(), streams.QueueKey, b); err != nil {
		t.Fatal(err)
	}
	out := f.must("GET", "/api/v1/pollers/queue/", "", http.StatusOK)
	next, _ := out["next_nodes"].([]any)
	if out["size"] != float64(2) || out["is_overload"] != true || len(next) != 1 || out["age_seconds"] == nil {
		t.Fatalf("queue %v", out)
	}
	if n := next[0].(map[string]any); n["node_id"] != "disc.olt-a" || n["delay_seconds"] != 12.5 || n["priority"] != float64(90) || n["due_at"] == nil {
		t.Fatalf("next node %v", n)
	}
	classes, _ := out["classes"].(map[string]any)
	if d, _ := classes["discovery"].(map[string]any); out["waiting"] != float64(1) || out["dispatched_waiting"] != float64(1) ||
		d["size"] != float64(2) || d["capacity"] != nil || !hasKey(d, "capacity") {
		t.Fatalf("backlog per class %v", out)
	}
	if d := out["delayed"].(map[string]any); d["10s"] != float64(1) {
		t.Fatalf("delayed %v", d)
	}
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}
