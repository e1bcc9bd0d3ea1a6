package poller

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Config of one poller instance. Zero fields take the defaults of
// WithDefaults.
type Config struct {
	// PollerID names this instance: the lease holder and the poller_id of
	// its events. Default "poller-" + a random suffix.
	PollerID string
	// Source is the envelope source of published events. Default "poller".
	Source string
	// Workers is the number of NodeDue handled in parallel (each on its
	// own OLT, the lease sees to that). Default 4.
	Workers int
	// FetchWait bounds one pull request of an idle worker. Default 1s.
	FetchWait time.Duration
	// LeaseBusyDelay is the NAK delay of a NodeDue whose OLT is busy.
	// Default 1s.
	LeaseBusyDelay time.Duration
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
	// MaxRepetitions of GETBULK. Default 10; never 0 (hangs some ZTE).
	MaxRepetitions int
	// GetChunk is how many OIDs one GET carries. Default 10, at most 60.
	GetChunk int
	// BatchSize is the most varbinds per VarbindBatch; a batch is also cut
	// at half the server's maximum payload. Default 500.
	BatchSize int
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
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.PollerID == "" {
		c.PollerID = "poller-" + uuid.NewString()[:8]
	}
	if c.Source == "" {
		c.Source = "poller"
	}
	if c.Workers == 0 {
		c.Workers = 4
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
		c.MaxRepetitions = 10
	}
	if c.GetChunk == 0 {
		c.GetChunk = 10
	}
	if c.BatchSize == 0 {
		c.BatchSize = 500
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
	check(c.PollerID != "", "poller id is empty")
	check(c.Workers >= 1 && c.Workers <= 1024, "workers %d: want 1..1024", c.Workers)
	check(c.FetchWait >= 10*time.Millisecond, "fetch wait %s: want at least 10ms", c.FetchWait)
	check(c.LeaseBusyDelay > 0, "lease busy delay %s: want > 0", c.LeaseBusyDelay)
	check(c.TransientDelay > 0, "transient delay %s: want > 0", c.TransientDelay)
	check(c.ProgressInterval >= 0, "progress interval %s: want >= 0", c.ProgressInterval)
	check(c.SNMPTimeout >= 10*time.Millisecond, "snmp timeout %s: want at least 10ms", c.SNMPTimeout)
	check(c.SNMPRetries >= 0 && c.SNMPRetries <= 10, "snmp retries %d: want 0..10", c.SNMPRetries)
	check(c.PDURetries >= 0 && c.PDURetries <= 10, "snmp pdu retries %d: want 0..10", c.PDURetries)
	check(c.PDUBackoff >= time.Millisecond && c.PDUBackoff <= maxPDUBackoff, "snmp pdu backoff %s: want 1ms..%s", c.PDUBackoff, maxPDUBackoff)
	check(c.PDURetryBudget >= 0 && c.PDURetryBudget <= 1000000, "snmp pdu retry budget %d: want 0..1000000", c.PDURetryBudget)
	check(c.MaxRepetitions >= 1 && c.MaxRepetitions <= 255, "max repetitions %d: want 1..255", c.MaxRepetitions)
	check(c.GetChunk >= 1 && c.GetChunk <= 60, "get chunk %d: want 1..60", c.GetChunk)
	check(c.BatchSize >= 1 && c.BatchSize <= 10000, "batch size %d: want 1..10000", c.BatchSize)
	check(c.NodeTimeout >= time.Second, "node timeout %s: want at least 1s", c.NodeTimeout)
	check(c.ShutdownGrace >= 0, "shutdown grace %s: want >= 0", c.ShutdownGrace)
	check(c.InterruptSweepEvery >= time.Second, "interrupt sweep every %s: want at least 1s", c.InterruptSweepEvery)
	check(c.InterruptLookback >= time.Minute, "interrupt lookback %s: want at least 1m", c.InterruptLookback)
	return errors.Join(errs...)
}
