// Package projector builds Facho's Postgres read models from the streams:
// configuration (brands, OIDs, OLTs, jobs, assignments), executions and
// their attempts, and onu_data, the current state of every ONU; it
// publishes ONU-change events for integrators.
//
// Each of its four durable consumers has its own checkpoint row; a message
// is applied in one transaction with its checkpoint (pkg/projection), so a
// redelivery or a replay changes nothing twice.
package projector

import (
	"errors"
	"fmt"
	"time"

	"github.com/facho-olt/facho/streams"
)

// Config of the projector. Zero values take defaults.
type Config struct {
	// Source names the service in the events it publishes.
	Source string
	// NackDelay is how long a message that failed (database down) waits
	// before it is redelivered; default 5s.
	NackDelay time.Duration
	// FetchWait bounds one pull from a consumer, and so how long shutdown
	// may wait for an idle fetch; default 1s.
	FetchWait time.Duration
	// OutboxBatch is how many outbox events are published per round;
	// default 1000.
	OutboxBatch int
	// PublishTimeout bounds each wait for the next acknowledgement of the
	// ONU-change events a transaction publishes; default 10s.
	PublishTimeout time.Duration
	// Workers is how many transactions apply a group of varbind batches
	// side by side, each for its share of the OLTs (per-OLT order kept);
	// default 4: a worker mostly waits on Postgres, and with 2 a burst of
	// the whole fleet's walks was committed at 0.67x the walk rate, with 4
	// at 0.85x (facho bench -burst-every-cycle, 2 cores).
	Workers int
	// Partitions splits the varbind projection's OLTs into this many
	// partitions, each led by one replica at a time (partitions.go), so
	// replicas add throughput; every replica must use the same count.
	// Default 1: one replica leads, the others stand by.
	Partitions int
	// GroupMessages is the most varbind batches fetched and applied as one
	// group; default 256, at most streams.ProjectionGroupMaxMessages.
	GroupMessages int
	// InFlightMessages bounds the varbind batches fetched and not yet
	// ended, queued or being applied, over every worker: most of the
	// projector's memory (facho bench, 1,000 OLTs x 1,024 ONUs: peak RSS
	// 1.3 GiB with the defaults, 4 workers). Default 1024; at least
	// GroupMessages.
	InFlightMessages int

	// HistoryRetention is how long onu_history rows are kept (by their
	// time, at): the projector holding the prune lock deletes older ones
	// (historyprune.go). 0 keeps them forever; the binary's default
	// (FACHO_HISTORY_RETENTION) is DefaultHistoryRetention, a year.
	HistoryRetention time.Duration
	// HistoryPruneEvery is how often the history is pruned; default 10m.
	HistoryPruneEvery time.Duration
	// HistoryPruneBatch is the most onu_history rows one delete (one
	// transaction) removes; default 5000.
	HistoryPruneBatch int

	// TrapsKeep is how many traps of each OLT the traps read model keeps
	// (the newest); default 1000.
	TrapsKeep int

	// clock, in tests, is the pruner's clock (time.Now when nil).
	clock func() time.Time
	// acceptUndispatched, in tests that publish work without a NodeDue,
	// applies the varbind batches and execution events of executions the
	// planner never dispatched (trust.go); the other checks stay.
	acceptUndispatched bool
	// afterCommit, in tests, runs between a group's commit and its publish
	// (a crash there is what pending_events is for).
	afterCommit func()
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Source == "" {
		c.Source = "projector"
	}
	if c.NackDelay == 0 {
		c.NackDelay = 5 * time.Second
	}
	if c.FetchWait == 0 {
		c.FetchWait = time.Second
	}
	if c.OutboxBatch == 0 {
		c.OutboxBatch = 1000
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 10 * time.Second
	}
	if c.Workers == 0 {
		c.Workers = 4
	}
	if c.Partitions == 0 {
		c.Partitions = 1
	}
	if c.GroupMessages == 0 {
		c.GroupMessages = 256
	}
	if c.InFlightMessages == 0 {
		c.InFlightMessages = max(1024, c.GroupMessages)
	}
	if c.HistoryPruneEvery == 0 {
		c.HistoryPruneEvery = 10 * time.Minute
	}
	if c.HistoryPruneBatch == 0 {
		c.HistoryPruneBatch = 5000
	}
	if c.TrapsKeep == 0 {
		c.TrapsKeep = 1000
	}
	return c
}

// DBConns is how many database connections the projector may hold at
// once: per varbind partition led, its lock and one per worker; the
// replicas' membership lock; the consumers (the health readings' one of
// them), the traps' grouped loop, the pruner and checkpoint moves.
func (c Config) DBConns() int32 {
	return int32(c.Partitions*(1+c.Workers) + 10)
}

// now is the pruner's clock.
func (c Config) now() time.Time {
	if c.clock != nil {
		return c.clock()
	}
	return time.Now()
}

// Validate checks the configuration after defaults.
func (c Config) Validate() error {
	var errs []error
	if c.NackDelay < 0 {
		errs = append(errs, fmt.Errorf("nack delay %s: want >= 0", c.NackDelay))
	}
	if c.FetchWait < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("fetch wait %s: want at least 10ms", c.FetchWait))
	}
	if c.TrapsKeep < 1 || c.TrapsKeep > 1_000_000 {
		errs = append(errs, fmt.Errorf("traps kept %d: want 1..1000000", c.TrapsKeep))
	}
	if c.OutboxBatch < 1 || c.OutboxBatch > 100000 {
		errs = append(errs, fmt.Errorf("outbox batch %d: want 1..100000", c.OutboxBatch))
	}
	if c.PublishTimeout < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("publish timeout %s: want at least 100ms", c.PublishTimeout))
	}
	if c.Workers < 1 || c.Workers > 64 {
		errs = append(errs, fmt.Errorf("workers %d: want 1..64", c.Workers))
	}
	if c.Partitions < 1 || c.Partitions > streams.ProjectorPartitionsMax {
		errs = append(errs, fmt.Errorf("partitions (FACHO_PROJECTOR_PARTITIONS, -partitions) %d: want 1..%d", c.Partitions, streams.ProjectorPartitionsMax))
	}
	if c.GroupMessages < 1 || c.GroupMessages > streams.ProjectionGroupMaxMessages {
		errs = append(errs, fmt.Errorf("group messages %d: want 1..%d", c.GroupMessages, streams.ProjectionGroupMaxMessages))
	}
	if c.InFlightMessages < c.GroupMessages || c.InFlightMessages > 1<<20 {
		errs = append(errs, fmt.Errorf("in-flight messages (FACHO_PROJECTOR_IN_FLIGHT_MESSAGES, -in-flight-messages) %d: want group messages (%d) .. %d", c.InFlightMessages, c.GroupMessages, 1<<20))
	}
	if c.HistoryRetention < 0 || (c.HistoryRetention > 0 && c.HistoryRetention < time.Hour) {
		errs = append(errs, fmt.Errorf("history retention (FACHO_HISTORY_RETENTION, -history-retention) %s: want 0 (keep forever) or at least 1h", c.HistoryRetention))
	}
	if c.HistoryPruneEvery < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("history prune every %s: want at least 100ms", c.HistoryPruneEvery))
	}
	if c.HistoryPruneBatch < 1 || c.HistoryPruneBatch > 1000000 {
		errs = append(errs, fmt.Errorf("history prune batch %d: want 1..1000000", c.HistoryPruneBatch))
	}
	return errors.Join(errs...)
}
