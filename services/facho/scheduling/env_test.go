package scheduling_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/services/poller"
	"github.com/facho-olt/facho/streams"
)

const (
	community  = "sched-s3cr3t-community"
	huaweiBase = "1.3.6.1.4.1.2011.6.128.1.1.2"
)

// env is embedded JetStream, a simulated fleet over UDP and the
// configuration of the brand, OIDs and OLTs published as the API would.
type env struct {
	*jstest.Env
	t      testing.TB
	ctx    context.Context
	box    *secret.Box
	sealed string
	fleet  *oltsim.Fleet
	olts   []string
}

func newEnv(t *testing.T, nOLTs int, faults oltsim.Faults) *env {
	return newEnvShape(t, nOLTs, faults, oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 8})
}

func newEnvShape(t *testing.T, nOLTs int, faults oltsim.Faults, shape oltsim.Shape) *env {
	return newEnvTB(t, nOLTs, faults, shape)
}

func newEnvTB(t testing.TB, nOLTs int, faults oltsim.Faults, shape oltsim.Shape) *env {
	return newEnvOpts(t, nOLTs, faults, shape, streams.Options{Storage: jetstream.MemoryStorage})
}

func newEnvOpts(t testing.TB, nOLTs int, faults oltsim.Faults, shape oltsim.Shape, opts streams.Options) *env {
	t.Helper()
	e := &env{Env: jstest.Start(t, opts), t: t}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e.ctx = ctx
	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := secret.ParseKey(key)
	if e.box, err = secret.NewBox(raw); err != nil {
		t.Fatal(err)
	}
	if e.sealed, err = e.box.Seal(community); err != nil {
		t.Fatal(err)
	}
	var fc oltsim.FleetConfig
	for i := range nOLTs {
		name := fmt.Sprintf("olt-%02d", i)
		e.olts = append(e.olts, name)
		fc.OLTs = append(fc.OLTs, oltsim.OLTConfig{Name: name, Listen: "127.0.0.1:0", Community: community, Profile: "huawei-ma5800",
			Seed: int64(i + 1), Faults: faults, Shape: shape})
	}
	if e.fleet, err = oltsim.Start(ctx, fc, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.fleet.Close() })

	for _, o := range []streams.OIDUpserted{
		{ID: "hw-serial", BrandID: "huawei", Name: "serial", OID: huaweiBase + ".43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
		{ID: "hw-status", BrandID: "huawei", Name: "status", OID: huaweiBase + ".46.1.15", Field: streams.FieldStatus,
			Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}},
	} {
		e.publish(streams.SubjectOID(o.ID), o)
	}
	for _, name := range e.olts {
		e.publish(streams.SubjectOLT(name), e.olt(name, true))
	}
	return e
}

// brand publishes the brand: every node whose job and OLT are already
// known becomes plannable at this one event's time, so their first runs
// are due at the same instant.
func (e *env) brand() {
	e.publish(streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"})
}

func (e *env) olt(name string, enabled bool) streams.OLTUpserted {
	addr := e.fleet.OLT(name).Addr()
	return streams.OLTUpserted{ID: name, Name: name, IP: addr.IP.String(), Port: addr.Port, BrandID: "huawei", CommunityEnc: e.sealed, Enabled: enabled}
}

func (e *env) publish(subject string, ev streams.Event) {
	e.t.Helper()
	b, err := streams.Encode("test", time.Now(), ev)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.JS.Publish(e.ctx, subject, b); err != nil {
		e.t.Fatalf("publish %s: %v", subject, err)
	}
}

// job publishes a job and assigns it to every OLT.
func (e *env) job(j streams.JobUpserted) {
	e.publish(streams.SubjectJob(j.ID), j)
	for _, o := range e.olts {
		e.publish(streams.SubjectAssignment(j.ID, o), streams.JobOLTAssigned{JobID: j.ID, OLTID: o, Enabled: true})
	}
}

func (e *env) startPlanner(cfg planner.Config) (stop func()) {
	e.t.Helper()
	return e.goRun("planner", func(ctx context.Context) error {
		return planner.Run(ctx, cfg, planner.Deps{JS: e.JS, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
	})
}

func (e *env) startPoller(id string, reg *prometheus.Registry) (stop func()) {
	return e.startPollerCfg(poller.Config{PollerID: id, Workers: 4, Classes: anyClass(4)}, reg)
}

func (e *env) startPollerCfg(cfg poller.Config, reg *prometheus.Registry) (stop func()) {
	e.t.Helper()
	return e.goRun(cfg.PollerID, func(ctx context.Context) error {
		return poller.Run(ctx, cfg, poller.Deps{JS: e.JS, Log: zerolog.Nop(), Registry: reg, Box: e.box})
	})
}

func (e *env) goRun(name string, run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("%s: %v", name, err)
			}
		})
	}
	e.t.Cleanup(stop)
	return stop
}

// run is one execution as the streams tell it.
type run struct {
	due       streams.NodeDue
	started   []streams.ExecutionStarted
	succeeded *streams.ExecutionSucceeded
	failed    []streams.ExecutionFailed
	skipped   *streams.ExecutionSkipped
	aborted   *streams.ExecutionAborted
	interrupt *streams.ExecutionInterrupted
	// endPublished is the envelope time of the terminal event.
	endPublished time.Time
}

func (r *run) ended() bool {
	return r.succeeded != nil || r.skipped != nil || r.aborted != nil || r.interrupt != nil || r.finalFailure() != nil
}

func (r *run) finalFailure() *streams.ExecutionFailed {
	for i := range r.failed {
		if !r.failed[i].Redelivered {
			return &r.failed[i]
		}
	}
	return nil
}

func (r *run) window() (start, end time.Time) {
	switch {
	case r.succeeded != nil:
		return r.succeeded.StartedAt, r.succeeded.FinishedAt
	case r.finalFailure() != nil:
		f := r.finalFailure()
		return f.StartedAt, f.FinishedAt
	}
	return time.Time{}, time.Time{}
}

// runs reads every NodeDue and execution event so far, by execution id.
func (e *env) runs() map[string]*run {
	e.t.Helper()
	out := map[string]*run{}
	get := func(id string) *run {
		if out[id] == nil {
			out[id] = &run{}
		}
		return out[id]
	}
	for _, env := range e.read(streams.StreamSchedule, streams.SubjectsNodeDue) {
		var nd streams.NodeDue
		if err := streams.DecodeData(env, &nd); err != nil {
			e.t.Fatal(err)
		}
		get(nd.ExecutionID).due = nd
	}
	for _, env := range e.read(streams.StreamExec, streams.SubjectsExec) {
		switch env.Type {
		case streams.TypeExecutionStarted:
			var ev streams.ExecutionStarted
			_ = streams.DecodeData(env, &ev)
			r := get(ev.ExecutionID)
			r.started = append(r.started, ev)
		case streams.TypeExecutionSucceeded:
			var ev streams.ExecutionSucceeded
			_ = streams.DecodeData(env, &ev)
			r := get(ev.ExecutionID)
			r.succeeded, r.endPublished = &ev, env.Time
		case streams.TypeExecutionFailed:
			var ev streams.ExecutionFailed
			_ = streams.DecodeData(env, &ev)
			r := get(ev.ExecutionID)
			r.failed = append(r.failed, ev)
			if !ev.Redelivered {
				r.endPublished = env.Time
			}
		case streams.TypeExecutionSkipped:
			var ev streams.ExecutionSkipped
			_ = streams.DecodeData(env, &ev)
			r := get(ev.ExecutionID)
			r.skipped, r.endPublished = &ev, env.Time
		case streams.TypeExecutionAborted:
			var ev streams.ExecutionAborted
			_ = streams.DecodeData(env, &ev)
			r := get(ev.ExecutionID)
			r.aborted, r.endPublished = &ev, env.Time
		case streams.TypeExecutionInterrupted:
			var ev streams.ExecutionInterrupted
			_ = streams.DecodeData(env, &ev)
			r := get(ev.ExecutionID)
			r.interrupt, r.endPublished = &ev, env.Time
		}
	}
	return out
}

func (e *env) read(stream, filter string) []streams.Envelope {
	e.t.Helper()
	s, err := e.JS.Stream(e.ctx, stream)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := s.Info(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if info.State.Msgs == 0 {
		return nil
	}
	cons, err := e.JS.OrderedConsumer(e.ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []streams.Envelope
	for {
		batch, err := cons.FetchNoWait(500)
		if err != nil {
			e.t.Fatal(err)
		}
		n := 0
		var last uint64
		for msg := range batch.Messages() {
			n++
			meta, _ := msg.Metadata()
			last = meta.Sequence.Stream
			env, err := streams.DecodeEnvelope(msg.Data())
			if err != nil {
				e.t.Fatal(err)
			}
			out = append(out, env)
		}
		if n == 0 || last >= info.State.LastSeq {
			return out
		}
	}
}

// byNode groups runs by node id, each in scheduled order.
func byNode(runs map[string]*run) map[string][]*run {
	out := map[string][]*run{}
	for _, r := range runs {
		if r.due.NodeID != "" {
			out[r.due.NodeID] = append(out[r.due.NodeID], r)
		}
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].due.ScheduledAt.Before(rs[j].due.ScheduledAt) })
	}
	return out
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			total += metricValue(m)
		}
	}
	return total
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return 0
}

func percentile(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// audits reads the planner's audit events so far.
func (e *env) audits() []streams.AuditEvent {
	e.t.Helper()
	var out []streams.AuditEvent
	for _, env := range e.read(streams.StreamAudit, streams.SubjectsAudit) {
		var ev streams.AuditEvent
		if streams.DecodeData(env, &ev) == nil {
			out = append(out, ev)
		}
	}
	return out
}

// leaseHeld says whether an OLT's lease key holds a value.
func (e *env) leaseHeld(olt string) bool {
	e.t.Helper()
	kv, err := e.JS.KeyValue(e.ctx, streams.BucketLeases)
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = kv.Get(e.ctx, lease.Key(olt))
	return err == nil
}

// anyClass lets a poller process run up to n nodes of any queue class at
// once (with Workers n, n in all): these tests are about scheduling, not
// the class limits (services/poller's TestClassesFloodOfSlowDiscoveries).
func anyClass(n int) poller.ClassLimits {
	l := poller.ClassLimit{Concurrency: n}
	return poller.ClassLimits{Discovery: l, Polling: l, Retry: l, High: l}
}
