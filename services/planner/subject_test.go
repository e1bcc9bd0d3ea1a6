package planner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// Config events on a subject not their own, and a brand without an index
// scheme, are skipped (counted and logged), not applied: the NodeDue keeps
// the brand's scheme and the OLT's address.
func TestConfigEventsOffTheirSubjectAreSkipped(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	box := newBox(t)
	sealed, err := box.Seal("s3cr3t-community")
	if err != nil {
		t.Fatal(err)
	}
	seedConfig(t, env.JS, sealed)
	// A forged brand on the OLT's subject, a brand on another brand's
	// subject, an OLT on another OLT's subject, a brand without scheme.
	publish(t, env.JS, streams.SubjectOLT("olt-a"), streams.BrandUpserted{ID: "huawei", Name: "", IndexScheme: streams.IndexSchemeFiberhome})
	publish(t, env.JS, streams.SubjectBrand("zte"), streams.BrandUpserted{ID: "huawei", Name: "x", IndexScheme: streams.IndexSchemeFiberhome})
	publish(t, env.JS, streams.SubjectOLT("olt-b"), streams.OLTUpserted{ID: "olt-a", Name: "moved", IP: "192.0.2.99", Port: 161, BrandID: "huawei", CommunityEnc: sealed, Enabled: true})
	publish(t, env.JS, streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "blank"})

	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := planner.Run(ctx, planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond},
			planner.Deps{JS: env.JS, Log: zerolog.Nop(), Registry: reg}); err != nil {
			t.Errorf("planner.Run: %v", err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	dues := collect(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*"), func(e []streams.Envelope) bool { return len(e) >= 1 })
	var n streams.NodeDue
	if err := streams.DecodeData(dues[0], &n); err != nil {
		t.Fatal(err)
	}
	if n.IndexScheme != streams.IndexSchemePonONU || n.Target.Host != "127.0.0.1" {
		t.Fatalf("node due applied a forged event: scheme %q host %q", n.IndexScheme, n.Target.Host)
	}
	results := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "facho_planner_config_events_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					results[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	if results["wrong_subject"] != 3 || results["malformed"] != 1 || results["applied"] != 6 {
		t.Errorf("config events by result: %v, want 3 wrong_subject, 1 malformed, 6 applied", results)
	}
}
