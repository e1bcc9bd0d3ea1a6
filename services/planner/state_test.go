package planner

import (
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

func env(t *testing.T, at time.Time, ev streams.Event) streams.Envelope {
	t.Helper()
	b, err := streams.Encode("test", at, ev)
	if err != nil {
		t.Fatal(err)
	}
	e, err := streams.DecodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func baseEvents() []streams.Event {
	return []streams.Event{
		streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"},
		streams.OIDUpserted{ID: "o1", BrandID: "huawei", Name: "serial", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
		streams.OLTUpserted{ID: "olt-a", Name: "A", IP: "10.0.0.1", Port: 161, BrandID: "huawei", CommunityEnc: "v1:x", Enabled: true},
		streams.JobUpserted{ID: "j1", Name: "disc", BrandID: "huawei", Kind: streams.KindDiscovery, OIDIDs: []string{"o1"}, IntervalSeconds: 300, Priority: 90, Enabled: true},
		streams.JobOLTAssigned{JobID: "j1", OLTID: "olt-a", Enabled: true},
	}
}

func TestPlannable(t *testing.T) {
	k := NodeKey{JobID: "j1", OLTID: "olt-a"}
	for _, tc := range []struct {
		name  string
		then  []streams.Event
		want  bool
		check func(t *testing.T, s NodeSpec)
	}{
		{name: "all enabled", want: true, check: func(t *testing.T, s NodeSpec) {
			if s.TimeoutSeconds != 300 || s.IndexScheme != "pon.onu" || s.Target.CommunityEnc != "v1:x" || len(s.OIDs) != 1 {
				t.Errorf("spec %+v", s)
			}
		}},
		{name: "job disabled", then: []streams.Event{streams.JobUpserted{ID: "j1", BrandID: "huawei", OIDIDs: []string{"o1"}, IntervalSeconds: 300}}},
		{name: "job deleted", then: []streams.Event{streams.JobDeleted{ID: "j1"}}},
		{name: "OLT disabled", then: []streams.Event{streams.OLTUpserted{ID: "olt-a", IP: "10.0.0.1", Port: 161, BrandID: "huawei"}}},
		{name: "OLT deleted", then: []streams.Event{streams.OLTDeleted{ID: "olt-a"}}},
		{name: "OLT of another brand", then: []streams.Event{streams.OLTUpserted{ID: "olt-a", IP: "10.0.0.1", Port: 161, BrandID: "zte", Enabled: true}}},
		{name: "assignment disabled", then: []streams.Event{streams.JobOLTAssigned{JobID: "j1", OLTID: "olt-a"}}},
		{name: "unassigned", then: []streams.Event{streams.JobOLTUnassigned{JobID: "j1", OLTID: "olt-a"}}},
		{name: "OID deleted", then: []streams.Event{streams.OIDDeleted{ID: "o1"}}},
		{name: "brand deleted", then: []streams.Event{streams.BrandDeleted{ID: "huawei"}}},
		{name: "OID moved to another brand", then: []streams.Event{streams.OIDUpserted{ID: "o1", BrandID: "zte", OID: "1.3.6", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "string"}}}},
		{name: "OLT re-enabled", want: true, then: []streams.Event{
			streams.OLTUpserted{ID: "olt-a", IP: "10.0.0.1", Port: 161, BrandID: "huawei"},
			streams.OLTUpserted{ID: "olt-a", IP: "10.0.0.2", Port: 1161, BrandID: "huawei", Enabled: true, CommunityEnc: "v1:y"},
		}, check: func(t *testing.T, s NodeSpec) {
			if s.Target.Host != "10.0.0.2" || s.Target.Port != 1161 || s.Target.CommunityEnc != "v1:y" {
				t.Errorf("target %+v", s.Target)
			}
		}},
		{name: "OLT auto-disabled", then: []streams.Event{streams.OLTAutoDisabled{ID: "olt-a", ExecutionID: "e1", Failures: 3}}},
		{name: "OLT auto-disabled, then auto-enabled", want: true, then: []streams.Event{
			streams.OLTAutoDisabled{ID: "olt-a", ExecutionID: "e1", Failures: 3},
			streams.OLTAutoEnabled{ID: "olt-a", DisabledExecutionID: "e1", Probes: 3},
		}},
		{name: "an auto-enable of an earlier auto-disable", then: []streams.Event{
			streams.OLTAutoDisabled{ID: "olt-a", ExecutionID: "e1", Failures: 3},
			streams.OLTAutoEnabled{ID: "olt-a", DisabledExecutionID: "e1", Probes: 3},
			streams.OLTAutoDisabled{ID: "olt-a", ExecutionID: "e2", Failures: 3},
			streams.OLTAutoEnabled{ID: "olt-a", DisabledExecutionID: "e1", Probes: 3},
		}},
		{name: "an auto-enable does not enable an OLT a person disabled", then: []streams.Event{
			streams.OLTAutoDisabled{ID: "olt-a", ExecutionID: "e1", Failures: 3},
			streams.OLTUpserted{ID: "olt-a", IP: "10.0.0.1", Port: 161, BrandID: "huawei"},
			streams.OLTAutoEnabled{ID: "olt-a", DisabledExecutionID: "e1", Probes: 3},
		}},
		{name: "get job default timeout", want: true, then: []streams.Event{
			streams.JobUpserted{ID: "j1", BrandID: "huawei", Kind: streams.KindGet, OIDIDs: []string{"o1"}, IntervalSeconds: 60, Enabled: true},
		}, check: func(t *testing.T, s NodeSpec) {
			if s.TimeoutSeconds != 60 {
				t.Errorf("timeout %d, want 60", s.TimeoutSeconds)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newState(timeouts{discovery: 300, poll: 60})
			at := t0
			for _, ev := range append(baseEvents(), tc.then...) {
				at = at.Add(time.Second)
				if _, err := st.apply(env(t, at, ev)); err != nil {
					t.Fatal(err)
				}
			}
			d, ok := st.desired()[k]
			if ok != tc.want {
				t.Fatalf("plannable = %v, want %v (why: %s)", ok, tc.want, st.why(k))
			}
			if ok && tc.check != nil {
				tc.check(t, d.Spec)
			}
			if !ok && st.why(k) == "" {
				t.Error("no reason given")
			}
		})
	}
}

func TestSinceIsTheEnableTime(t *testing.T) {
	st := newState(timeouts{discovery: 300, poll: 60})
	k := NodeKey{JobID: "j1", OLTID: "olt-a"}
	at := t0
	for _, ev := range baseEvents() {
		at = at.Add(time.Second)
		if _, err := st.apply(env(t, at, ev)); err != nil {
			t.Fatal(err)
		}
	}
	enabledAt := at
	// A later change that keeps the node plannable does not move Since.
	st.apply(env(t, at.Add(time.Minute), streams.OLTUpserted{ID: "olt-a", IP: "10.0.0.9", Port: 161, BrandID: "huawei", Enabled: true}))
	if got := st.desired()[k].Since; !got.Equal(enabledAt) {
		t.Errorf("since = %s, want %s", got, enabledAt)
	}
}

// Silences of alerts share FACHO_CONFIG: the planner reads past them
// without an error, without touching a node or its OID cache.
func TestSilencesAreNotPlannedOn(t *testing.T) {
	st := newState(timeouts{discovery: 300, poll: 60})
	at := t0
	for _, ev := range baseEvents() {
		at = at.Add(time.Second)
		if _, err := st.apply(env(t, at, ev)); err != nil {
			t.Fatal(err)
		}
	}
	before := st.desired()
	st.jobOIDs(st.jobs["j1"]) // fills the cache
	cached := len(st.oidCache)
	st.touched = map[NodeKey]struct{}{}
	for _, ev := range []streams.Event{
		streams.SilenceUpserted{ID: "s1", OLTID: "olt-a", StartsAt: at, EndsAt: at.Add(time.Hour), CreatedBy: "ana", CreatedAt: at},
		streams.SilenceDeleted{ID: "s1"},
	} {
		known, err := st.apply(env(t, at, ev))
		if err != nil || known {
			t.Errorf("apply %s = known %v, %v; want ignored", ev.EventType(), known, err)
		}
	}
	if len(st.touched) != 0 || len(st.desired()) != len(before) || len(st.oidCache) != cached || cached == 0 {
		t.Errorf("a silence changed the plan: touched %v, %d nodes (was %d), oid cache %d (was %d)", st.touched, len(st.desired()), len(before), len(st.oidCache), cached)
	}
}
