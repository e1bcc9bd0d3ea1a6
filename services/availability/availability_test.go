package availability

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

const testCommunity = "s3cr3t-community"

type env struct {
	*jstest.Env
	box   *secret.Box
	fleet *oltsim.Fleet
	ctx   context.Context
}

func newEnv(t *testing.T, olts ...string) *env {
	t.Helper()
	js := jstest.Start(t, streams.Options{}, jstest.WithAuth())
	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := secret.ParseKey(key)
	box, err := secret.NewBox(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var cfgs []oltsim.OLTConfig
	for _, name := range olts {
		cfgs = append(cfgs, oltsim.OLTConfig{Name: name, Listen: "127.0.0.1:0", Community: testCommunity, Profile: "huawei-ma5800", Seed: 1,
			Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 2}})
	}
	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: cfgs}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })
	return &env{Env: js, box: box, fleet: fleet, ctx: ctx}
}

// shortConfig: the same rules at a test's scale.
func shortConfig() Config {
	return Config{Recheck: 300 * time.Millisecond, ProbeInterval: time.Second, UnavailableAfter: 2 * time.Second,
		ProbeTimeout: 200 * time.Millisecond, ProbeRetries: 0, Tick: 50 * time.Millisecond, RecoverProbes: 3}
}

// start runs the service as its own NATS identity until stop.
func (e *env) start(t *testing.T, cfg Config) (stop func(), reg *prometheus.Registry) {
	t.Helper()
	_, js := e.Connect(t, natsauth.Availability)
	ctx, cancel := context.WithCancel(e.ctx)
	reg = prometheus.NewRegistry()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, Deps{JS: js, Box: e.box, Log: zerolog.Nop(), Registry: reg}) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("the service did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop, reg
}

func (e *env) publish(t *testing.T, subject, id string, ev streams.Event) {
	t.Helper()
	b, err := streams.EncodeWithID(id, "test", time.Now(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.JS.Publish(e.ctx, subject, b, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
}

// addOLT configures the simulated OLT name (with community).
func (e *env) addOLT(t *testing.T, name, community string, enabled bool) {
	t.Helper()
	sealed, err := e.box.Seal(community)
	if err != nil {
		t.Fatal(err)
	}
	a := e.fleet.OLT(name).Addr()
	e.publish(t, streams.SubjectOLT(name), name+time.Now().String(), streams.OLTUpserted{ID: name, Name: name, IP: a.IP.String(), Port: a.Port,
		BrandID: "huawei", CommunityEnc: sealed, Enabled: enabled})
}

// events reads every message of subject so far.
func (e *env) events(t *testing.T, subject string) []streams.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	stream, err := e.JS.StreamNameBySubject(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := e.JS.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	var out []streams.Envelope
	for {
		batch, err := cons.FetchNoWait(100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			env, err := streams.DecodeEnvelope(m.Data())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, env)
		}
		if n == 0 {
			return out
		}
	}
}

func (e *env) states(t *testing.T, olt string) []streams.OLTAvailability {
	t.Helper()
	var out []streams.OLTAvailability
	for _, env := range e.events(t, streams.SubjectOLTAvailability(olt)) {
		var ev streams.OLTAvailability
		if err := streams.DecodeData(env, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// waitState waits until the OLT's last published state is want.
func (e *env) waitState(t *testing.T, olt, want string, within time.Duration) streams.OLTAvailability {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if s := e.states(t, olt); len(s) > 0 && s[len(s)-1].State == want {
			return s[len(s)-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("OLT %s not %s within %s: %+v", olt, want, within, e.states(t, olt))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func stateList(evs []streams.OLTAvailability) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.State)
	}
	return out
}

// noRepeats: a state is never published twice in a row, and each event's
// previous is the state before it.
func noRepeats(t *testing.T, evs []streams.OLTAvailability) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if evs[i].State == evs[i-1].State || evs[i].Previous != evs[i-1].State {
			t.Fatalf("event %d repeats or misnames its previous: %v", i, stateList(evs))
		}
	}
}

// An OLT that goes silent mid-life: unreachable at its first unanswered
// probe, unavailable after the delay, available at its first answer.
func TestSilentOLT(t *testing.T) {
	e := newEnv(t, "olt-a")
	e.addOLT(t, "olt-a", testCommunity, true)
	_, reg := e.start(t, shortConfig())
	e.waitState(t, "olt-a", streams.AvailabilityAvailable, 10*time.Second)

	silent := time.Now()
	e.fleet.OLT("olt-a").SetFaults(oltsim.Faults{NoAnswer: true})
	un := e.waitState(t, "olt-a", streams.AvailabilityUnreachable, 5*time.Second)
	if un.Source != streams.AvailabilitySourceProbe || un.LastError == "" || un.Since.Before(silent.Add(-2*time.Second)) {
		t.Fatalf("unreachable event %+v", un)
	}
	ua := e.waitState(t, "olt-a", streams.AvailabilityUnavailable, 10*time.Second)
	if !ua.Since.Equal(un.Since) || ua.FailedChecks < 2 {
		t.Fatalf("unavailable %+v after unreachable %+v", ua, un)
	}
	e.fleet.OLT("olt-a").SetFaults(oltsim.Faults{})
	back := time.Now()
	av := e.waitState(t, "olt-a", streams.AvailabilityAvailable, 5*time.Second)
	if av.LastError != "" || av.Since.Before(back.Add(-time.Second)) {
		t.Fatalf("available %+v", av)
	}
	evs := e.states(t, "olt-a")
	noRepeats(t, evs)
	if got := stateList(evs); len(got) != 4 {
		t.Fatalf("states %v", got)
	}
	// Each change is audited.
	kinds := map[string]int{}
	for _, env := range e.events(t, streams.SubjectAudit(streams.AuditCategoryAvailability)) {
		var a streams.AuditEvent
		if err := streams.DecodeData(env, &a); err != nil {
			t.Fatal(err)
		}
		kinds[a.Kind]++
	}
	if kinds[streams.AuditOLTAvailable] != 2 || kinds[streams.AuditOLTUnreachable] != 1 || kinds[streams.AuditOLTUnavailable] != 1 {
		t.Fatalf("audit kinds %v", kinds)
	}
	if v := gauge(t, reg, "facho_olt_available", "olt-a"); v != 1 {
		t.Fatalf("facho_olt_available %v", v)
	}
}

// A wrong community from the start: flagged, never available.
func TestWrongCommunity(t *testing.T) {
	e := newEnv(t, "olt-w")
	e.addOLT(t, "olt-w", "not-the-community", true)
	e.start(t, shortConfig())
	e.waitState(t, "olt-w", streams.AvailabilityUnavailable, 10*time.Second)
	time.Sleep(2 * time.Second) // more rechecks, all unanswered
	if got := stateList(e.states(t, "olt-w")); len(got) != 2 || got[0] != streams.AvailabilityUnreachable {
		t.Fatalf("states %v", got)
	}
}

// An execution attempt the OLT did not answer makes it unreachable at
// once, before any probe; the next probe that answers makes it available.
func TestExecutionOutcome(t *testing.T) {
	e := newEnv(t, "olt-x")
	e.addOLT(t, "olt-x", testCommunity, true)
	cfg := shortConfig()
	cfg.Recheck, cfg.ProbeInterval = 2*time.Second, time.Hour
	e.start(t, cfg)
	e.waitState(t, "olt-x", streams.AvailabilityAvailable, 10*time.Second)
	now := time.Now().UTC()
	e.publish(t, streams.SubjectExec("olt-x", streams.PhaseFailed), "x1:1:failed", streams.ExecutionFailed{ExecutionID: "x1", JobID: "j", OLTID: "olt-x",
		Attempt: 1, StartedAt: now.Add(-time.Second), FinishedAt: now, Error: "olt olt-x did not answer (timeout): request timeout (after 1 retries)", Redelivered: true})
	un := e.waitState(t, "olt-x", streams.AvailabilityUnreachable, time.Second)
	if un.Source != streams.AvailabilitySourceExecution || un.ExecutionID != "x1" {
		t.Fatalf("unreachable %+v", un)
	}
	e.waitState(t, "olt-x", streams.AvailabilityAvailable, 5*time.Second)
}

// An auto-disabled OLT that answers again is re-enabled after N probes,
// once; an OLT a person disabled is never re-enabled.
func TestRecovery(t *testing.T) {
	e := newEnv(t, "olt-auto", "olt-person")
	e.addOLT(t, "olt-auto", testCommunity, true)
	e.addOLT(t, "olt-person", testCommunity, true)
	disable := func(olt string) {
		e.publish(t, streams.SubjectOLTDisabled(olt), "dis-"+olt, streams.OLTAutoDisabled{ID: olt, Reason: "3 consecutive failed executions",
			Failures: 3, ExecutionID: "exec-" + olt, DisabledAt: time.Now().UTC()})
	}
	disable("olt-auto")
	disable("olt-person")
	e.addOLT(t, "olt-person", testCommunity, false) // a person disabled it after the auto-disable
	e.start(t, shortConfig())
	deadline := time.Now().Add(10 * time.Second)
	var enabled []streams.OLTAutoEnabled
	for len(enabled) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		enabled = autoEnabled(t, e, "olt-auto")
	}
	if len(enabled) != 1 || enabled[0].Probes < 3 || enabled[0].DisabledExecutionID != "exec-olt-auto" {
		t.Fatalf("auto-enabled %+v", enabled)
	}
	time.Sleep(2 * time.Second)
	if got := autoEnabled(t, e, "olt-auto"); len(got) != 1 {
		t.Fatalf("re-enabled %d times", len(got))
	}
	if got := autoEnabled(t, e, "olt-person"); len(got) != 0 {
		t.Fatalf("an OLT a person disabled was re-enabled: %+v", got)
	}
	audited := 0
	for _, env := range e.events(t, streams.SubjectAudit(streams.AuditCategoryAvailability)) {
		var a streams.AuditEvent
		if err := streams.DecodeData(env, &a); err != nil {
			t.Fatal(err)
		}
		if a.Kind == streams.AuditOLTEnabled {
			audited++
			if a.OLTID != "olt-auto" || a.Details["automatic"] != true {
				t.Fatalf("audit %+v", a)
			}
		}
	}
	if audited != 1 {
		t.Fatalf("%d OLT_ENABLED audits", audited)
	}
}

func autoEnabled(t *testing.T, e *env, olt string) []streams.OLTAutoEnabled {
	var out []streams.OLTAutoEnabled
	for _, env := range e.events(t, streams.SubjectOLTDisabled(olt)) {
		if env.Type != streams.TypeOLTAutoEnabled {
			continue
		}
		var ev streams.OLTAutoEnabled
		if err := streams.DecodeData(env, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// A restarted service (or the next leader) resumes from the published
// states: nothing is published twice.
func TestRestartPublishesNothingTwice(t *testing.T) {
	e := newEnv(t, "olt-r1", "olt-r2")
	e.addOLT(t, "olt-r1", testCommunity, true)
	e.addOLT(t, "olt-r2", "wrong", true)
	stop, _ := e.start(t, shortConfig())
	e.waitState(t, "olt-r1", streams.AvailabilityAvailable, 10*time.Second)
	e.waitState(t, "olt-r2", streams.AvailabilityUnavailable, 10*time.Second)
	stop()
	before1, before2 := len(e.states(t, "olt-r1")), len(e.states(t, "olt-r2"))
	e.start(t, shortConfig())
	time.Sleep(3 * time.Second) // several probe rounds
	if a, b := e.states(t, "olt-r1"), e.states(t, "olt-r2"); len(a) != before1 || len(b) != before2 {
		t.Fatalf("after a restart: %v (was %d), %v (was %d)", stateList(a), before1, stateList(b), before2)
	}
	// A second replica stands by: still nothing new, and the OLT keeps its state.
	e.start(t, shortConfig())
	time.Sleep(time.Second)
	if a := e.states(t, "olt-r1"); len(a) != before1 {
		t.Fatalf("with two replicas: %v", stateList(a))
	}
}

// The default timings keep the promise: an OLT that never answers is
// unavailable within 60 s of its first unanswered request.
func TestDefaultScaleNeverAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 50 s")
	}
	e := newEnv(t, "olt-d")
	e.addOLT(t, "olt-d", "typo", true)
	added := time.Now()
	e.start(t, Config{})
	un := e.waitState(t, "olt-d", streams.AvailabilityUnreachable, 10*time.Second)
	ua := e.waitState(t, "olt-d", streams.AvailabilityUnavailable, 60*time.Second)
	if d := ua.ObservedAt.Sub(un.Since); d > 60*time.Second {
		t.Fatalf("unavailable %s after the first unanswered request", d)
	}
	t.Logf("unreachable %s after the OLT was added, unavailable %s after its first unanswered request",
		un.ObservedAt.Sub(added).Round(time.Millisecond), ua.ObservedAt.Sub(un.Since).Round(time.Millisecond))
}

func gauge(t *testing.T, reg *prometheus.Registry, name, olt string) float64 {
	t.Helper()
	m, ok := findMetric(t, reg, name, "olt_id", olt)
	if !ok {
		t.Fatalf("no %s{olt_id=%q}", name, olt)
	}
	return m.GetGauge().GetValue()
}
