package planner_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

func publish(t *testing.T, js jetstream.JetStream, subject string, ev streams.Event) {
	t.Helper()
	b, err := streams.Encode("test", time.Now(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), subject, b); err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
}

func newBox(t *testing.T) *secret.Box {
	t.Helper()
	k, _ := secret.NewKey()
	key, _ := secret.ParseKey(k)
	box, err := secret.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// seedConfig publishes a Huawei brand, two OIDs, one OLT, one get job every
// second and its assignment.
func seedConfig(t *testing.T, js jetstream.JetStream, sealed string) {
	publish(t, js, streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"})
	publish(t, js, streams.SubjectOID("hw-serial"), streams.OIDUpserted{ID: "hw-serial", BrandID: "huawei", Name: "serial",
		OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}})
	publish(t, js, streams.SubjectOID("hw-status"), streams.OIDUpserted{ID: "hw-status", BrandID: "huawei", Name: "status",
		OID: "1.3.6.1.4.1.2011.6.128.1.1.2.46.1.15", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}})
	publish(t, js, streams.SubjectOLT("olt-a"), streams.OLTUpserted{ID: "olt-a", Name: "OLT A", IP: "127.0.0.1", Port: 1161,
		BrandID: "huawei", CommunityEnc: sealed, Enabled: true})
	publish(t, js, streams.SubjectJob("get-status"), job(true, 1))
	publish(t, js, streams.SubjectAssignment("get-status", "olt-a"), streams.JobOLTAssigned{JobID: "get-status", OLTID: "olt-a", Enabled: true})
}

func job(enabled bool, interval int) streams.JobUpserted {
	return streams.JobUpserted{ID: "get-status", Name: "GET status", BrandID: "huawei", Kind: streams.KindGet,
		OIDIDs: []string{"hw-serial", "hw-status"}, IntervalSeconds: interval, MaxRetries: 2, RetryDelaySeconds: 120,
		Priority: 40, Enabled: enabled}
}

func startPlanner(t *testing.T, ctx context.Context, js jetstream.JetStream) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	errc := make(chan error, 1)
	go func() {
		defer wg.Done()
		errc <- planner.Run(ctx, planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond},
			planner.Deps{JS: js, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
	}()
	return func() {
		wg.Wait()
		if err := <-errc; err != nil {
			t.Errorf("planner.Run: %v", err)
		}
	}
}

// finisher stands in for the poller: it ends every NodeDue of the stream
// runFor after reading it with an execution.succeeded, and records when
// each execution ended.
type finisher struct {
	mu  sync.Mutex
	end map[string]time.Time
}

func startFinisher(t *testing.T, ctx context.Context, js jetstream.JetStream, runFor time.Duration) *finisher {
	return startFinisherOutcome(t, ctx, js, runFor, false)
}

// startFinisherOutcome is startFinisher whose runs fail when fail is set.
func startFinisherOutcome(t *testing.T, ctx context.Context, js jetstream.JetStream, runFor time.Duration, fail bool) *finisher {
	t.Helper()
	f := &finisher{end: map[string]time.Time{}}
	onNodeDue(t, ctx, js, func(nd streams.NodeDue) {
		time.Sleep(runFor)
		end := time.Now().UTC().Truncate(time.Millisecond)
		var ev streams.Event = streams.ExecutionSucceeded{ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID,
			PollerID: "stub", Attempt: 1, StartedAt: end.Add(-runFor), FinishedAt: end}
		phase := streams.PhaseSucceeded
		if fail {
			ev = streams.ExecutionFailed{ExecutionID: nd.ExecutionID, JobID: nd.JobID, OLTID: nd.OLTID,
				PollerID: "stub", Attempt: nd.Attempt, StartedAt: end.Add(-runFor), FinishedAt: end, Error: "no answer"}
			phase = streams.PhaseFailed
		}
		b, _ := streams.Encode("test", end, ev)
		f.mu.Lock()
		f.end[nd.ExecutionID] = end
		f.mu.Unlock()
		if _, err := js.Publish(ctx, streams.SubjectExec(nd.OLTID, phase), b,
			jetstream.WithMsgID(streams.MsgID(nd.ExecutionID, nd.Attempt, phase))); err != nil && ctx.Err() == nil {
			t.Errorf("publish succeeded: %v", err)
		}
	})
	return f
}

// onNodeDue plays a poller: fn gets every NodeDue the planner dispatches,
// in order, until ctx ends (the test's cleanup waits for it).
func onNodeDue(t *testing.T, ctx context.Context, js jetstream.JetStream, fn func(streams.NodeDue)) {
	t.Helper()
	cons, err := js.OrderedConsumer(ctx, streams.StreamSchedule, jetstream.OrderedConsumerConfig{FilterSubjects: []string{streams.SubjectsNodeDue}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			msg, err := cons.Next(jetstream.FetchMaxWait(200 * time.Millisecond))
			if err != nil {
				continue
			}
			_, nd, err := streams.Decode[streams.NodeDue](msg.Data())
			if err != nil {
				t.Errorf("decode NodeDue: %v", err)
				return
			}
			fn(nd)
		}
	}()
	t.Cleanup(wg.Wait)
}

func (f *finisher) ended(id string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.end[id]
}

// collect reads every message of a subject filter from the start until
// stop returns true or the deadline passes.
func collect(t *testing.T, js jetstream.JetStream, stream, filter string, stop func([]streams.Envelope) bool) []streams.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		t.Fatal(err)
	}
	var out []streams.Envelope
	for !stop(out) {
		msg, err := cons.Next(jetstream.FetchMaxWait(time.Second))
		if err != nil { // no message within the wait: try again until the deadline
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting on %s: got %d events", filter, len(out))
			}
			continue
		}
		env, err := streams.DecodeEnvelope(msg.Data())
		if err != nil {
			t.Fatalf("decode %s: %v", msg.Subject(), err)
		}
		out = append(out, env)
	}
	return out
}

func TestPlannerEmitsNodeDue(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	box := newBox(t)
	sealed, err := box.Seal("s3cr3t-community")
	if err != nil {
		t.Fatal(err)
	}
	// The planner runs first, so the node is added live (TASK_ADDED), not
	// restored by the replay.
	ctx, cancel := context.WithCancel(context.Background())
	wait := startPlanner(t, ctx, env.JS)
	defer func() { cancel(); wait() }()
	fin := startFinisher(t, ctx, env.JS, 300*time.Millisecond)
	collect(t, env.JS, streams.StreamAudit, streams.SubjectAudit("planner"), func(e []streams.Envelope) bool { return len(e) == 1 })
	seedConfig(t, env.JS, sealed)

	dues := collect(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*"), func(e []streams.Envelope) bool { return len(e) >= 2 })
	var first, second streams.NodeDue
	if err := streams.DecodeData(dues[0], &first); err != nil {
		t.Fatal(err)
	}
	if err := streams.DecodeData(dues[1], &second); err != nil {
		t.Fatal(err)
	}
	if first.JobID != "get-status" || first.OLTID != "olt-a" || first.NodeID != "get-status.olt-a" || first.Kind != streams.KindGet {
		t.Errorf("ids: %+v", first)
	}
	if first.Target.Host != "127.0.0.1" || first.Target.Port != 1161 || first.IndexScheme != "pon.onu" || first.BrandID != "huawei" {
		t.Errorf("target: %+v", first)
	}
	if first.Target.CommunityEnc != sealed || strings.Contains(string(dues[0].Data), "s3cr3t") {
		t.Errorf("community not carried sealed: %q", first.Target.CommunityEnc)
	}
	if got, err := box.Open(first.Target.CommunityEnc); err != nil || got != "s3cr3t-community" {
		t.Errorf("sealed community opens to %q, %v", got, err)
	}
	if len(first.OIDs) != 2 || first.OIDs[0].ID != "hw-serial" || first.OIDs[0].Decoder.Kind != "hex_serial" || first.OIDs[1].Field != streams.FieldStatus {
		t.Errorf("oids: %+v", first.OIDs)
	}
	if first.TimeoutSeconds != 60 || first.MaxRetries != 2 || first.RetryDelaySeconds != 120 || first.Priority != 40 || first.IntervalSeconds != 1 {
		t.Errorf("job params: %+v", first)
	}
	if first.ExecutionID == "" || first.ExecutionID == second.ExecutionID {
		t.Errorf("execution ids: %q, %q", first.ExecutionID, second.ExecutionID)
	}
	if first.ExecutionID != planner.ExecutionID(planner.NodeKey{JobID: "get-status", OLTID: "olt-a"}, first.ScheduledAt) {
		t.Error("execution id is not derived from job, OLT and scheduled time")
	}
	// Seed 003: the next run is the end of the last one plus the interval.
	if end := fin.ended(first.ExecutionID); !second.ScheduledAt.Equal(end.Add(time.Second)) {
		t.Errorf("second run scheduled at %s, want the first's end %s + 1s", second.ScheduledAt, end)
	}
	if second.DispatchedAt.Before(second.ScheduledAt) || first.DispatchedAt.IsZero() {
		t.Errorf("dispatched_at %s before scheduled_at %s", second.DispatchedAt, second.ScheduledAt)
	}
	if first.DelaySeconds < 0 {
		t.Errorf("delay %f", first.DelaySeconds)
	}

	// Disabling the job stops the planning and is audited.
	publish(t, env.JS, streams.SubjectJob("get-status"), job(false, 1))
	audits := collect(t, env.JS, streams.StreamAudit, streams.SubjectAudit("planner"), func(e []streams.Envelope) bool {
		for _, a := range e {
			var ev streams.AuditEvent
			if streams.DecodeData(a, &ev) == nil && ev.Kind == streams.AuditTaskRemoved {
				return true
			}
		}
		return false
	})
	kinds := map[string]streams.AuditEvent{}
	for _, a := range audits {
		var ev streams.AuditEvent
		if err := streams.DecodeData(a, &ev); err != nil {
			t.Fatal(err)
		}
		kinds[ev.Kind] = ev
	}
	if ev := kinds[streams.AuditTaskAdded]; ev.OLTID != "olt-a" || ev.Details["job_id"] != "get-status" {
		t.Errorf("TASK_ADDED audit: %+v", ev)
	}
	if ev := kinds[streams.AuditTaskRemoved]; ev.Details["reason"] != "job disabled" {
		t.Errorf("TASK_REMOVED audit: %+v", ev)
	}
	// Nothing is emitted after the removal was audited (give the planner a
	// few ticks to prove it).
	stream, _ := env.JS.Stream(context.Background(), streams.StreamSchedule)
	before, _ := stream.Info(context.Background())
	time.Sleep(1500 * time.Millisecond)
	after, _ := stream.Info(context.Background())
	if after.State.Msgs != before.State.Msgs {
		t.Errorf("NodeDue emitted after the job was disabled: %d -> %d", before.State.Msgs, after.State.Msgs)
	}
}

// Two planners at once (a failover overlap) compute the same scheduled
// times and ids: the stream keeps each run once.
func TestTwoPlannersEmitEachRunOnce(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	seedConfig(t, env.JS, "v1:sealed-placeholder")
	ctx, cancel := context.WithCancel(context.Background())
	waitA := startPlanner(t, ctx, env.JS)
	waitB := startPlanner(t, ctx, env.JS)
	startFinisher(t, ctx, env.JS, 100*time.Millisecond)
	dues := collect(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*"), func(e []streams.Envelope) bool { return len(e) >= 3 })
	cancel()
	waitA()
	waitB()
	seen := map[string]bool{}
	var scheduled []time.Time
	for _, d := range dues {
		var nd streams.NodeDue
		if err := streams.DecodeData(d, &nd); err != nil {
			t.Fatal(err)
		}
		if seen[nd.ExecutionID] {
			t.Errorf("execution %s emitted twice", nd.ExecutionID)
		}
		seen[nd.ExecutionID] = true
		scheduled = append(scheduled, nd.ScheduledAt)
	}
	// Distinct ids alone would also pass if the planners kept two
	// schedules: runs must stay an interval (1s) apart.
	sort.Slice(scheduled, func(i, j int) bool { return scheduled[i].Before(scheduled[j]) })
	for i := 1; i < len(scheduled); i++ {
		if gap := scheduled[i].Sub(scheduled[i-1]); gap < time.Second {
			t.Errorf("runs scheduled %s apart (%s, %s): the interval is 1s", gap, scheduled[i-1], scheduled[i])
		}
	}
}

// waitAudit waits until the planner's audit subject holds an event
// matching want and returns every audit event read.
func waitAudit(t *testing.T, js jetstream.JetStream, want func(streams.AuditEvent) bool) []streams.AuditEvent {
	t.Helper()
	var out []streams.AuditEvent
	collect(t, js, streams.StreamAudit, streams.SubjectAudit("planner"), func(e []streams.Envelope) bool {
		out = out[:0]
		found := false
		for _, a := range e {
			var ev streams.AuditEvent
			if streams.DecodeData(a, &ev) == nil {
				out = append(out, ev)
				found = found || want(ev)
			}
		}
		return found
	})
	return out
}

func TestPlannerReactsToIntervalChangeAndOLTDeletion(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	wait := startPlanner(t, ctx, env.JS)
	defer func() { cancel(); wait() }()
	startFinisher(t, ctx, env.JS, 0)
	waitAudit(t, env.JS, func(ev streams.AuditEvent) bool { return ev.Kind == streams.AuditPlanAdjusted })
	seedConfig(t, env.JS, "v1:sealed-placeholder")
	collect(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*"), func(e []streams.Envelope) bool { return len(e) >= 1 })

	publish(t, env.JS, streams.SubjectJob("get-status"), job(true, 2))
	waitAudit(t, env.JS, func(ev streams.AuditEvent) bool {
		return ev.Kind == streams.AuditPlanAdjusted && ev.OLTID == "olt-a" && ev.Details["interval_seconds"] == float64(2) && ev.Details["old_interval_seconds"] == float64(1)
	})

	publish(t, env.JS, streams.SubjectOLT("olt-a"), streams.OLTDeleted{ID: "olt-a"})
	waitAudit(t, env.JS, func(ev streams.AuditEvent) bool {
		return ev.Kind == streams.AuditTaskRemoved && ev.Details["reason"] == "OLT deleted"
	})
}
