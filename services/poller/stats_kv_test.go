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
	one := ClassLimit{Concurrency: 1}
	stop, _ := e.startPoller(t, Config{PollerID: "p1", Classes: ClassLimits{Discovery: one, Polling: one, Retry: one, High: one}, StatsEvery: 200 * time.Millisecond})
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
	// One slot per class, labelled; a NodeDue without class runs in the
	// polling slot.
	first := waitState("four FREE slots", func(p streams.PollerProcess) bool {
		if len(p.Pollers) != 4 {
			return false
		}
		for _, s := range p.Pollers {
			if s.Status != streams.PollerFree {
				return false
			}
		}
		return true
	})
	slot, other := -1, -1
	classes := map[string]bool{}
	for i, s := range first.Pollers {
		classes[s.Class] = true
		if s.Class == streams.ClassPolling {
			slot = i
		} else {
			other = i
		}
	}
	if len(classes) != 4 || slot < 0 {
		t.Fatalf("slot classes %v, want one slot of each class", classes)
	}

	n := e.nodeDue("slow", "e1", "job-walk")
	e.publishNodeDue(t, n)
	p := waitState("the polling slot BUSY with the node", func(p streams.PollerProcess) bool {
		s := p.Pollers[slot]
		return s.Status == streams.PollerBusy && s.CurrentNodeID != nil && *s.CurrentNodeID == n.NodeID
	})
	s0 := p.Pollers[slot]
	if *s0.CurrentOLTID != "slow" || *s0.CurrentExecutionID != "e1" || s0.BusySince == nil || p.Pollers[other].Status != streams.PollerFree {
		t.Fatalf("busy state: %+v", p)
	}
	p = waitState("the polling slot FREE with the task completed", func(p streams.PollerProcess) bool {
		return p.Pollers[slot].Status == streams.PollerFree && p.Pollers[slot].TasksCompleted == 1
	})
	if s := p.Pollers[slot]; s.CurrentNodeID != nil || s.BusyTime <= 0 || s.BusyTime > s.TotalTime || s.TasksFailed != 0 || s.TasksDelayed != 0 ||
		s.PollerID != fmt.Sprintf("p1.%d", slot) || p.ProcessID != "p1" {
		t.Fatalf("after the walk: %s", fmt.Sprintf("%+v", s))
	}
	stop()
	if _, err := read(); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("key after a clean stop: %v, want ErrKeyNotFound", err)
	}
}
