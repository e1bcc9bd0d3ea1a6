package streams

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BucketPlannerLeader is the KV bucket of the planner's leader lease: one
// key, LeaderKey, held by the active planner replica and renewed by
// compare-and-swap; the others stand by and take it over when it expires.
const BucketPlannerLeader = "facho_planner_leader"

// LeaderKey is the planner leader's key in BucketPlannerLeader (pkg/lease
// names it "olt.<id>": the id is "planner").
const LeaderKey = "planner"

// BucketSchedule is the KV bucket of the persisted schedule: one entry per
// node (a job assigned to an OLT), written by the active planner, read by
// the API and by a restarted or taking-over planner.
const BucketSchedule = "facho_schedule"

// Node states in the persisted schedule.
const (
	NodeIdle     = "idle"      // waiting for next_run_at
	NodeWaiting  = "waiting"   // due, in its OLT's queue behind the node in flight
	NodeInFlight = "in_flight" // dispatched, its execution not ended yet
	NodeRetry    = "retry"     // an attempt failed; retried at retry_at
	NodeDisabled = "disabled"  // not plannable (see disabled_reason)
)

// FailuresKeyPrefix prefixes the key of an OLT's count of consecutive
// failed executions in BucketSchedule ("failures_<olt_id>": no dot, so it
// is never taken for a node), so a new planner term keeps counting.
const FailuresKeyPrefix = "failures_"

// OLTFailures is the value of an OLT's failures key.
type OLTFailures struct {
	OLTID string `json:"olt_id"`
	Count int    `json:"count"`
}

// ScheduleKey is a node's key in BucketSchedule: its node id
// "<job_id>.<olt_id>" (ids never contain dots).
func ScheduleKey(jobID, oltID string) string { return jobID + "." + oltID }

// NodeFlight is the execution of a node that is in flight.
type NodeFlight struct {
	ExecutionID  string    `json:"execution_id"`
	ScheduledAt  time.Time `json:"scheduled_at"`
	DispatchedAt time.Time `json:"dispatched_at"`
	// Attempt is the lowest attempt number this dispatch of the execution
	// can run (the planner's: 1 + the failed attempts, or past an attempt
	// lost before it): an event of a lower attempt is an earlier
	// dispatch's. 0: unknown (entries written before it).
	Attempt int `json:"attempt,omitempty"`
	// LostAttempt and LostAt: an attempt of this dispatch was lost with
	// its poller (execution.interrupted without cancelled) at LostAt. If no
	// later attempt ends the execution, it ends INTERRUPTED and is retried.
	LostAttempt int        `json:"lost_attempt,omitempty"`
	LostAt      *time.Time `json:"lost_at,omitempty"`
}

// NodeSchedule is one node's entry in BucketSchedule (JSON, no envelope:
// KV keeps only the latest value).
type NodeSchedule struct {
	NodeID          string   `json:"node_id"`
	JobID           string   `json:"job_id"`
	OLTID           string   `json:"olt_id"`
	JobName         string   `json:"job_name"`
	Kind            string   `json:"kind"`
	Priority        int      `json:"priority"`
	IntervalSeconds int      `json:"interval_seconds"`
	Chain           []string `json:"chain"`
	Enabled         bool     `json:"enabled"`
	DisabledReason  string   `json:"disabled_reason,omitempty"`
	State           string   `json:"state"`
	// Since is when the node last became plannable: a restored entry is
	// used only for the same incarnation of the node.
	Since           time.Time   `json:"since,omitzero"`
	NextRunAt       *time.Time  `json:"next_run_at"`
	LastRunAt       *time.Time  `json:"last_run_at"`
	LastStatus      string      `json:"last_status"`
	LastExecutionID string      `json:"last_execution_id,omitempty"`
	InFlight        *NodeFlight `json:"in_flight,omitempty"`
	// FailedAttempts of the current run and, in state retry, when it is
	// retried.
	FailedAttempts int        `json:"failed_attempts,omitempty"`
	RetryAt        *time.Time `json:"retry_at,omitempty"`
	// NextAttempt, in state retry after a lost attempt: the lowest attempt
	// number the retry can run (past the lost one).
	NextAttempt int `json:"next_attempt,omitempty"`
}

// ScheduleBucketConfig is the KV bucket of the persisted schedule.
func ScheduleBucketConfig(o Options) jetstream.KeyValueConfig {
	o = o.WithDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketSchedule,
		Description: "persisted schedule: one entry per node (job on OLT) with next_run_at, last_run_at, last_status and the execution in flight",
		History:     1,
		Storage:     o.Storage,
		Replicas:    o.Replicas,
	}
}

// CancelBucketConfig is the KV bucket of cancelled executions; an entry
// outlives any NodeDue it may concern (the schedule stream's max age).
func CancelBucketConfig(o Options) jetstream.KeyValueConfig {
	o = o.WithDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketCancel,
		Description: "cancelled executions: the planner's word that a NodeDue must not start (or must stop)",
		History:     1,
		TTL:         o.ScheduleMaxAge,
		Storage:     o.Storage,
		Replicas:    o.Replicas,
	}
}

// LeaderBucketConfig is the KV bucket of the planner's leader lease; its TTL
// is the lease TTL (renewed by Update, as the OLT leases are).
func LeaderBucketConfig(o Options) jetstream.KeyValueConfig {
	o = o.WithDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketPlannerLeader,
		Description: "the active planner's leader lease: one planner replica plans, the others stand by",
		History:     1,
		TTL:         o.LeaderTTL,
		Storage:     o.Storage,
		Replicas:    o.Replicas,
	}
}

// QueueKey is the key in BucketPlannerLeader where the active planner
// keeps its queue report (seed 004's GET /api/v1/pollers/queue/), rewritten
// every tick; it expires with the bucket's TTL when no planner is active.
const QueueKey = "queue"

// QueueReport is the planner's queue as the API serves it.
type QueueReport struct {
	GeneratedAt time.Time `json:"generated_at"`
	Planner     string    `json:"planner"`
	// Size is the backlog: every due node not started, waiting in the
	// planner (for its OLT or a slot of its class) or dispatched and not
	// yet taken by a poller slot; InFlight the OLTs with a node dispatched
	// and not ended; Planned every node.
	Size     int `json:"size"`
	InFlight int `json:"in_flight"`
	Planned  int `json:"planned"`
	// IsOverload: more waiting nodes are late by over 5 s than the
	// planner's overload threshold, or any class is overloaded (see
	// ClassQueue.IsOverload).
	IsOverload bool `json:"is_overload"`
	// NextNodes are the next 10 to be dispatched, most urgent first.
	NextNodes []QueuedNode `json:"next_nodes"`
	// Delayed counts the waiting nodes late by more than each bucket
	// (5s, 10s, 30s, 1m, 5m, 10m; cumulative) per queue class (discovery,
	// polling, retry, high_priority) and per OLT (the 100 with the most).
	Delayed      map[string]int            `json:"delayed"`
	DelayedClass map[string]map[string]int `json:"delayed_by_class"`
	DelayedOLT   map[string]map[string]int `json:"delayed_by_olt"`
	// Waiting is the part of Size still in the planner (due, not
	// dispatched: its OLT busy, or its class without a free slot);
	// DispatchedWaiting the part dispatched and not yet taken by a poller
	// slot (dispatched and not ended, less the slots of its class running).
	// Size = Waiting + DispatchedWaiting.
	Waiting           int `json:"waiting"`
	DispatchedWaiting int `json:"dispatched_waiting"`
	// Classes are the same figures per queue class (discovery, polling,
	// retry, high_priority); IsOverload is true when any class is
	// overloaded.
	Classes map[string]ClassQueue `json:"classes,omitempty"`
}

// ClassQueue is one queue class in a QueueReport: its backlog and its
// capacity as the planner dispatches against it.
type ClassQueue struct {
	// Size is what is due and not started: Waiting + DispatchedWaiting.
	Size int `json:"size"`
	// Waiting: due nodes of the class still in the planner.
	Waiting int `json:"waiting"`
	// Dispatched: NodeDue of the class dispatched and not ended;
	// DispatchedWaiting those of them no poller slot runs yet.
	Dispatched        int `json:"dispatched"`
	DispatchedWaiting int `json:"dispatched_waiting"`
	// Running: slots of the class running a node now (the pollers' BUSY
	// slots of the class, as the facho_pollers bucket says).
	Running int `json:"running"`
	// Capacity: the slots of the class in the live poller processes; null
	// when no live poller reports the class (capacity unknown: the planner
	// then dispatches the class without a limit). Free: Capacity less
	// Dispatched, at least 0 (null when Capacity is).
	Capacity *int `json:"capacity" jsonschema:"nullable"`
	Free     *int `json:"free" jsonschema:"nullable"`
	// Late: waiting nodes of the class late by more than 5 s.
	Late int `json:"late"`
	// IsSaturated: every slot of the class is taken (Dispatched >=
	// Capacity > 0). IsOverload: saturated with a node late by over 5 s
	// waiting, or more nodes late by over 5 s than the overload threshold.
	IsSaturated bool `json:"is_saturated"`
	IsOverload  bool `json:"is_overload"`
}

// QueuedNode is one waiting node in a QueueReport.
type QueuedNode struct {
	NodeID       string    `json:"node_id"`
	OLTID        string    `json:"olt_id"`
	JobID        string    `json:"job_id"`
	DueAt        time.Time `json:"due_at"`
	DelaySeconds float64   `json:"delay_seconds"`
	Priority     int       `json:"priority"`
	Class        string    `json:"class"`
}

// AvailabilityLeaderBucketConfig is the KV bucket of the availability
// service's leader lease (the planner leader's TTL).
func AvailabilityLeaderBucketConfig(o Options) jetstream.KeyValueConfig {
	c := LeaderBucketConfig(o)
	c.Bucket = BucketAvailabilityLeader
	c.Description = "the active availability service's leader lease: one replica probes the OLTs, the others stand by"
	return c
}
