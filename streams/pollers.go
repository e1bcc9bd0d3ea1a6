package streams

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/invopop/jsonschema"
	"github.com/nats-io/nats.go/jetstream"
)

// BucketPollers is the KV bucket where every poller process publishes the
// state of its execution slots (seed 004's pollers): one key per process,
// rewritten every few seconds, expiring with the bucket's TTL, so a dead
// process disappears from GET /api/v1/pollers/ within that TTL.
const BucketPollers = "facho_pollers"

// Poller status values (seed 004).
const (
	PollerFree = "FREE"
	PollerBusy = "BUSY"
)

// PollersBucketConfig is the KV bucket of poller states: History 1 and the
// bucket TTL as the time a silent process stays listed.
func PollersBucketConfig(o Options) jetstream.KeyValueConfig {
	o = o.WithDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketPollers,
		Description: "poller states: one key per poller process, its execution slots with their status and counters",
		History:     1,
		TTL:         o.PollersTTL,
		Storage:     o.Storage,
		Replicas:    o.Replicas,
	}
}

// PollerProcess is the value of one key of BucketPollers (the key is the
// process's poller id, Config.PollerID of the poller service): the
// process and each of its execution slots.
type PollerProcess struct {
	// ProcessID is the poller process (its lease holder id).
	ProcessID string    `json:"process_id"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	// UpdatedAt is when this value was written; the key expires one bucket
	// TTL after it.
	UpdatedAt time.Time `json:"updated_at"`
	// WindowSeconds is the span of busy_percentage: the last
	// FACHO_POLLER_STATS_WINDOW, or since start when the process is
	// younger.
	WindowSeconds float64 `json:"window_seconds"`
	// DelayedAfterSeconds: a task that started more than this after its
	// scheduled_at counts in tasks_delayed.
	DelayedAfterSeconds float64       `json:"delayed_after_seconds"`
	Pollers             []PollerState `json:"pollers"`
	// Workers is the process's cap on nodes run at once
	// (FACHO_POLLER_WORKERS; by default the number of its slots): the
	// planner counts min(workers, slots) of the process as capacity.
	// Absent (0): a process from before the field, capped by its slots.
	Workers int `json:"workers,omitempty"`
}

// PollerState is one execution slot of a poller process: seed 004's
// Poller (poller_id, status, current_node_id, busy_time, total_time,
// tasks_completed, tasks_delayed) plus busy percentages and where it runs.
type PollerState struct {
	// PollerID is "<process_id>.<slot>".
	PollerID  string `json:"poller_id"`
	ProcessID string `json:"process_id"`
	Host      string `json:"host"`
	Slot      int    `json:"slot"`
	// Class is the queue class (discovery, polling, retry, high_priority)
	// whose nodes the slot runs: a process has as many slots of each class
	// as the class's concurrency limit.
	Class string `json:"class,omitempty"`
	// Status is FREE or BUSY (running a node under its OLT's lease).
	Status string `json:"status"`
	// CurrentNodeID, CurrentOLTID and CurrentExecutionID name the node
	// being run; null when FREE.
	CurrentNodeID      *string    `json:"current_node_id" jsonschema:"nullable"`
	CurrentOLTID       *string    `json:"current_olt_id" jsonschema:"nullable"`
	CurrentExecutionID *string    `json:"current_execution_id" jsonschema:"nullable"`
	BusySince          *time.Time `json:"busy_since" jsonschema:"nullable"`
	// BusyTime and TotalTime are seconds since the process started.
	BusyTime  float64 `json:"busy_time"`
	TotalTime float64 `json:"total_time"`
	// BusyPercentage is the busy share of the last window (see
	// PollerProcess.WindowSeconds), 0..100; BusyPercentageSinceStart is
	// busy_time / total_time.
	BusyPercentage           float64 `json:"busy_percentage"`
	BusyPercentageSinceStart float64 `json:"busy_percentage_since_start"`
	// TasksCompleted counts the nodes run to an end (succeeded or failed)
	// since start; TasksFailed those of them that failed; TasksDelayed the
	// nodes started later than scheduled_at + delayed_after_seconds.
	TasksCompleted int64     `json:"tasks_completed"`
	TasksFailed    int64     `json:"tasks_failed"`
	TasksDelayed   int64     `json:"tasks_delayed"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// PollersSchemaFile is the JSON Schema of a BucketPollers value under
// schemas/.
const PollersSchemaFile = "kv.facho_pollers.v1.json"

// PollersSchema returns the JSON Schema of PollerProcess.
func PollersSchema() ([]byte, error) {
	r := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, AllowAdditionalProperties: true}
	s := r.Reflect(PollerProcess{})
	s.Version = "https://json-schema.org/draft/2020-12/schema"
	s.ID = jsonschema.ID("https://facho.dev/streams/schemas/" + PollersSchemaFile)
	s.Title = BucketPollers + " value v1"
	s.Description = "The state of one poller process and its execution slots, the value of key <process_id> of KV bucket " + BucketPollers + "."
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", BucketPollers, err)
	}
	return append(b, '\n'), nil
}
