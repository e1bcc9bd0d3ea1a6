package planner_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/streams"
)

// A planner restarted after an OLT was disabled by configuration (the
// last event of the configuration stream) replays it as the past it is:
// it does not audit the disable again (the auditor would notify it
// again), even past the audit stream's duplicate window.
func TestRestartDoesNotReauditTheLastConfigEvent(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx := context.Background()
	// A short duplicate window, so a second copy would be stored.
	audit, err := env.JS.Stream(ctx, streams.StreamAudit)
	if err != nil {
		t.Fatal(err)
	}
	cfg := audit.CachedInfo().Config
	cfg.Duplicates = 100 * time.Millisecond
	if _, err := env.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	seedConfig(t, env.JS, "v1:sealed-placeholder")
	count := func(evs []streams.AuditEvent, kind string) int {
		n := 0
		for _, ev := range evs {
			if ev.Kind == kind {
				n++
			}
		}
		return n
	}

	run1, stop1 := context.WithCancel(ctx)
	wait1 := startPlanner(t, run1, env.JS)
	waitAudit(t, env.JS, func(ev streams.AuditEvent) bool { return ev.Kind == streams.AuditTakeover })
	publish(t, env.JS, streams.SubjectOLT("olt-a"), streams.OLTUpserted{ID: "olt-a", Name: "OLT A", IP: "127.0.0.1", Port: 1161,
		BrandID: "huawei", CommunityEnc: "v1:sealed-placeholder", Enabled: false})
	waitAudit(t, env.JS, func(ev streams.AuditEvent) bool { return ev.Kind == streams.AuditOLTDisabled })
	stop1()
	wait1()
	time.Sleep(300 * time.Millisecond) // past the duplicate window

	run2, stop2 := context.WithCancel(ctx)
	wait2 := startPlanner(t, run2, env.JS)
	defer func() { stop2(); wait2() }()
	// The second term's takeover is audited once the replay is in: any
	// re-audit of the replayed disable comes before it.
	evs := collectAudits(t, env.JS, func(evs []streams.AuditEvent) bool { return count(evs, streams.AuditTakeover) >= 2 })
	if n := count(evs, streams.AuditOLTDisabled); n != 1 {
		t.Errorf("%d OLT_DISABLED audit events after a restart, want 1", n)
	}
}

// collectAudits reads the planner's audit events until stop says so.
func collectAudits(t *testing.T, js jetstream.JetStream, stop func([]streams.AuditEvent) bool) []streams.AuditEvent {
	t.Helper()
	var out []streams.AuditEvent
	collect(t, js, streams.StreamAudit, streams.SubjectAudit("planner"), func(e []streams.Envelope) bool {
		out = out[:0]
		for _, a := range e {
			var ev streams.AuditEvent
			if streams.DecodeData(a, &ev) == nil {
				out = append(out, ev)
			}
		}
		return stop(out)
	})
	return out
}
