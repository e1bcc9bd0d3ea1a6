package poller

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/streams"
)

// Config of one poller instance. Zero fields take the defaults of
// WithDefaults.
type Config struct {
	// PollerID names this instance: the lease holder and the poller_id of
	// its events. Default "poller-" + a random suffix.
	PollerID string
	// Source is the envelope source of published events. Default "poller".
	Source string
	// Workers is the most NodeDue handled in parallel by the process (each
	// on its own OLT, the lease sees to that), one execution slot each.
	// Default (0): the sum of the class concurrencies; a smaller value caps
	// the process on top of the class limits.
	Workers int
	// Classes are the queue classes' limits (seed 001); zero fields take
	// DefaultClasses.
	Classes ClassLimits
	// FetchWait bounds one pull request of an idle worker. Default 1s.
	FetchWait time.Duration
	// LeaseBusyDelay is the NAK delay of a NodeDue whose OLT is busy.
	// Default 1s.
	LeaseBusyDelay time.Duration
	// ChainONUWait bounds how long a chained get run right after a
	// discovery of the same composite that found rows waits, under the
	// lease, for the projector to publish the OLT's first discovered ONUs
	// when none is known yet (a new OLT's workflow). Default 15s.
	ChainONUWait time.Duration
	// TransientDelay is the NAK delay after a transient failure (NATS
	// unreachable, lease bucket unavailable). Default 5s.
	TransientDelay time.Duration
	// ProgressInterval is how often a running NodeDue is marked in
	// progress. Default: a third of the consumer's AckWait.
	ProgressInterval time.Duration
	// SNMPTimeout and SNMPRetries apply to each SNMP request. Defaults 2s
	// and 1; SNMPRetries < 0 means 0 retries.
	SNMPTimeout time.Duration
	SNMPRetries int
	// PDURetries is how many more times a request (a GETBULK of a walk, a
	// GET chunk) that got no usable answer after SNMPRetries is sent
	// again, after PDUBackoff, doubled before each further retry (at most
	// maxPDUBackoff); a walk resumes from the last OID it received. So a
	// lossy OLT completes, while a dead one fails after at most
	// (1+PDURetries) x (1+SNMPRetries) x SNMPTimeout plus the backoffs per
	// request, or at the node's timeout if that comes first. Default 4;
	// < 0 means none.
	PDURetries int
	// PDUBackoff is the wait before the first retry of a request. Default
	// 250ms.
	PDUBackoff time.Duration
	// PDURetryBudget is the most PDU retries of one execution, whatever
	// its size. Default 100; < 0 means none.
	PDURetryBudget int
	// MaxRepetitions of GETBULK, unless the OLT's or brand's SNMP tuning
	// (max_repetitions) says otherwise. Default 25, what snmpbulkwalk
	// -Cr25 uses; never 0 (hangs some ZTE).
	MaxRepetitions int
	// GetChunk is how many OIDs one GET carries: the first PDU size of a
	// get job, unless the OLT's or brand's SNMP tuning (get_varbinds) or
	// the size remembered from the OLT's last get says otherwise; a PDU
	// that times out or is tooBig is split in halves (getbatch.go).
	// Default 20, at most 60.
	GetChunk int
	// GetConcurrency is how many GET PDUs of one get job are in flight on
	// its OLT at once, unless the OLT's or brand's tuning
	// (get_concurrency) says otherwise. Default 2, at most 16.
	GetConcurrency int
	// BatchSize is the most varbinds per VarbindBatch; a batch is also cut
	// at half the server's maximum payload. Default 500.
	BatchSize int
	// RowBufferVarbinds bounds the varbinds an execution buffers to
	// publish them grouped by row (rows.go): when the buffer holds this
	// many they are published at once, and the rest of the walk's
	// varbinds in later batches. Default 262144 (some 30 MB), at least 1.
	RowBufferVarbinds int
	// NodeTimeout bounds a whole node when NodeDue.TimeoutSeconds is 0.
	// Default 60s.
	NodeTimeout time.Duration
	// ShutdownGrace is how long in-flight operations may go on after Run's
	// context ends before they are cancelled. Default 10s.
	ShutdownGrace time.Duration
	// InterruptSweepEvery is how often the poller looks for executions
	// whose lease expired without a terminal event that no lease watch saw
	// (see interrupt.go); it also sweeps once at start. Default 5m.
	InterruptSweepEvery time.Duration
	// InterruptLookback is how far back a sweep looks for started
	// attempts. Default 1h.
	InterruptLookback time.Duration
	// StatsEvery is how often the process writes its slots' state to
	// streams.BucketPollers (at most a third of the bucket's TTL), besides
	// soon after a slot changes status (stats.go). Default 2s.
	StatsEvery time.Duration
	// StatsWindow is the span of busy_percentage. Default 5m.
	StatsWindow time.Duration
	// DelayedAfter: a node started more than this after its scheduled_at
	// counts in tasks_delayed. Default 2s.
	DelayedAfter time.Duration
	// Bounds is the global ceiling of what one execution may read
	// (bounds.go): a node's bounds are its brand's vendor profile's, each
	// capped by these. Zero fields take profiles.DefaultBounds.
	Bounds profiles.Bounds
	// ProfilesDir is a folder of vendor profiles added to the built-in
	// ones, read for their bounds (the API's FACHO_PROFILES_DIR).
	ProfilesDir string
	// DisableOLTMetrics drops facho_poller_olt_executions_total (one series
	// per OLT and result) where the number of OLTs makes it too many.
	DisableOLTMetrics bool
}

// Defaults and bounds of Config fields the command line shows.
const (
	DefaultMaxRepetitions    = 25
	DefaultRowBufferVarbinds = 262144
	MaxRowBufferVarbinds     = 16 << 20
)

// ClassLimit is one queue class's share of a poller process.
type ClassLimit struct {
	// Concurrency is how many of the class's NodeDue this process runs at
	// once (its workers on the class's consumer).
	Concurrency int
	// Timeout bounds a node of the class whose NodeDue.TimeoutSeconds is
	// 0; for retry and high, 0 means the timeout of the class of the
	// node's kind (discovery or polling).
	Timeout time.Duration
}

// ClassLimits are the limits of the four classes.
type ClassLimits struct {
	Discovery, Polling, Retry, High ClassLimit
}

// DefaultClasses are seed 001's queues: discovery 2 at a time and 300 s,
// polling 5 and 60 s; retry and high priority 2 each, with the timeout of
// the node's kind.
func DefaultClasses() ClassLimits {
	return ClassLimits{
		Discovery: ClassLimit{Concurrency: 2, Timeout: 300 * time.Second},
		Polling:   ClassLimit{Concurrency: 5, Timeout: 60 * time.Second},
		Retry:     ClassLimit{Concurrency: 2},
		High:      ClassLimit{Concurrency: 2},
	}
}

// Of is class's limit (the zero limit for an unknown class).
func (l ClassLimits) Of(class string) ClassLimit {
	switch class {
	case streams.ClassDiscovery:
		return l.Discovery
	case streams.ClassPolling:
		return l.Polling
	case streams.ClassRetry:
		return l.Retry
	case streams.ClassHigh:
		return l.High
	}
	return ClassLimit{}
}

// Total is the sum of the concurrency limits: the slots of a process.
func (l ClassLimits) Total() int {
	return l.Discovery.Concurrency + l.Polling.Concurrency + l.Retry.Concurrency + l.High.Concurrency
}

// timeoutOf is the timeout of a node of kind in class when its NodeDue
// has none: the class's, else (retry, high, legacy) the kind's class's.
func (l ClassLimits) timeoutOf(class, kind string) time.Duration {
	if t := l.Of(class).Timeout; t > 0 {
		return t
	}
	if kind == streams.KindDiscovery {
		return l.Discovery.Timeout
	}
	return l.Polling.Timeout
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	d := DefaultClasses()
	for _, p := range []struct{ c, d *ClassLimit }{{&c.Classes.Discovery, &d.Discovery}, {&c.Classes.Polling, &d.Polling},
		{&c.Classes.Retry, &d.Retry}, {&c.Classes.High, &d.High}} {
		if p.c.Concurrency == 0 {
			p.c.Concurrency = p.d.Concurrency
		}
		if p.c.Timeout == 0 {
			p.c.Timeout = p.d.Timeout
		}
	}
	if c.Workers == 0 {
		c.Workers = c.Classes.Total()
	}
	if c.PollerID == "" {
		c.PollerID = "poller-" + uuid.NewString()[:8]
	}
	if c.Source == "" {
		c.Source = "poller"
	}
	if c.FetchWait == 0 {
		c.FetchWait = time.Second
	}
	if c.LeaseBusyDelay == 0 {
		c.LeaseBusyDelay = time.Second
	}
	if c.TransientDelay == 0 {
		c.TransientDelay = 5 * time.Second
	}
	if c.ChainONUWait == 0 {
		c.ChainONUWait = 15 * time.Second
	}
	if c.SNMPTimeout == 0 {
		c.SNMPTimeout = 2 * time.Second
	}
	if c.SNMPRetries == 0 {
		c.SNMPRetries = 1
	}
	if c.SNMPRetries < 0 {
		c.SNMPRetries = 0
	}
	if c.PDURetries == 0 {
		c.PDURetries = 4
	}
	if c.PDURetries < 0 {
		c.PDURetries = 0
	}
	if c.PDUBackoff == 0 {
		c.PDUBackoff = 250 * time.Millisecond
	}
	if c.PDURetryBudget == 0 {
		c.PDURetryBudget = 100
	}
	if c.PDURetryBudget < 0 {
		c.PDURetryBudget = 0
	}
	if c.MaxRepetitions == 0 {
		c.MaxRepetitions = DefaultMaxRepetitions
	}
	if c.GetChunk == 0 {
		c.GetChunk = 20
	}
	if c.GetConcurrency == 0 {
		c.GetConcurrency = 2
	}
	if c.BatchSize == 0 {
		c.BatchSize = 500
	}
	if c.RowBufferVarbinds == 0 {
		c.RowBufferVarbinds = DefaultRowBufferVarbinds
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = 60 * time.Second
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.InterruptSweepEvery == 0 {
		c.InterruptSweepEvery = 5 * time.Minute
	}
	if c.InterruptLookback == 0 {
		c.InterruptLookback = time.Hour
	}
	if c.StatsEvery == 0 {
		c.StatsEvery = 2 * time.Second
	}
	if c.StatsWindow == 0 {
		c.StatsWindow = 5 * time.Minute
	}
	if c.DelayedAfter == 0 {
		c.DelayedAfter = 2 * time.Second
	}
	c.Bounds = c.Bounds.Or(profiles.DefaultBounds())
	return c
}

// Validate checks a config after WithDefaults.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(streams.ValidID(c.PollerID), "poller id %q: want letters, digits, _ and - (at most 64)", c.PollerID)
	for _, cl := range streams.Classes() {
		l := c.Classes.Of(cl)
		check(l.Concurrency >= 1 && l.Concurrency <= 256, "class %s concurrency %d: want 1..256", cl, l.Concurrency)
		check(l.Timeout >= 0 && l.Timeout <= 24*time.Hour, "class %s timeout %s: want 0..24h", cl, l.Timeout)
	}
	check(c.Classes.Discovery.Timeout >= time.Second, "class discovery timeout %s: want at least 1s", c.Classes.Discovery.Timeout)
	check(c.Classes.Polling.Timeout >= time.Second, "class polling timeout %s: want at least 1s", c.Classes.Polling.Timeout)
	check(c.Workers >= 1 && c.Workers <= 1024, "workers %d (the sum of the class concurrencies): want 1..1024", c.Workers)
	check(c.FetchWait >= 10*time.Millisecond, "fetch wait %s: want at least 10ms", c.FetchWait)
	check(c.LeaseBusyDelay > 0, "lease busy delay %s: want > 0", c.LeaseBusyDelay)
	check(c.TransientDelay > 0, "transient delay %s: want > 0", c.TransientDelay)
	check(c.ChainONUWait >= 0 && c.ChainONUWait <= 5*time.Minute, "chain onu wait %s: want 0..5m", c.ChainONUWait)
	check(c.ProgressInterval >= 0, "progress interval %s: want >= 0", c.ProgressInterval)
	check(c.SNMPTimeout >= 10*time.Millisecond, "snmp timeout %s: want at least 10ms", c.SNMPTimeout)
	check(c.SNMPRetries >= 0 && c.SNMPRetries <= 10, "snmp retries %d: want 0..10", c.SNMPRetries)
	check(c.PDURetries >= 0 && c.PDURetries <= 10, "snmp pdu retries %d: want 0..10", c.PDURetries)
	check(c.PDUBackoff >= time.Millisecond && c.PDUBackoff <= maxPDUBackoff, "snmp pdu backoff %s: want 1ms..%s", c.PDUBackoff, maxPDUBackoff)
	check(c.PDURetryBudget >= 0 && c.PDURetryBudget <= 1000000, "snmp pdu retry budget %d: want 0..1000000", c.PDURetryBudget)
	check(c.MaxRepetitions >= 1 && c.MaxRepetitions <= 255, "max repetitions %d: want 1..255", c.MaxRepetitions)
	check(c.GetChunk >= 1 && c.GetChunk <= streams.MaxGetVarbinds, "get chunk %d: want 1..%d", c.GetChunk, streams.MaxGetVarbinds)
	check(c.GetConcurrency >= 1 && c.GetConcurrency <= streams.MaxGetConcurrency, "get concurrency %d: want 1..%d", c.GetConcurrency, streams.MaxGetConcurrency)
	check(c.BatchSize >= 1 && c.BatchSize <= 10000, "batch size %d: want 1..10000", c.BatchSize)
	check(c.RowBufferVarbinds >= 1 && c.RowBufferVarbinds <= MaxRowBufferVarbinds, "row buffer varbinds %d: want 1..%d", c.RowBufferVarbinds, MaxRowBufferVarbinds)
	check(c.NodeTimeout >= time.Second, "node timeout %s: want at least 1s", c.NodeTimeout)
	check(c.ShutdownGrace >= 0, "shutdown grace %s: want >= 0", c.ShutdownGrace)
	check(c.InterruptSweepEvery >= time.Second, "interrupt sweep every %s: want at least 1s", c.InterruptSweepEvery)
	check(c.InterruptLookback >= time.Minute, "interrupt lookback %s: want at least 1m", c.InterruptLookback)
	check(c.StatsEvery >= 100*time.Millisecond && c.StatsEvery <= time.Minute, "stats every %s: want 100ms..1m", c.StatsEvery)
	check(c.StatsWindow >= 2*c.StatsEvery && c.StatsWindow <= 24*time.Hour, "stats window %s: want 2 x stats every..24h", c.StatsWindow)
	check(c.DelayedAfter > 0, "delayed after %s: want > 0", c.DelayedAfter)
	if err := c.Bounds.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("bounds: %w", err))
	} else if err := c.Bounds.Complete(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
