package alerter

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

var t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func testLimits() Limits {
	return Limits{MaxONUs: 10000, MaxPONs: 1000, MaxOLTs: 100, MaxActive: 10000, MaxSilences: 100}
}

func f(v float64) *float64 { return &v }

// onuEv is an onu.changed of ONU onu on PON pon of olt-1.
func onuEv(pon, onu int64, status string, rx *float64, at time.Time) streams.ONUChanged {
	return streams.ONUChanged{OLTID: "olt-1", PonIndex: pon, ONUID: onu, Change: streams.ONUStatusChanged,
		Current: streams.ONUState{Serial: "SN" + string(rune('A'+onu%26)), Status: status, RxPowerDBm: rx}, ExecutionID: "e", ObservedAt: at}
}

// count tallies transitions by rule/state/notify.
func count(out []Transition) map[string]int {
	m := map[string]int{}
	for _, t := range out {
		k := t.Alert.Rule + "/" + t.Alert.State
		if t.Update {
			k = t.Alert.Rule + "/updated"
		}
		if t.Notify {
			k += "/notify"
		}
		m[k]++
	}
	return m
}

// run takes every transition after fn.
func run(e *Engine, fn func()) map[string]int {
	fn()
	_, out := e.Take()
	return count(out)
}

func seedPON(e *Engine, pon int64, n int, at time.Time) {
	for i := int64(1); i <= int64(n); i++ {
		e.OnONU(onuEv(pon, i, "ONLINE", f(-20), at))
	}
	e.Take()
}

func TestEngineRules(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(e *Engine) map[string]int
		want map[string]int
	}{
		{"single ONU offline: one alert after its hold, resolved when back", func(e *Engine) map[string]int {
			seedPON(e, 1, 16, t0)
			got := run(e, func() { e.OnONU(onuEv(1, 3, "LOS", nil, t0.Add(time.Minute))) })
			if len(got) != 0 {
				t.Errorf("fired before the hold: %v", got)
			}
			return run(e, func() {
				e.Tick(t0.Add(time.Minute + 20*time.Second))
				e.Tick(t0.Add(time.Minute + 30*time.Second))
				e.OnONU(onuEv(1, 3, "ONLINE", f(-20), t0.Add(5*time.Minute)))
			})
		}, map[string]int{"onu_down/firing/notify": 1, "onu_down/resolved/notify": 1}},
		{"ONU back within the hold: nothing", func(e *Engine) map[string]int {
			seedPON(e, 1, 16, t0)
			return run(e, func() {
				e.OnONU(onuEv(1, 3, "OFFLINE", nil, t0.Add(time.Minute)))
				e.OnONU(onuEv(1, 3, "ONLINE", f(-20), t0.Add(time.Minute+5*time.Second)))
				e.Tick(t0.Add(time.Hour))
			})
		}, map[string]int{}},
		{"fiber cut of 16 ONUs: one PON incident notified, the ONUs inhibited", func(e *Engine) map[string]int {
			seedPON(e, 1, 16, t0)
			seedPON(e, 2, 16, t0)
			got := run(e, func() {
				for i := int64(1); i <= 16; i++ {
					e.OnONU(onuEv(1, i, "LOS", nil, t0.Add(time.Minute)))
				}
				e.Tick(t0.Add(time.Hour))
				for i := int64(1); i <= 16; i++ {
					e.OnONU(onuEv(1, i, "ONLINE", f(-20), t0.Add(2*time.Hour)))
				}
			})
			return got
		}, map[string]int{"pon_outage/firing/notify": 1, "pon_outage/resolved/notify": 1, "onu_down/firing": 16, "onu_down/resolved": 16}},
		{"3 ONUs of 16 down: no incident, three alerts", func(e *Engine) map[string]int {
			seedPON(e, 1, 16, t0)
			return run(e, func() {
				for i := int64(1); i <= 3; i++ {
					e.OnONU(onuEv(1, i, "LOS", nil, t0.Add(time.Minute)))
				}
				e.Tick(t0.Add(time.Hour))
			})
		}, map[string]int{"onu_down/firing/notify": 3}},
		{"2 of a 3-ONU PON down: 50 % is an outage", func(e *Engine) map[string]int {
			seedPON(e, 1, 3, t0)
			return run(e, func() {
				e.OnONU(onuEv(1, 1, "LOS", nil, t0.Add(time.Minute)))
				e.OnONU(onuEv(1, 2, "LOS", nil, t0.Add(time.Minute)))
			})
		}, map[string]int{"pon_outage/firing/notify": 1, "onu_down/firing": 2}},
		{"downs spread beyond the window: no incident", func(e *Engine) map[string]int {
			seedPON(e, 1, 16, t0)
			return run(e, func() {
				for i := int64(1); i <= 4; i++ {
					at := t0.Add(time.Duration(i) * time.Hour)
					e.OnONU(onuEv(1, i, "LOS", nil, at))
					e.Tick(at.Add(time.Minute))
				}
			})
		}, map[string]int{"onu_down/firing/notify": 4}},
		{"most PONs of an OLT cut: one OLT incident", func(e *Engine) map[string]int {
			for p := int64(1); p <= 4; p++ {
				seedPON(e, p, 8, t0)
			}
			return run(e, func() {
				for p := int64(1); p <= 3; p++ {
					for i := int64(1); i <= 8; i++ {
						e.OnONU(onuEv(p, i, "LOS", nil, t0.Add(time.Minute)))
					}
				}
			})
		}, map[string]int{"olt_outage/firing/notify": 1, "pon_outage/firing/notify": 2, "pon_outage/firing": 1, "onu_down/firing": 24}},
		{"ONU at -31.5 dBm: one alert; hysteresis holds it at -26.5, -25.9 resolves", func(e *Engine) map[string]int {
			seedPON(e, 1, 4, t0)
			return run(e, func() {
				e.OnONU(onuEv(1, 2, "ONLINE", f(-31.5), t0.Add(time.Minute)))
				e.OnONU(onuEv(1, 2, "ONLINE", f(-31.4), t0.Add(2*time.Minute)))
				e.OnONU(onuEv(1, 2, "ONLINE", f(-26.5), t0.Add(3*time.Minute)))
				e.OnONU(onuEv(1, 2, "ONLINE", f(-27.2), t0.Add(4*time.Minute)))
				e.OnONU(onuEv(1, 2, "ONLINE", f(-25.9), t0.Add(5*time.Minute)))
			})
		}, map[string]int{"onu_rx_low/firing/notify": 1, "onu_rx_low/resolved/notify": 1}},
		{"Rx above -8 dBm", func(e *Engine) map[string]int {
			seedPON(e, 1, 4, t0)
			return run(e, func() { e.OnONU(onuEv(1, 2, "ONLINE", f(-6), t0.Add(time.Minute))) })
		}, map[string]int{"onu_rx_high/firing/notify": 1}},
		{"drift of -4 dB against a 7-day baseline: one warning", func(e *Engine) map[string]int {
			for d := 7; d >= 1; d-- {
				e.OnONU(onuEv(1, 5, "ONLINE", f(-19.5), t0.Add(-time.Duration(d)*24*time.Hour)))
				e.OnONU(onuEv(1, 5, "ONLINE", f(-20.5), t0.Add(-time.Duration(d)*24*time.Hour+time.Hour)))
			}
			e.Take()
			return run(e, func() {
				e.OnONU(onuEv(1, 5, "ONLINE", f(-24), t0))
				e.OnONU(onuEv(1, 5, "ONLINE", f(-24.1), t0.Add(time.Minute)))
			})
		}, map[string]int{"onu_rx_drift/firing/notify": 1}},
		{"flapping: one alert, not one per change", func(e *Engine) map[string]int {
			seedPON(e, 1, 16, t0)
			got := run(e, func() {
				for i := 0; i < 6; i++ {
					at := t0.Add(time.Duration(i) * 4 * time.Minute)
					e.OnONU(onuEv(1, 7, "LOS", nil, at))
					e.OnONU(onuEv(1, 7, "ONLINE", f(-20), at.Add(5*time.Second)))
					e.Tick(at.Add(10 * time.Second))
				}
			})
			// Calm for the window: resolved.
			for k, v := range run(e, func() { e.Tick(t0.Add(2 * time.Hour)) }) {
				got[k] += v
			}
			return got
		}, map[string]int{"onu_flapping/firing/notify": 1, "onu_flapping/resolved/notify": 1}},
		{"silenced: recorded, not notified", func(e *Engine) map[string]int {
			seedPON(e, 1, 4, t0)
			e.OnSilence("s1", &streams.SilenceUpserted{ID: "s1", OLTID: "olt-1", Rule: streams.RuleONURxLow, StartsAt: t0, EndsAt: t0.Add(time.Hour)})
			return run(e, func() {
				e.OnONU(onuEv(1, 2, "ONLINE", f(-31.5), t0.Add(time.Minute)))
				e.OnONU(onuEv(1, 2, "ONLINE", f(-20), t0.Add(2*time.Minute)))
			})
		}, map[string]int{"onu_rx_low/firing": 1, "onu_rx_low/resolved": 1}},
		{"OLT unreachable for less than the unavailable delay (a blip): no alert", func(e *Engine) map[string]int {
			return run(e, func() {
				e.OnAvailability(streams.OLTAvailability{OLTID: "olt-1", State: streams.AvailabilityUnreachable, Since: t0, ObservedAt: t0})
				e.OnAvailability(streams.OLTAvailability{OLTID: "olt-1", State: streams.AvailabilityAvailable, Since: t0.Add(20 * time.Second), ObservedAt: t0.Add(20 * time.Second)})
			})
		}, map[string]int{}},
		{"olt_unreachable fires at unavailable (unreachable for the 45 s delay), starting when it stopped answering; resolved at available", func(e *Engine) map[string]int {
			return run(e, func() {
				e.OnAvailability(streams.OLTAvailability{OLTID: "olt-1", State: streams.AvailabilityUnreachable, Since: t0, ObservedAt: t0})
				e.OnAvailability(streams.OLTAvailability{OLTID: "olt-1", State: streams.AvailabilityUnavailable, Since: t0, ObservedAt: t0.Add(45 * time.Second)})
				e.OnAvailability(streams.OLTAvailability{OLTID: "olt-1", State: streams.AvailabilityUnavailable, Since: t0, ObservedAt: t0.Add(50 * time.Second)})
				e.OnAvailability(streams.OLTAvailability{OLTID: "olt-1", State: streams.AvailabilityAvailable, Since: t0.Add(time.Minute), ObservedAt: t0.Add(time.Minute)})
			})
		}, map[string]int{"olt_unreachable/firing/notify": 1, "olt_unreachable/resolved/notify": 1}},
		{"empty read, then a success", func(e *Engine) map[string]int {
			return run(e, func() {
				e.OnExecution("olt-1", false, "timeout", "no answer", t0)
				e.OnExecution("olt-1", false, "empty_read", "walk returned nothing", t0)
				e.OnExecution("olt-1", false, "empty_read", "walk returned nothing", t0.Add(time.Minute))
				e.OnExecution("olt-1", true, "", "", t0.Add(2*time.Minute))
			})
		}, map[string]int{"olt_empty_read/firing/notify": 1, "olt_empty_read/resolved/notify": 1}},
		{"a profile that matches none of its tables, then a success", func(e *Engine) map[string]int {
			return run(e, func() {
				e.OnExecution("olt-1", false, streams.ExecCauseProfileMismatch, "the profile matched but none of its tables answered", t0)
				e.OnExecution("olt-1", false, streams.ExecCauseNoONUsKnown, "no ONU known", t0.Add(time.Minute))
				e.OnExecution("olt-1", true, "", "", t0.Add(2*time.Minute))
			})
		}, map[string]int{"olt_empty_read/firing/notify": 1, "olt_empty_read/resolved/notify": 1}},
		{"a walk ended at a bound, twice, then a success: notified once", func(e *Engine) map[string]int {
			return run(e, func() {
				e.OnExecution("olt-1", false, streams.ExecCauseBoundExceeded, "bound exceeded: onus_per_pon 128", t0)
				e.OnExecution("olt-1", false, streams.ExecCauseBoundExceeded, "bound exceeded: onus_per_pon 128", t0.Add(time.Minute))
				e.OnExecution("olt-1", true, "", "", t0.Add(2*time.Minute))
			})
		}, map[string]int{"olt_empty_read/firing/notify": 1, "olt_empty_read/resolved/notify": 1}},
		{"auto-disabled, re-enabled by the availability probes", func(e *Engine) map[string]int {
			return run(e, func() {
				e.OnNotification(streams.Notification{ID: "d1", Kind: streams.NotifyOLTDisabled, OLTID: "olt-1", Message: "disabled", OccurredAt: t0}, time.Hour)
				e.OnOLTAutoEnabled("olt-1", t0.Add(-time.Minute)) // older than the disable
				e.OnOLTAutoEnabled("olt-1", t0.Add(5*time.Minute))
			})
		}, map[string]int{"olt_auto_disabled/firing/notify": 1, "olt_auto_disabled/resolved/notify": 1}},
		{"quota violation resolves after its ttl; auto-disabled when enabled again", func(e *Engine) map[string]int {
			return run(e, func() {
				e.OnNotification(streams.Notification{ID: "q1", Kind: streams.NotifyQuotaViolation, OLTID: "olt-1", Message: "low", OccurredAt: t0}, time.Hour)
				e.OnNotification(streams.Notification{ID: "d1", Kind: streams.NotifyOLTDisabled, OLTID: "olt-1", Message: "disabled", OccurredAt: t0}, time.Hour)
				e.OnNotification(streams.Notification{ID: "d1", Kind: streams.NotifyOLTDisabled, OLTID: "olt-1", Message: "disabled", OccurredAt: t0}, time.Hour)
				e.Tick(t0.Add(30 * time.Minute))
				e.OnOLT(streams.OLTUpserted{ID: "olt-1", Name: "Norte", Enabled: true}, t0.Add(-time.Minute)) // older than the disable
				e.Tick(t0.Add(61 * time.Minute))
				e.OnOLT(streams.OLTUpserted{ID: "olt-1", Name: "Norte", Enabled: true}, t0.Add(2*time.Hour))
			})
		}, map[string]int{"quota_violation/firing/notify": 1, "quota_violation/resolved/notify": 1, "olt_auto_disabled/firing/notify": 1, "olt_auto_disabled/resolved/notify": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := NewEngine(Rules{}, testLimits())
			got := c.do(e)
			if len(got) != len(c.want) {
				t.Errorf("transitions %v, want %v", got, c.want)
				return
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("transitions %v, want %v", got, c.want)
					return
				}
			}
		})
	}
}

// The per-ONU alerts of an outage carry its incident id; an alert's
// firing and resolution share an id, and a new outage gets a new one.
func TestEngineIncidentAndIDs(t *testing.T) {
	e := NewEngine(Rules{}, testLimits())
	seedPON(e, 1, 8, t0)
	for i := int64(1); i <= 8; i++ {
		e.OnONU(onuEv(1, i, "LOS", nil, t0.Add(time.Minute)))
	}
	_, out := e.Take()
	var incident string
	for _, tr := range out {
		if tr.Alert.Rule == streams.RulePONOutage {
			incident = tr.Alert.ID
			if tr.Alert.IncidentID != tr.Alert.ID || tr.Alert.Pon != "1" || tr.Alert.PonIndex == nil {
				t.Errorf("incident %+v", tr.Alert)
			}
		}
	}
	for _, tr := range out {
		if tr.Alert.Rule == streams.RuleONUDown && (tr.Alert.IncidentID != incident || !tr.Alert.Inhibited || tr.Notify) {
			t.Errorf("onu alert %+v not under incident %s", tr.Alert, incident)
		}
	}
	for i := int64(1); i <= 8; i++ {
		e.OnONU(onuEv(1, i, "ONLINE", f(-20), t0.Add(time.Hour)))
	}
	_, out = e.Take()
	for _, tr := range out {
		if tr.Alert.Rule == streams.RulePONOutage && (tr.Alert.ID != incident || tr.Alert.EndsAt == nil) {
			t.Errorf("resolution %+v, want id %s with ends_at", tr.Alert, incident)
		}
	}
	for i := int64(1); i <= 8; i++ {
		e.OnONU(onuEv(1, i, "LOS", nil, t0.Add(2*time.Hour)))
	}
	_, out = e.Take()
	for _, tr := range out {
		if tr.Alert.Rule == streams.RulePONOutage && tr.Alert.ID == incident {
			t.Errorf("a new outage re-used id %s", incident)
		}
	}
}

// An incident's summary and value follow the outage: its firing counts
// the ONUs down when its group ends, each later group that changes the
// count makes one alert.updated (never notified) with a new revision, and
// its resolution carries the count it ended at.
func TestEngineIncidentSummaryFollows(t *testing.T) {
	e := NewEngine(Rules{}, testLimits())
	seedPON(e, 1, 16, t0)
	type step struct {
		name   string
		do     func()
		events []string // rule/state(/revision) value "summary"
	}
	set := func(from, to int64, status string, at time.Time) func() {
		return func() {
			for i := from; i <= to; i++ {
				var rx *float64
				if status == "ONLINE" {
					rx = f(-20)
				}
				e.OnONU(onuEv(1, i, status, rx, at))
			}
		}
	}
	for _, st := range []step{
		{"cut of 12 in one group: the firing says 12", set(1, 12, "LOS", t0.Add(time.Minute)),
			[]string{`pon_outage/firing 12 "PON 1 of OLT olt-1: 12 of 16 ONUs down (probable fiber cut)"`}},
		{"4 more go down: one update", set(13, 16, "LOS", t0.Add(2*time.Minute)),
			[]string{`pon_outage/updated/1 16 "PON 1 of OLT olt-1: 16 of 16 ONUs down (probable fiber cut)"`}},
		{"6 come back: one update", set(1, 6, "ONLINE", t0.Add(3*time.Minute)),
			[]string{`pon_outage/updated/2 10 "PON 1 of OLT olt-1: 10 of 16 ONUs down (probable fiber cut)"`}},
		{"nothing changes the count: no update", set(1, 6, "ONLINE", t0.Add(4*time.Minute)), nil},
		{"all back: resolved with the count it ended at", set(7, 16, "ONLINE", t0.Add(5*time.Minute)),
			[]string{`pon_outage/resolved 3 "PON 1 of OLT olt-1: 3 of 16 ONUs down (probable fiber cut)"`}},
	} {
		st.do()
		_, out := e.Take()
		var got []string
		for _, tr := range out {
			if tr.Alert.Rule != streams.RulePONOutage {
				continue
			}
			k := tr.Alert.Rule + "/" + tr.Alert.State
			if tr.Update {
				k = fmt.Sprintf("%s/updated/%d", tr.Alert.Rule, tr.Rev)
				if tr.Notify {
					t.Errorf("%s: an update is notified", st.name)
				}
			}
			v := -1.0
			if tr.Alert.Value != nil {
				v = *tr.Alert.Value
			}
			got = append(got, fmt.Sprintf("%s %g %q", k, v, tr.Alert.Summary))
		}
		if !slices.Equal(got, st.events) {
			t.Errorf("%s: %q, want %q", st.name, got, st.events)
		}
	}
}

// The PON outage window is two cycles of the OLT's discovery: 4 ONUs
// going down 90 s apart are one outage when the discovery runs every
// 5 min (the first three were notified after their hold, the fourth is
// under the incident), four ONU alerts when it runs every minute; an OLT
// without a discovery job, or outage_cycles 0, takes the fixed
// outage_window.
func TestEngineOutageWindowFromDiscovery(t *testing.T) {
	zero := 0
	for _, c := range []struct {
		name     string
		rules    Rules
		jobs     []streams.JobUpserted
		assigned []string
		want     map[string]int
		window   time.Duration
	}{
		{"discovery every 5 min: 10 min window, one outage", Rules{},
			[]streams.JobUpserted{{ID: "disc", Kind: streams.KindDiscovery, IntervalSeconds: 300, Enabled: true}}, []string{"disc"},
			map[string]int{"pon_outage/firing/notify": 1, "onu_down/firing/notify": 3, "onu_down/firing": 1}, 10 * time.Minute},
		{"discovery every minute: 2 min window, four ONU alerts", Rules{},
			[]streams.JobUpserted{{ID: "disc", Kind: streams.KindDiscovery, IntervalSeconds: 60, Enabled: true}, {ID: "rx", Kind: streams.KindGet, IntervalSeconds: 3600, Enabled: true}}, []string{"disc", "rx"},
			map[string]int{"onu_down/firing/notify": 4}, 2 * time.Minute},
		{"the longest of two discovery jobs", Rules{},
			[]streams.JobUpserted{{ID: "d1", Kind: streams.KindDiscovery, IntervalSeconds: 60, Enabled: true}, {ID: "d2", Kind: streams.KindDiscovery, IntervalSeconds: 240, Enabled: true}}, []string{"d1", "d2"},
			map[string]int{"pon_outage/firing/notify": 1, "onu_down/firing/notify": 3, "onu_down/firing": 1}, 8 * time.Minute},
		{"a disabled discovery job does not count: the fixed window", Rules{Global: Override{OutageWindow: ptr(2 * time.Minute)}},
			[]streams.JobUpserted{{ID: "disc", Kind: streams.KindDiscovery, IntervalSeconds: 300, Enabled: false}}, []string{"disc"},
			map[string]int{"onu_down/firing/notify": 4}, 2 * time.Minute},
		{"no job: the fixed window (10 min)", Rules{}, nil, nil,
			map[string]int{"pon_outage/firing/notify": 1, "onu_down/firing/notify": 3, "onu_down/firing": 1}, 10 * time.Minute},
		{"outage_cycles 0: the fixed window whatever the job", Rules{Global: Override{OutageCycles: &zero, OutageWindow: ptr(2 * time.Minute)}},
			[]streams.JobUpserted{{ID: "disc", Kind: streams.KindDiscovery, IntervalSeconds: 300, Enabled: true}}, []string{"disc"},
			map[string]int{"onu_down/firing/notify": 4}, 2 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := NewEngine(c.rules, testLimits())
			for _, j := range c.jobs {
				e.OnJob(j)
			}
			for _, id := range c.assigned {
				e.OnAssignment(id, "olt-1", true)
			}
			if w := e.thresholds("olt-1").OutageWindow; w != c.window {
				t.Errorf("outage window %s, want %s", w, c.window)
			}
			seedPON(e, 1, 16, t0)
			got := run(e, func() {
				for i := int64(1); i <= 4; i++ {
					at := t0.Add(time.Duration(i) * 90 * time.Second)
					e.OnONU(onuEv(1, i, "LOS", nil, at))
					e.Tick(at.Add(30 * time.Second))
				}
			})
			if !equalMaps(got, c.want) {
				t.Errorf("transitions %v, want %v", got, c.want)
			}
		})
	}
	// Unassigning the job goes back to the fixed window.
	e := NewEngine(Rules{}, testLimits())
	e.OnJob(streams.JobUpserted{ID: "disc", Kind: streams.KindDiscovery, IntervalSeconds: 60, Enabled: true})
	e.OnAssignment("disc", "olt-1", true)
	if w := e.thresholds("olt-1").OutageWindow; w != 2*time.Minute {
		t.Fatalf("window %s, want 2m", w)
	}
	e.OnAssignment("disc", "olt-1", false)
	if w := e.thresholds("olt-1").OutageWindow; w != 10*time.Minute {
		t.Errorf("window after the unassignment %s, want 10m", w)
	}
}

func ptr[T any](v T) *T { return &v }

func equalMaps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// olt_unreachable follows the availability state a NOC acts on:
// unavailable (the OLT did not answer for the unavailable delay), not the
// first unanswered request (unreachable); the alert starts when the OLT
// stopped answering (the state's since) and carries the last error.
func TestEngineOLTUnreachableAtUnavailable(t *testing.T) {
	e := NewEngine(Rules{}, testLimits())
	e.OnAvailability(streams.OLTAvailability{OLTID: "olt-1", State: streams.AvailabilityUnreachable, Since: t0, ObservedAt: t0, LastError: "timeout"})
	if _, out := e.Take(); len(out) != 0 {
		t.Fatalf("unreachable fired %v", count(out))
	}
	e.OnAvailability(streams.OLTAvailability{OLTID: "olt-1", State: streams.AvailabilityUnavailable, Since: t0, ObservedAt: t0.Add(45 * time.Second), LastError: "timeout"})
	_, out := e.Take()
	if len(out) != 1 || out[0].Alert.Rule != streams.RuleOLTUnreachable || !out[0].Notify {
		t.Fatalf("unavailable: %v, want one olt_unreachable notified", count(out))
	}
	if a := out[0].Alert; !a.StartsAt.Equal(t0) || a.Cause != "timeout" || a.Severity != streams.SeverityCritical {
		t.Errorf("alert starts_at %s cause %q severity %s; want %s, timeout, critical", a.StartsAt, a.Cause, a.Severity, t0)
	}
}

// Bounds: ONUs past MaxONUs are dropped, not tracked.
func TestEngineBounds(t *testing.T) {
	l := testLimits()
	l.MaxONUs = 10
	e := NewEngine(Rules{}, l)
	seedPON(e, 1, 20, t0)
	if e.onus.len() != 10 || e.Dropped != 10 {
		t.Errorf("%d ONUs tracked, %d dropped; want 10 and 10", e.onus.len(), e.Dropped)
	}
}

// Bounds: with room for few alerts, a fiber cut and its return record
// what fits and panic nowhere.
func TestEngineAlertBound(t *testing.T) {
	l := testLimits()
	l.MaxActive = 3
	e := NewEngine(Rules{}, l)
	for p := int64(1); p <= 3; p++ {
		seedPON(e, p, 8, t0)
	}
	for p := int64(1); p <= 3; p++ {
		for i := int64(1); i <= 8; i++ {
			e.OnONU(onuEv(p, i, "LOS", nil, t0.Add(time.Minute)))
		}
	}
	e.Tick(t0.Add(time.Hour))
	for p := int64(1); p <= 3; p++ {
		for i := int64(1); i <= 8; i++ {
			e.OnONU(onuEv(p, i, "ONLINE", f(-20), t0.Add(2*time.Hour)))
		}
	}
	e.Tick(t0.Add(3 * time.Hour))
	if len(e.active) != 0 || e.Dropped == 0 {
		t.Errorf("%d alerts left active, %d dropped; want 0 and some", len(e.active), e.Dropped)
	}
}

func TestRulesLayers(t *testing.T) {
	low30, low25 := -30.0, -25.0
	r := Rules{
		Profiles: map[string]Override{"cplus": {ONURxLowDBm: &low30}},
		OLTs:     map[string]Override{"olt-9": {ONURxLowDBm: &low25, Disabled: []string{streams.RuleONURxDrift}}},
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := r.For("olt-1", "").ONURxLowDBm; got != -27 {
		t.Errorf("default low %g, want -27", got)
	}
	if got := r.For("olt-1", "cplus").ONURxLowDBm; got != -30 {
		t.Errorf("profile low %g, want -30", got)
	}
	th := r.For("olt-9", "cplus")
	if th.ONURxLowDBm != -25 || th.Enabled(streams.RuleONURxDrift) || !th.Enabled(streams.RuleONUDown) {
		t.Errorf("olt thresholds %+v", th)
	}
	// Through the engine: a brand with the profile.
	e := NewEngine(r, testLimits())
	e.OnBrand("b1", "cplus")
	e.OnOLT(streams.OLTUpserted{ID: "olt-1", BrandID: "b1", Enabled: true}, t0)
	seedPON(e, 1, 2, t0)
	if got := run(e, func() { e.OnONU(onuEv(1, 1, "ONLINE", f(-28.5), t0.Add(time.Minute))) }); len(got) != 0 {
		t.Errorf("-28.5 dBm under a C+ profile fired %v", got)
	}
}

func TestRulesValidate(t *testing.T) {
	bad := func(o Override) Rules { return Rules{Defaults: o} }
	hi, lo := -30.0, -10.0
	zero, big := 0, 1000
	neg := -time.Second
	for _, c := range []struct {
		name string
		r    Rules
		want string
	}{
		{"low above high", bad(Override{ONURxLowDBm: &lo, ONURxHighDBm: &hi}), "onu_rx_low_dbm"},
		{"flap changes 0", bad(Override{FlapChanges: &zero}), "flap_changes"},
		{"pon outage onus too big", bad(Override{PONOutageONUs: &big}), "pon_outage_onus"},
		{"negative hold", bad(Override{ONUDownHold: &neg}), "onu_down_hold"},
		{"unknown rule", bad(Override{Disabled: []string{"nope"}}), "unknown rule"},
		{"bad olt section", Rules{OLTs: map[string]Override{"x": {FlapChanges: &zero}}}, "olts.x"},
	} {
		err := c.r.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %s", c.name, err, c.want)
		}
	}
	if err := (Rules{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestLoadRules(t *testing.T) {
	p := t.TempDir() + "/rules.yaml"
	writeFile(t, p, "defaults:\n  onu_rx_low_dbm: -28\n  flap_window: 10m\nprofiles:\n  zte-c600:\n    onu_rx_low_dbm: -30\nolts:\n  olt-3:\n    disabled: [onu_rx_drift]\n")
	r, err := LoadRules(p)
	if err != nil {
		t.Fatal(err)
	}
	if th := r.For("olt-1", ""); th.ONURxLowDBm != -28 || th.FlapWindow != 10*time.Minute {
		t.Errorf("defaults %+v", th)
	}
	if th := r.For("olt-3", "zte-c600"); th.ONURxLowDBm != -30 || th.Enabled(streams.RuleONURxDrift) {
		t.Errorf("olt-3 %+v", th)
	}
	writeFile(t, p, "defaults:\n  onu_rx_lo_dbm: -28\n")
	if _, err := LoadRules(p); err == nil || !strings.Contains(err.Error(), "onu_rx_lo_dbm") {
		t.Errorf("unknown key: %v", err)
	}
}

// The compact ONU state persists and loads back as it was (the persisted
// JSON keeps its shape: a state written before the compact form loads).
func TestONUStateRoundTrip(t *testing.T) {
	e := NewEngine(Rules{}, testLimits())
	for d := 3; d >= 1; d-- {
		e.OnONU(onuEv(1, 2, "ONLINE", f(-19.5), t0.Add(-time.Duration(d)*24*time.Hour)))
	}
	seedPON(e, 1, 8, t0)
	e.OnONU(onuEv(1, 2, "ONLINE", f(-19.37), t0.Add(time.Minute)))
	e.OnONU(streams.ONUChanged{OLTID: "olt-1", PonIndex: 1, ONUID: 3, Change: streams.ONUStatusChanged,
		Current: streams.ONUState{Serial: "HWTC0003", Description: "cliente tres", Status: "DYING_GASP", LastDownCause: "dying-gasp", PortName: "0/1/1:3"}, ObservedAt: t0.Add(time.Minute)})
	e.OnONU(onuEv(1, 4, "LOS", nil, t0.Add(time.Minute)))
	e.OnONU(onuEv(1, 4, "ONLINE", f(-21.5), t0.Add(2*time.Minute)))
	dirty, _ := e.Take()
	l := NewEngine(Rules{}, testLimits())
	for id := range dirty {
		v, err := e.value(id)
		if err != nil {
			t.Fatalf("value %v: %v", id, err)
		}
		if v == nil {
			continue // gone (a resolved alert)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.restore(id.Kind, id.Key, b); err != nil {
			t.Fatalf("restore %v: %v", id, err)
		}
	}
	for _, k := range []ONUKey{{"olt-1", 1, 2}, {"olt-1", 1, 3}, {"olt-1", 1, 4}} {
		a, _ := json.Marshal(e.onuJSON(e.onus.get(k)))
		b, _ := json.Marshal(l.onuJSON(l.onus.get(k)))
		if string(a) != string(b) {
			t.Errorf("ONU %v: %s, loaded back %s", k, a, b)
		}
	}
	o := l.onus.get(ONUKey{"olt-1", 1, 3})
	if o.serial() != "HWTC0003" || o.description() != "cliente tres" || l.strs.get(o.status) != "DYING_GASP" || l.strs.get(o.cause) != "dying-gasp" || !o.Down {
		t.Errorf("ONU 3 loaded as %+v", l.onuJSON(o))
	}
	if j := l.onuJSON(l.onus.get(ONUKey{"olt-1", 1, 2})); j.Rx == nil || *j.Rx != -19.37 || len(j.Days) != 4 || j.Days[3].N != 2 {
		t.Errorf("ONU 2 loaded as %+v, want rx -19.37, 3 days and today's 2 readings", j)
	}
	if j := l.onuJSON(l.onus.get(ONUKey{"olt-1", 1, 4})); len(j.Changes) != 2 || !j.Changes[1].Equal(t0.Add(2*time.Minute)) {
		t.Errorf("ONU 4's status changes %v", j.Changes)
	}
	// A state written by the earlier form (pointers, a port) loads.
	old := `{"olt_id":"olt-9","pon_index":7,"onu_id":1,"serial":"ZTEG1","port":"0/7/1:1","status":"ONLINE","rx":-22.25,"changes":["2026-11-20T10:00:00Z"],"days":[{"d":20412,"s":-44.5,"n":2}]}`
	if err := l.restore("onu", "olt-9/7/1", []byte(old)); err != nil {
		t.Fatal(err)
	}
	if j := l.onuJSON(l.onus.get(ONUKey{"olt-9", 7, 1})); j.Serial != "ZTEG1" || *j.Rx != -22.25 || len(j.Changes) != 1 || j.Days[0].N != 2 {
		t.Errorf("earlier form loaded as %+v", j)
	}
}
