package availability

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// holdLease takes the OLT's lease as a poller does for a walk, waiting
// while a probe holds it.
func (e *env) holdLease(t *testing.T, olt string) *lease.Lease {
	t.Helper()
	m, err := lease.Open(e.ctx, e.JS, streams.BucketLeases, "poller-test")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := m.Acquire(e.ctx, olt, lease.Info{ExecutionID: "walk-1", JobID: "walk"})
		if err == nil {
			return l
		}
		if !errors.Is(err, lease.ErrHeld) || time.Now().After(deadline) {
			t.Fatalf("acquire the lease of %s: %v", olt, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// findMetric is the series of name with label=value (false: none).
func findMetric(t *testing.T, reg *prometheus.Registry, name, label, value string) (*dto.Metric, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m, true
				}
			}
		}
	}
	return nil, false
}

// metric is the value of the counter or gauge name with label=value (0:
// no such series yet).
func metric(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	m, ok := findMetric(t, reg, name, label, value)
	if !ok {
		return 0
	}
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}

// waitMetric polls until the metric reaches at least want.
func waitMetric(t *testing.T, reg *prometheus.Registry, name, label, value string, want float64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for metric(t, reg, name, label, value) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s{%s=%q} = %v after %s, want at least %v", name, label, value, metric(t, reg, name, label, value), within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const skippedMetric = "facho_availability_probes_skipped_total"

// A probe never lands in the middle of a walk: while a poller holds the
// OLT's lease and walks it back to back (every request held 10 ms by the
// OLT, so a probe sent without the lease would find one in flight), the
// probes are skipped, the OLT never sees two requests in flight, and its
// state does not move; released, the probes resume.
func TestProbeNeverOverlapsAWalk(t *testing.T) {
	e := newEnv(t, "olt-l")
	e.addOLT(t, "olt-l", testCommunity, true)
	cfg := shortConfig()
	_, reg := e.start(t, cfg)
	e.waitState(t, "olt-l", streams.AvailabilityAvailable, 10*time.Second)
	before := len(e.states(t, "olt-l"))

	sim := e.fleet.OLT("olt-l")
	sim.SetFaults(oltsim.Faults{Latency: 10 * time.Millisecond})
	l := e.holdLease(t, "olt-l")
	sim.ResetRecord()
	skipped := metric(t, reg, skippedMetric, "reason", SkipOLTBusy)
	g := &gosnmp.GoSNMP{Target: sim.Addr().IP.String(), Port: uint16(sim.Addr().Port), Community: testCommunity,
		Version: gosnmp.Version2c, Timeout: 5 * time.Second, Retries: 0, MaxRepetitions: 10}
	if err := g.Connect(); err != nil {
		t.Fatal(err)
	}
	defer g.Conn.Close()
	walks := 0
	deadline := time.Now().Add(60 * time.Second)
	for metric(t, reg, skippedMetric, "reason", SkipOLTBusy) < skipped+5 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d walks in 60 s, %v probes skipped, want 5", walks, metric(t, reg, skippedMetric, "reason", SkipOLTBusy)-skipped)
		}
		if _, err := g.BulkWalkAll(".1.3.6.1.2.1.1"); err != nil {
			t.Fatalf("walk %d: %v", walks, err)
		}
		walks++
	}
	rec := sim.Record()
	if err := l.Release(e.ctx); err != nil {
		t.Fatal(err)
	}
	if rec.MaxConcurrent != 1 {
		t.Fatalf("the OLT saw %d requests in flight at once during the walks (%d requests)", rec.MaxConcurrent, rec.Requests)
	}
	if got := len(e.states(t, "olt-l")); got != before {
		t.Fatalf("states published while the probes were skipped: %v", stateList(e.states(t, "olt-l")))
	}
	t.Logf("%d walks, %d requests, %v probes skipped, at most %d in flight", walks, rec.Requests,
		metric(t, reg, skippedMetric, "reason", SkipOLTBusy)-skipped, rec.MaxConcurrent)

	// Released, the probes resume and find the OLT as it is.
	answered := metric(t, reg, "facho_availability_probes_total", "result", "answered")
	waitMetric(t, reg, "facho_availability_probes_total", "result", "answered", answered+1, 15*time.Second)
	sim.SetFaults(oltsim.Faults{NoAnswer: true})
	e.waitState(t, "olt-l", streams.AvailabilityUnreachable, 15*time.Second)
}

// A skipped probe flips no state, in either direction: an available OLT
// that stopped answering stays available while a walk holds its lease,
// an unreachable one that answers again stays unreachable; each moves at
// the first probe after the release.
func TestSkippedProbeKeepsState(t *testing.T) {
	e := newEnv(t, "olt-s")
	e.addOLT(t, "olt-s", testCommunity, true)
	cfg := shortConfig()
	cfg.UnavailableAfter = time.Hour // only probes move the state here
	_, reg := e.start(t, cfg)
	e.waitState(t, "olt-s", streams.AvailabilityAvailable, 10*time.Second)
	sim := e.fleet.OLT("olt-s")

	for _, step := range []struct {
		name   string
		faults oltsim.Faults
		stays  string
		then   string
	}{
		{"silent while busy", oltsim.Faults{NoAnswer: true}, streams.AvailabilityAvailable, streams.AvailabilityUnreachable},
		{"answers while busy", oltsim.Faults{}, streams.AvailabilityUnreachable, streams.AvailabilityAvailable},
	} {
		l := e.holdLease(t, "olt-s")
		sim.SetFaults(step.faults)
		skipped := metric(t, reg, skippedMetric, "reason", SkipOLTBusy)
		waitMetric(t, reg, skippedMetric, "reason", SkipOLTBusy, skipped+3, 30*time.Second)
		evs := e.states(t, "olt-s")
		if last := evs[len(evs)-1].State; last != step.stays {
			t.Fatalf("%s: %s after skipped probes, want %s (%v)", step.name, last, step.stays, stateList(evs))
		}
		if err := l.Release(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.waitState(t, "olt-s", step.then, 15*time.Second)
	}
	noRepeats(t, e.states(t, "olt-s"))
}

// The lease bucket does not answer (here: it is gone): probes are skipped
// (lease_error), never sent without the lease, and the state stays;
// with the bucket back, probing resumes.
func TestLeaseBucketGoneSkipsProbes(t *testing.T) {
	e := newEnv(t, "olt-k")
	e.addOLT(t, "olt-k", testCommunity, true)
	_, reg := e.start(t, shortConfig())
	e.waitState(t, "olt-k", streams.AvailabilityAvailable, 10*time.Second)
	sim := e.fleet.OLT("olt-k")

	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if err := e.JS.DeleteKeyValue(ctx, streams.BucketLeases); err != nil {
		t.Fatal(err)
	}
	sim.SetFaults(oltsim.Faults{NoAnswer: true})
	sim.ResetRecord()
	waitMetric(t, reg, skippedMetric, "reason", SkipLeaseError, 3, 30*time.Second)
	if evs := e.states(t, "olt-k"); evs[len(evs)-1].State != streams.AvailabilityAvailable {
		t.Fatalf("state moved while the lease bucket was gone: %v", stateList(evs))
	}
	if n := sim.Record().Requests; n != 0 {
		t.Fatalf("%d probes sent without the lease", n)
	}
	if _, err := e.JS.CreateKeyValue(ctx, streams.LeaseBucketConfig(streams.Options{})); err != nil {
		t.Fatal(err)
	}
	e.waitState(t, "olt-k", streams.AvailabilityUnreachable, 15*time.Second)
}
