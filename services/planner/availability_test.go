package planner_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/streams"
)

// Nothing is dispatched to an unavailable OLT: its due node ends as
// execution.skipped "olt unavailable" (no NodeDue, no retry); when the OLT
// is available again the node is dispatched at once, not an interval
// after the skip.
func TestUnavailableOLTIsSkippedAndResumes(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	_, pjs := env.Connect(t, natsauth.Planner) // the planner's own permissions
	box := newBox(t)
	sealed, err := box.Seal("s3cr3t-community")
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().UTC().Add(-time.Minute)
	publish(t, env.JS, streams.SubjectOLTAvailability("olt-a"), streams.OLTAvailability{OLTID: "olt-a", State: streams.AvailabilityUnavailable,
		Previous: streams.AvailabilityUnreachable, Since: since, LastError: "request timeout", Source: streams.AvailabilitySourceProbe, ObservedAt: time.Now().UTC()})

	ctx, cancel := context.WithCancel(context.Background())
	wait := startPlanner(t, ctx, pjs)
	defer func() { cancel(); wait() }()
	startFinisher(t, ctx, env.JS, 10*time.Millisecond)
	seedConfig(t, env.JS, sealed)
	const interval = 30
	publish(t, env.JS, streams.SubjectJob("get-status"), job(true, interval))

	skips := collect(t, env.JS, streams.StreamExec, streams.SubjectExec("olt-a", streams.PhaseSkipped), func(e []streams.Envelope) bool { return len(e) >= 1 })
	var sk streams.ExecutionSkipped
	if err := streams.DecodeData(skips[0], &sk); err != nil {
		t.Fatal(err)
	}
	if sk.Reason != streams.SkipReasonOLTUnavailable || sk.OLTID != "olt-a" || sk.JobID != "get-status" || sk.Attempt != 1 {
		t.Fatalf("skip %+v", sk)
	}
	time.Sleep(500 * time.Millisecond)
	if n := count(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*")); n != 0 {
		t.Fatalf("%d NodeDue dispatched to an unavailable OLT", n)
	}

	back := time.Now()
	publish(t, env.JS, streams.SubjectOLTAvailability("olt-a"), streams.OLTAvailability{OLTID: "olt-a", State: streams.AvailabilityAvailable,
		Previous: streams.AvailabilityUnavailable, Since: back.UTC(), Source: streams.AvailabilitySourceProbe, ObservedAt: back.UTC()})
	dues := collect(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*"), func(e []streams.Envelope) bool { return len(e) >= 1 })
	var nd streams.NodeDue
	if err := streams.DecodeData(dues[0], &nd); err != nil {
		t.Fatal(err)
	}
	// At once: well before the interval after the skip.
	if waited := nd.DispatchedAt.Sub(back); waited > interval*time.Second/3 {
		t.Fatalf("dispatched %s after the OLT answered again (interval %ds)", waited, interval)
	}
	if nd.Attempt != 1 || nd.Class != streams.ClassPolling {
		t.Fatalf("resumed NodeDue attempt %d class %s: a skip spends no retry", nd.Attempt, nd.Class)
	}
	if n := count(t, env.JS, streams.StreamExec, streams.SubjectExec("olt-a", streams.PhaseSkipped)); n != 1 {
		t.Fatalf("%d skips", n)
	}
}

// count is how many messages of filter the stream holds now.
func count(t *testing.T, js jetstream.JetStream, stream, filter string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range info.State.Subjects {
		n += int(c)
	}
	return n
}

// A planner (re)started over a configuration and an OLT already
// unavailable knows it before its first dispatch: the due node is
// skipped, never dispatched once first.
func TestRestartedPlannerKnowsUnavailableOLTBeforeDispatching(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	_, pjs := env.Connect(t, natsauth.Planner)
	box := newBox(t)
	sealed, err := box.Seal("s3cr3t-community")
	if err != nil {
		t.Fatal(err)
	}
	seedConfig(t, env.JS, sealed)
	publish(t, env.JS, streams.SubjectJob("get-status"), job(true, 30))
	// Many OLTs' availability ahead of olt-a's, as a fleet's stream holds.
	for i := range 500 {
		olt := "olt-other-" + strconv.Itoa(i)
		publish(t, env.JS, streams.SubjectOLTAvailability(olt), streams.OLTAvailability{OLTID: olt, State: streams.AvailabilityAvailable,
			Since: time.Now().UTC(), Source: streams.AvailabilitySourceProbe, ObservedAt: time.Now().UTC()})
	}
	publish(t, env.JS, streams.SubjectOLTAvailability("olt-a"), streams.OLTAvailability{OLTID: "olt-a", State: streams.AvailabilityUnavailable,
		Previous: streams.AvailabilityUnreachable, Since: time.Now().UTC(), LastError: "request timeout", Source: streams.AvailabilitySourceProbe, ObservedAt: time.Now().UTC()})

	ctx, cancel := context.WithCancel(context.Background())
	wait := startPlanner(t, ctx, pjs)
	defer func() { cancel(); wait() }()
	startFinisher(t, ctx, env.JS, 10*time.Millisecond)
	collect(t, env.JS, streams.StreamExec, streams.SubjectExec("olt-a", streams.PhaseSkipped), func(e []streams.Envelope) bool { return len(e) >= 1 })
	if n := count(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*")); n != 0 {
		t.Fatalf("%d NodeDue dispatched to an OLT unavailable before the planner started", n)
	}
}
