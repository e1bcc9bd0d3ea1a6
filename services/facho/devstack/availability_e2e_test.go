package devstack_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/availability"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

type oltAvailability struct {
	Availability      *string    `json:"availability"`
	AvailabilitySince *time.Time `json:"availability_since"`
	AvailabilityError *string    `json:"availability_error"`
}

func (a oltAvailability) state() string {
	if a.Availability == nil {
		return "null"
	}
	return *a.Availability
}

// TestOLTGoesSilentMidLife, through the whole system (API, planner,
// pollers over SNMP, projector, availability service): an OLT that stops
// answering is unreachable within 60 s of going silent, then unavailable;
// while unavailable nothing is dispatched to it (its due node ends SKIPPED
// "olt unavailable"); when it answers again it is available and polled
// within 15 s. Short availability timings, the same rules.
// startAvailabilityStack runs the whole system with short availability
// timings (recheck 1 s, unavailable after 3 s) and small simulated OLTs.
func startAvailabilityStack(t *testing.T, olts ...string) (context.Context, *devstack.Stack) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var fleet oltsim.FleetConfig
	for i, name := range olts {
		fleet.OLTs = append(fleet.OLTs, oltsim.OLTConfig{Name: name, Listen: "127.0.0.1:0", Community: "e2e-secret-community",
			Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 4}, Seed: int64(i + 1)})
	}
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir: t.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(t), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 1,
		Planner: planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Availability: availability.Config{Recheck: time.Second, ProbeInterval: 2 * time.Second, UnavailableAfter: 3 * time.Second,
			ProbeTimeout: 300 * time.Millisecond},
		Fleet: fleet,
	}, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return ctx, s
}

func TestOLTGoesSilentMidLife(t *testing.T) {
	ctx, s := startAvailabilityStack(t, "olt-a")
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	if _, err := devstack.ConfigureHuawei(ctx, client, s.Fleet.OLTs(), devstack.DemoOptions{Community: "e2e-secret-community", IntervalSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	// A failed run is retried after 1 s: the retry falls in the outage.
	if err := client.Do(ctx, http.MethodPatch, "/api/v1/jobs/huawei-onu-discovery", map[string]any{"retry_delay_seconds": 1}, nil); err != nil {
		t.Fatal(err)
	}
	availabilityIs := func(want string, limit time.Duration) oltAvailability {
		t.Helper()
		var got oltAvailability
		waitFor(t, "olt-a "+want, limit, func() (bool, string) {
			got = oltAvailability{}
			if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/olt-a", nil, &got); err != nil {
				return false, err.Error()
			}
			return got.state() == want, got.state()
		})
		return got
	}
	availabilityIs(streams.AvailabilityAvailable, 30*time.Second)
	waitFor(t, "a first discovery", 30*time.Second, func() (bool, string) {
		return succeededSince(t, s, "olt-a", time.Time{}) > 0, "none"
	})

	silent := time.Now()
	s.Fleet.OLT("olt-a").SetFaults(oltsim.Faults{NoAnswer: true})
	un := availabilityIs(streams.AvailabilityUnreachable, 60*time.Second)
	if un.AvailabilityError == nil || *un.AvailabilityError == "" {
		t.Errorf("unreachable without its error: %+v", un)
	}
	t.Logf("unreachable %s after the OLT went silent", time.Since(silent).Round(time.Millisecond))
	availabilityIs(streams.AvailabilityUnavailable, 30*time.Second)
	unavailableAt := time.Now()

	// Its due node (the retry of the run the silence failed, then the next
	// run) is skipped, not dispatched.
	waitFor(t, "a run skipped as olt unavailable", 40*time.Second, func() (bool, string) {
		var n int
		if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM executions WHERE olt_id = 'olt-a' AND status = 'SKIPPED' AND error = $1`,
			streams.SkipReasonOLTUnavailable).Scan(&n); err != nil {
			return false, err.Error()
		}
		return n > 0, itoa(n) + " skipped"
	})
	back := time.Now()
	if n := startedBetween(t, s, "olt-a", unavailableAt.Add(time.Second), back); n != 0 {
		t.Errorf("%d attempts started on the unavailable OLT", n)
	}

	s.Fleet.OLT("olt-a").SetFaults(oltsim.Faults{})
	availabilityIs(streams.AvailabilityAvailable, 15*time.Second)
	waitFor(t, "polled again", 15*time.Second-time.Since(back), func() (bool, string) {
		return succeededSince(t, s, "olt-a", back) > 0, "no run since it answered"
	})
	t.Logf("polled again %s after the OLT answered", time.Since(back).Round(time.Millisecond))
}

// succeededSince counts the OLT's succeeded executions that started at or
// after since.
func succeededSince(t *testing.T, s *devstack.Stack, olt string, since time.Time) int {
	t.Helper()
	n := 0
	for _, env := range execEvents(t, s, streams.SubjectExec(olt, streams.PhaseSucceeded)) {
		var e streams.ExecutionSucceeded
		if err := streams.DecodeData(env, &e); err != nil {
			t.Fatal(err)
		}
		if !e.StartedAt.Before(since) {
			n++
		}
	}
	return n
}

// startedBetween counts the OLT's attempts that started in [from, to).
func startedBetween(t *testing.T, s *devstack.Stack, olt string, from, to time.Time) int {
	t.Helper()
	n := 0
	for _, env := range execEvents(t, s, streams.SubjectExec(olt, streams.PhaseStarted)) {
		var e streams.ExecutionStarted
		if err := streams.DecodeData(env, &e); err != nil {
			t.Fatal(err)
		}
		if !e.StartedAt.Before(from) && e.StartedAt.Before(to) {
			n++
		}
	}
	return n
}

func execEvents(t *testing.T, s *devstack.Stack, subject string) []streams.Envelope {
	t.Helper()
	return streamEvents(t, s, streams.StreamExec, subject)
}

// streamEvents reads every message of subject in stream.
func streamEvents(t *testing.T, s *devstack.Stack, stream, subject string) []streams.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := s.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []streams.Envelope
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil || m.Subject != subject {
			continue
		}
		env, err := streams.DecodeEnvelope(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// An auto-disabled OLT that answers is enabled again after 3 probes:
// planned and polled again, audited (OLT_ENABLED) and notified
// (olt_enabled) once; an OLT a person disabled after its auto-disable
// stays disabled.
func TestAutoDisabledOLTIsReEnabled(t *testing.T) {
	ctx, s := startAvailabilityStack(t, "olt-a", "olt-b")
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	if _, err := devstack.ConfigureHuawei(ctx, client, s.Fleet.OLTs(), devstack.DemoOptions{Community: "e2e-secret-community", IntervalSeconds: 3600}); err != nil {
		t.Fatal(err)
	}
	for _, olt := range []string{"olt-a", "olt-b"} {
		waitFor(t, "a first discovery of "+olt, 30*time.Second, func() (bool, string) {
			return succeededSince(t, s, olt, time.Time{}) > 0, "none"
		})
	}
	// The planner's auto-disable (3 consecutive failed executions), as it
	// publishes it; then a person disables olt-b.
	for _, olt := range []string{"olt-a", "olt-b"} {
		b, err := streams.EncodeWithID("auto-disable:"+olt, "planner", time.Now(), streams.OLTAutoDisabled{ID: olt,
			Reason: "3 consecutive failed executions", Failures: 3, ExecutionID: "exec-" + olt, DisabledAt: time.Now().UTC()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.JS.Publish(ctx, streams.SubjectOLTDisabled(olt), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Do(ctx, http.MethodPost, "/api/v1/olts/olt-b/disable", nil, nil); err != nil {
		t.Fatal(err)
	}
	disabled := time.Now()

	type oltState struct {
		Enabled bool `json:"enabled"`
	}
	waitFor(t, "olt-a enabled again", 30*time.Second, func() (bool, string) {
		var o oltState
		if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/olt-a", nil, &o); err != nil {
			return false, err.Error()
		}
		return o.Enabled, "disabled"
	})
	// Planned again: a run after the re-enable (the discovery's first run
	// of the new plan).
	waitFor(t, "olt-a polled again", 30*time.Second, func() (bool, string) {
		return succeededSince(t, s, "olt-a", disabled) > 0, "no run since"
	})
	// Audited and notified, once.
	waitFor(t, "OLT_ENABLED logged and notified", 30*time.Second, func() (bool, string) {
		var logged, notified int
		if err := s.DB.QueryRow(ctx, `SELECT (SELECT count(*) FROM coordinator_logs WHERE olt_id = 'olt-a' AND event_type = 'OLT_ENABLED' AND details->>'automatic' = 'true'),
			(SELECT count(*) FROM notifications WHERE kind = $1 AND subject = $2)`, streams.NotifyOLTEnabled, streams.SubjectNotify(streams.NotifyOLTEnabled, "olt-a")).Scan(&logged, &notified); err != nil {
			return false, err.Error()
		}
		return logged == 1 && notified == 1, "logged " + itoa(logged) + ", notified " + itoa(notified)
	})
	// olt-b: a person disabled it; more probe rounds change nothing.
	time.Sleep(4 * time.Second)
	var o oltState
	if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/olt-b", nil, &o); err != nil {
		t.Fatal(err)
	}
	if o.Enabled {
		t.Fatal("an OLT a person disabled was enabled again")
	}
	for _, env := range configEvents(t, s, streams.SubjectOLTDisabled("olt-b")) {
		if env.Type == streams.TypeOLTAutoEnabled {
			t.Fatal("olt.auto_enabled published for an OLT a person disabled")
		}
	}
	if n := len(configEvents(t, s, streams.SubjectOLTDisabled("olt-a"))); n != 2 {
		t.Errorf("olt-a's disable subject holds %d events, want the disable and one re-enable", n)
	}
}

func configEvents(t *testing.T, s *devstack.Stack, subject string) []streams.Envelope {
	t.Helper()
	return streamEvents(t, s, streams.StreamConfig, subject)
}
