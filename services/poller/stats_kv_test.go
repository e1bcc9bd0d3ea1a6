package poller

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// A poller publishes its slots in the pollers bucket: FREE, BUSY with the
// node while it walks a slow OLT, FREE again with the task counted; a
// clean stop deletes the key. (The API's view, a killed process's expiry
// and the permissions: services/facho/integration.)
func TestPollerPublishesItsState(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("slow", oltsim.Faults{Latency: 100 * time.Millisecond}))
	stop, _ := e.startPoller(t, Config{PollerID: "p1", Workers: 2, StatsEvery: 200 * time.Millisecond})
	kv, err := e.JS.KeyValue(e.ctx, streams.BucketPollers)
	if err != nil {
		t.Fatal(err)
	}
	read := func() (streams.PollerProcess, error) {
		var p streams.PollerProcess
		entry, err := kv.Get(e.ctx, "p1")
		if err != nil {
			return p, err
		}
		return p, json.Unmarshal(entry.Value(), &p)
	}
	waitState := func(what string, cond func(streams.PollerProcess) bool) streams.PollerProcess {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		var last streams.PollerProcess
		for time.Now().Before(deadline) {
			p, err := read()
			if err == nil && cond(p) {
				return p
			}
			last = p
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s: last state %+v", what, last)
		return last
	}
	waitState("two FREE slots", func(p streams.PollerProcess) bool {
		return len(p.Pollers) == 2 && p.Pollers[0].Status == streams.PollerFree && p.Pollers[1].Status == streams.PollerFree
	})

	n := e.nodeDue("slow", "e1", "job-walk")
	e.publishNodeDue(t, n)
	p := waitState("slot 0 BUSY with the node", func(p streams.PollerProcess) bool {
		s := p.Pollers[0]
		return s.Status == streams.PollerBusy && s.CurrentNodeID != nil && *s.CurrentNodeID == n.NodeID
	})
	s0 := p.Pollers[0]
	if *s0.CurrentOLTID != "slow" || *s0.CurrentExecutionID != "e1" || s0.BusySince == nil || p.Pollers[1].Status != streams.PollerFree {
		t.Fatalf("busy state: %+v", p)
	}
	p = waitState("slot 0 FREE with the task completed", func(p streams.PollerProcess) bool {
		return p.Pollers[0].Status == streams.PollerFree && p.Pollers[0].TasksCompleted == 1
	})
	if s := p.Pollers[0]; s.CurrentNodeID != nil || s.BusyTime <= 0 || s.BusyTime > s.TotalTime || s.TasksFailed != 0 || s.TasksDelayed != 0 ||
		s.PollerID != "p1.0" || p.ProcessID != "p1" {
		t.Fatalf("after the walk: %s", fmt.Sprintf("%+v", s))
	}
	stop()
	if _, err := read(); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("key after a clean stop: %v, want ErrKeyNotFound", err)
	}
}
