package streams

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A poller process's state, with a FREE slot (nulls) and a BUSY one,
// validates against its schema; one without its pollers does not.
func TestPollersSchemaValidates(t *testing.T) {
	b, err := PollersSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(PollersSchemaFile, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(PollersSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	node, olt, exec := "job-a.olt-1", "olt-1", "e1"
	p := PollerProcess{ProcessID: "poller-1", Host: "h", PID: 7, StartedAt: now, UpdatedAt: now, WindowSeconds: 300, DelayedAfterSeconds: 2,
		Pollers: []PollerState{
			{PollerID: "poller-1.0", ProcessID: "poller-1", Host: "h", Slot: 0, Status: PollerBusy, CurrentNodeID: &node, CurrentOLTID: &olt,
				CurrentExecutionID: &exec, BusySince: &now, BusyTime: 10, TotalTime: 20, BusyPercentage: 50, BusyPercentageSinceStart: 50,
				TasksCompleted: 3, TasksDelayed: 1, UpdatedAt: now},
			{PollerID: "poller-1.1", ProcessID: "poller-1", Host: "h", Slot: 1, Status: PollerFree, TotalTime: 20, UpdatedAt: now},
		}}
	for name, tc := range map[string]struct {
		edit func(map[string]any)
		ok   bool
	}{
		"as written":      {func(map[string]any) {}, true},
		"without pollers": {func(m map[string]any) { delete(m, "pollers") }, false},
	} {
		t.Run(name, func(t *testing.T) {
			raw, _ := json.Marshal(p)
			var m map[string]any
			_ = json.Unmarshal(raw, &m)
			tc.edit(m)
			raw, _ = json.Marshal(m)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(inst); (err == nil) != tc.ok {
				t.Errorf("validate: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
