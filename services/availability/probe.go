package availability

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/pkg/telemetry"
)

// OIDSysUpTime is what a probe reads: cheap on every agent.
const OIDSysUpTime = ".1.3.6.1.2.1.1.3.0"

// target is where and how to probe an OLT. community is plaintext only in
// memory, never logged.
type target struct {
	host      string
	port      int
	community string
}

// probeResult is one probe's outcome. answered is false when the OLT sent
// nothing back (timeout, unreachable network); err is then why (without
// the community). skipped, when set, says why no probe was sent (or why
// its outcome does not count): the OLT's state does not change.
type probeResult struct {
	oltID    string
	start    time.Time
	duration time.Duration
	answered bool
	err      string
	skipped  string
}

// Why a probe was skipped: the reason label of
// facho_availability_probes_skipped_total.
const (
	// SkipOLTBusy: another holder (a poller's walk) had the OLT's lease.
	SkipOLTBusy = "olt_busy"
	// SkipLeaseError: the lease bucket did not answer (NATS unreachable).
	SkipLeaseError = "lease_error"
	// SkipLeaseLost: the lease was lost while the probe ran; its outcome
	// is not trusted.
	SkipLeaseLost = "lease_lost"
)

// ProbeLeaseJob is the job_id of a probe's lease record, what an operator
// reading the lease bucket sees while a probe holds an OLT.
const ProbeLeaseJob = "availability-probe"

// leasedProber sends probes under the OLT's lease (the one a poller holds
// for a walk), so that an OLT never has a probe and a walk in flight at
// once.
type leasedProber struct {
	leases  *lease.Manager
	timeout time.Duration
	retries int
	// releaseTimeout bounds the release of a probe's lease (the key
	// expires after the bucket's TTL anyway).
	releaseTimeout time.Duration
	now            func() time.Time
	log            zerolog.Logger
}

// run tries the OLT's lease without waiting: held by someone else (a walk
// in progress, itself no evidence that the OLT is unreachable) or not
// acquirable (the bucket did not answer), the probe is skipped; acquired,
// the probe runs under it and the lease is released right after. A
// service that dies while holding it leaves the key to expire after the
// bucket's TTL (FACHO_LEASE_TTL), as a dead poller's does.
func (p *leasedProber) run(ctx context.Context, j probeJob) probeResult {
	r := probeResult{oltID: j.oltID}
	l, err := p.leases.Acquire(ctx, j.oltID, lease.Info{JobID: ProbeLeaseJob})
	if err != nil {
		r.start, r.err, r.skipped = p.now(), err.Error(), SkipLeaseError
		if errors.Is(err, lease.ErrHeld) {
			r.skipped = SkipOLTBusy
		}
		return r
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.releaseTimeout)
		defer cancel()
		if err := l.Release(rctx); err != nil && !errors.Is(err, lease.ErrLost) {
			p.log.Warn().Err(err).Str(telemetry.KeyOLT, j.oltID).Msg("release the probe's lease; it expires after the lease TTL")
		}
	}()
	lctx, cancel := l.Context(ctx)
	start := time.Now()
	ok, perr := probe(lctx, j.t, p.timeout, p.retries)
	lost := errors.Is(context.Cause(lctx), lease.ErrLost)
	cancel()
	r.duration = time.Since(start)
	r.start = p.now().Add(-r.duration)
	r.answered = ok
	if perr != nil {
		r.err = perr.Error()
	}
	if lost && !ok {
		r.skipped = SkipLeaseLost
	}
	return r
}

// probe sends one GET of sysUpTime.0 with its own gosnmp client (a client
// is not safe for concurrent use). Any response PDU, even an error status,
// proves the OLT answers.
func probe(ctx context.Context, t target, timeout time.Duration, retries int) (answered bool, err error) {
	g := &gosnmp.GoSNMP{
		Target: t.host, Port: uint16(t.port), Community: t.community, Version: gosnmp.Version2c,
		Timeout: timeout, Retries: retries, Context: ctx, MaxOids: 1,
	}
	if err := g.Connect(); err != nil {
		return false, fmt.Errorf("probe %s:%d: connect: %w", t.host, t.port, scrub(err, t.community))
	}
	defer g.Conn.Close()
	if _, err := g.Get([]string{OIDSysUpTime}); err != nil {
		return false, fmt.Errorf("probe %s:%d: no answer to a GET of sysUpTime.0: %w", t.host, t.port, scrub(err, t.community))
	}
	return true, nil
}

// scrub removes the community from an error text (gosnmp never puts it
// there, but an error is logged and published: keep the rule local).
func scrub(err error, community string) error {
	if community == "" || !strings.Contains(err.Error(), community) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), community, "<community>"))
}

// NoAnswer tells whether an execution's error says the OLT did not answer
// (a timeout, nothing received), as opposed to an answer Facho could not
// use (a decoding error, a wrong profile).
func NoAnswer(errText string) bool {
	e := strings.ToLower(errText)
	// Not "node timeout" alone: a job that outran its timeout on an OLT
	// that answers slowly says nothing of whether it answers.
	for _, s := range []string{"did not answer", "no answer", "request timeout", "i/o timeout", "timed out", "no response",
		"connection refused", "no route to host", "network is unreachable", "host is down"} {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}
