package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/api"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/poller"
	"github.com/facho-olt/facho/streams"
)

const (
	apiToken  = "integration-token-0123456789"
	community = "integration-community"
	hwBase    = "1.3.6.1.4.1.2011.6.128.1.1.2"
)

// pollerState and pollerStats are the JSON of the two endpoints, decoded
// by field name as a client would.
type pollerState struct {
	PollerID       string  `json:"poller_id"`
	ProcessID      string  `json:"process_id"`
	Status         string  `json:"status"`
	CurrentNodeID  *string `json:"current_node_id"`
	BusyTime       float64 `json:"busy_time"`
	TotalTime      float64 `json:"total_time"`
	BusyPercentage float64 `json:"busy_percentage"`
	TasksCompleted int64   `json:"tasks_completed"`
	TasksDelayed   int64   `json:"tasks_delayed"`
}

type pollerList struct {
	Count   int           `json:"count"`
	Pollers []pollerState `json:"pollers"`
}

type pollerStats struct {
	TotalPollers        int     `json:"total_pollers"`
	FreePollers         int     `json:"free_pollers"`
	BusyPollers         int     `json:"busy_pollers"`
	BusyPercentage      float64 `json:"busy_percentage"`
	QueueSize           int     `json:"queue_size"`
	IsSaturated         bool    `json:"is_saturated"`
	TotalTasksCompleted int64   `json:"total_tasks_completed"`
	TotalTasksDelayed   int64   `json:"total_tasks_delayed"`
}

type apiClient struct {
	t   *testing.T
	url string
}

func (c apiClient) get(path string, out any) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.url+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	if s, ok := out.(*string); ok {
		*s = string(raw)
		return
	}
	if err := json.Unmarshal(raw, out); err != nil {
		c.t.Fatalf("GET %s: %v in %s", path, err, raw)
	}
}

func (c apiClient) pollers() pollerList {
	c.t.Helper()
	var l pollerList
	c.get("/api/v1/pollers/", &l)
	return l
}

func (c apiClient) stats() pollerStats {
	c.t.Helper()
	var s pollerStats
	c.get("/api/v1/pollers/stats/", &s)
	return s
}

// waitFor polls cond until it holds; limit only bounds a broken run.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not reached; last: %s", what, last)
}

type runningPoller struct {
	reg  *prometheus.Registry
	stop func()
	kill func() // closes its NATS connection: it can no longer write or delete its state
}

// startPoller runs a poller process on its own connection as the poller
// identity.
func startPoller(t *testing.T, env *jstest.Env, box *secret.Box, cfg poller.Config) runningPoller {
	t.Helper()
	nc, js := env.Connect(t, natsauth.Poller)
	ctx, cancel := context.WithCancel(context.Background())
	reg := prometheus.NewRegistry()
	done := make(chan error, 1)
	go func() { done <- poller.Run(ctx, cfg, poller.Deps{JS: js, Log: zerolog.Nop(), Registry: reg, Box: box}) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("poller %s: %v", cfg.PollerID, err)
			}
		})
	}
	t.Cleanup(stop)
	return runningPoller{reg: reg, stop: stop, kill: nc.Close}
}

func olt(name string, faults oltsim.Faults) oltsim.OLTConfig {
	return oltsim.OLTConfig{
		Name: name, Listen: "127.0.0.1:0", Community: community, Profile: "huawei-ma5800", Seed: 1, Faults: faults,
		Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 16},
	}
}

// GET /api/v1/pollers/ and /api/v1/pollers/stats/ show what real poller
// processes publish: every slot FREE at first; the slot walking a slow
// OLT BUSY with its node while a second node for the same OLT waits in
// the queue; FREE again after, with tasks_completed and tasks_delayed
// counted; a killed process gone from the list after the bucket's TTL.
// The services run on their own NATS identities, so the permission table
// is exercised too.
func TestPollerStatsThroughAPI(t *testing.T) {
	const ttl = 3 * time.Second
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage, PollersTTL: ttl}, jstest.WithAuth())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// About 20 GETBULKs of 4 columns x 32 ONUs, 150 ms each: a walk of
	// seconds.
	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{olt("slow", oltsim.Faults{Latency: 150 * time.Millisecond})}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })
	k, _ := secret.NewKey()
	key, _ := secret.ParseKey(k)
	box, err := secret.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}

	_, apiJS := env.Connect(t, natsauth.API)
	h, err := api.NewHandler(ctx, api.Config{Tokens: []string{apiToken}},
		api.Deps{JS: apiJS, DB: pgtest.New(t), Box: box, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := apiClient{t: t, url: srv.URL}

	// A process has one slot per unit of each queue class's concurrency:
	// pa 2 polling + 1 of each other class, pb 1 of each.
	one := poller.ClassLimit{Concurrency: 1}
	classesA := poller.ClassLimits{Discovery: one, Polling: poller.ClassLimit{Concurrency: 2}, Retry: one, High: one}
	classesB := poller.ClassLimits{Discovery: one, Polling: one, Retry: one, High: one}
	slots := classesA.Total() + classesB.Total()
	a := startPoller(t, env, box, poller.Config{PollerID: "pa", Classes: classesA, StatsEvery: 500 * time.Millisecond, LeaseBusyDelay: 200 * time.Millisecond})
	b := startPoller(t, env, box, poller.Config{PollerID: "pb", Classes: classesB, StatsEvery: 500 * time.Millisecond, LeaseBusyDelay: 200 * time.Millisecond})

	waitFor(t, "every slot listed FREE", 10*time.Second, func() (bool, string) {
		l := c.pollers()
		free := 0
		for _, p := range l.Pollers {
			if p.Status == streams.PollerFree && p.CurrentNodeID == nil {
				free++
			}
		}
		return l.Count == slots && free == slots, fmt.Sprintf("%+v", l)
	})
	ids := map[string]bool{}
	for _, p := range c.pollers().Pollers {
		ids[p.PollerID] = true
	}
	if !ids["pa.0"] || !ids["pa.1"] || !ids["pb.0"] {
		t.Fatalf("poller ids %v, want pa.0, pa.1, pb.0", ids)
	}
	if s := c.stats(); s.TotalPollers != slots || s.FreePollers != slots || s.BusyPollers != 0 || s.QueueSize != 0 || s.IsSaturated {
		t.Fatalf("idle stats: %+v", s)
	}

	sealed, err := box.Seal(community)
	if err != nil {
		t.Fatal(err)
	}
	addr := fleet.OLT("slow").Addr()
	node := func(exec string, scheduled time.Time) streams.NodeDue {
		return streams.NodeDue{
			ExecutionID: exec, NodeID: "walk.slow", JobID: "walk", JobName: "walk", OLTID: "slow", BrandID: "huawei",
			IndexScheme: "pon.onu", Kind: streams.KindBulkWalk,
			Target: streams.Target{Host: addr.IP.String(), Port: addr.Port, CommunityEnc: sealed},
			OIDs: []streams.OIDSpec{
				{ID: "hw-serial", OID: hwBase + ".43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
				{ID: "hw-desc", OID: hwBase + ".43.1.9", Field: streams.FieldDescription, Decoder: streams.Decoder{Kind: "string"}},
				{ID: "hw-status", OID: hwBase + ".46.1.15", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}},
				{ID: "hw-rx", OID: hwBase + ".51.1.4", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01}},
			},
			Priority: 90, IntervalSeconds: 300, TimeoutSeconds: 120, ScheduledAt: scheduled.UTC(),
		}
	}
	publish := func(n streams.NodeDue) {
		t.Helper()
		bs, err := streams.EncodeWithID(n.ExecutionID, "test", time.Now(), n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.JS.Publish(ctx, streams.SubjectNodeDue(n.OLTID), bs); err != nil {
			t.Fatal(err)
		}
	}
	// The first is 10 s late (delayed); the second is scheduled a minute
	// ahead, so waiting for the first does not make it late.
	publish(node("e1", time.Now().Add(-10*time.Second)))
	publish(node("e2", time.Now().Add(time.Minute)))

	// One slot walks the OLT; the other node waits for the OLT's lease.
	waitFor(t, "one BUSY poller on walk.slow and one node queued", 20*time.Second, func() (bool, string) {
		l := c.pollers()
		busy := 0
		for _, p := range l.Pollers {
			if p.Status == streams.PollerBusy && p.CurrentNodeID != nil && *p.CurrentNodeID == "walk.slow" {
				busy++
			}
		}
		s := c.stats()
		return busy == 1 && s.BusyPollers == 1 && s.FreePollers == slots-1 && s.QueueSize == 1, fmt.Sprintf("%+v / %+v", l, s)
	})

	// Both walked, one after the other; every slot FREE again.
	waitFor(t, "both nodes completed", 60*time.Second, func() (bool, string) {
		s := c.stats()
		return s.TotalTasksCompleted == 2 && s.BusyPollers == 0 && s.FreePollers == slots && s.QueueSize == 0, fmt.Sprintf("%+v", s)
	})
	s := c.stats()
	if s.TotalTasksDelayed != 1 {
		t.Errorf("total_tasks_delayed = %d, want 1 (the node 10 s late)", s.TotalTasksDelayed)
	}
	if s.BusyPercentage <= 0 || s.BusyPercentage > 100 {
		t.Errorf("busy_percentage = %v after seconds of walking, want in (0, 100]", s.BusyPercentage)
	}
	var completed int64
	for _, p := range c.pollers().Pollers {
		completed += p.TasksCompleted
		if p.TasksCompleted > 0 && (p.BusyTime <= 0 || p.BusyTime > p.TotalTime) {
			t.Errorf("poller %s: busy_time %v of total_time %v", p.PollerID, p.BusyTime, p.TotalTime)
		}
	}
	if completed != 2 {
		t.Errorf("tasks_completed of the pollers sum to %d, want 2", completed)
	}
	// Executions by result per OLT, summed over both processes.
	if got := oltExecutions(t, a.reg, "slow", "success") + oltExecutions(t, b.reg, "slow", "success"); got != 2 {
		t.Errorf("facho_poller_olt_executions_total{olt_id=slow,result=success} = %v, want 2", got)
	}
	var metrics string
	c.get("/metrics", &metrics)
	for _, want := range []string{fmt.Sprintf("facho_pollers %d", slots), "facho_pollers_busy 0", "facho_pollers_queue_size 0", "facho_pollers_saturated 0", "facho_poller_processes 2"} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// Killed: pb's connection drops, nothing deletes its key; it expires
	// with the bucket's TTL.
	b.kill()
	waitFor(t, "the killed process gone", 4*ttl, func() (bool, string) {
		l := c.pollers()
		for _, p := range l.Pollers {
			if p.ProcessID == "pb" {
				return false, fmt.Sprintf("%+v", l)
			}
		}
		return l.Count == classesA.Total(), fmt.Sprintf("%+v", l)
	})
	// A clean stop deletes the key at once.
	a.stop()
	if l := c.pollers(); l.Count != 0 {
		t.Errorf("after a clean stop: %+v, want no pollers", l)
	}
}

func oltExecutions(t *testing.T, reg *prometheus.Registry, olt, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "facho_poller_olt_executions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["olt_id"] == olt && labels["result"] == result {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
