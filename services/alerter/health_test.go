package alerter

import (
	"testing"
	"time"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/streams"
)

// reading is a health reading of olt-1 at at: the hottest board at temp,
// fans and PSUs by index -> failed, PON ports by index -> oper up.
func reading(at time.Time, temp float64, fans, psus map[string]bool, pons map[string]bool) streams.OLTHealth {
	h := streams.OLTHealth{OLTID: "olt-1", ObservedAt: at, Tables: []string{streams.HealthChassis, streams.HealthFans, streams.HealthPSUs, streams.HealthPONs},
		Chassis: &streams.ChassisHealth{TemperatureC: &temp, Boards: 2}}
	unit := func(m map[string]bool) []streams.UnitHealth {
		var out []streams.UnitHealth
		for idx, failed := range m {
			s := streams.UnitOK
			if failed {
				s = streams.UnitFailed
			}
			out = append(out, streams.UnitHealth{Index: idx, Status: s})
		}
		return out
	}
	h.Fans, h.PSUs = unit(fans), unit(psus)
	for idx, up := range pons {
		s := streams.PortUp
		if !up {
			s = streams.PortDown
		}
		h.PONs = append(h.PONs, streams.PONHealth{PonIndex: 4194304000, Index: idx, Name: "0/1/0", AdminState: streams.PortUp, OperState: s})
	}
	return h
}

func TestEngineHealthRules(t *testing.T) {
	ok2 := map[string]bool{"0.1": false, "0.2": false}
	up := map[string]bool{"4194304000": true, "4194304256": true}
	for _, c := range []struct {
		name string
		do   func(e *Engine) map[string]int
		want map[string]int
	}{
		{"all well: no alert", func(e *Engine) map[string]int {
			return run(e, func() { e.OnHealth(reading(t0, 40, ok2, ok2, up)) })
		}, map[string]int{}},
		{"a fan fails: one alert, resolved when it is back", func(e *Engine) map[string]int {
			e.OnHealth(reading(t0, 40, ok2, ok2, up))
			got := run(e, func() {
				e.OnHealth(reading(t0.Add(time.Minute), 40, map[string]bool{"0.1": true, "0.2": false}, ok2, up))
			})
			again := run(e, func() {
				e.OnHealth(reading(t0.Add(2*time.Minute), 40, map[string]bool{"0.1": true, "0.2": false}, ok2, up))
			})
			if len(again) != 0 {
				t.Errorf("a fan still failed fired again: %v", again)
			}
			for k, v := range run(e, func() { e.OnHealth(reading(t0.Add(3*time.Minute), 40, ok2, ok2, up)) }) {
				got[k] += v
			}
			return got
		}, map[string]int{"olt_fan_failed/firing/notify": 1, "olt_fan_failed/resolved/notify": 1}},
		{"a PSU fails and then is no longer reported: resolved", func(e *Engine) map[string]int {
			got := run(e, func() { e.OnHealth(reading(t0, 40, ok2, map[string]bool{"0.2": true}, up)) })
			for k, v := range run(e, func() { e.OnHealth(reading(t0.Add(time.Minute), 40, ok2, map[string]bool{"0.1": false}, up)) }) {
				got[k] += v
			}
			return got
		}, map[string]int{"olt_psu_failed/firing/notify": 1, "olt_psu_failed/resolved/notify": 1}},
		{"a PON port goes down", func(e *Engine) map[string]int {
			return run(e, func() {
				e.OnHealth(reading(t0, 40, ok2, ok2, map[string]bool{"4194304000": false, "4194304256": true}))
			})
		}, map[string]int{"pon_port_down/firing/notify": 1}},
		{"temperature: fires above 70, holds inside the hysteresis, resolves below 67", func(e *Engine) map[string]int {
			got := run(e, func() { e.OnHealth(reading(t0, 71, ok2, ok2, up)) })
			if held := run(e, func() { e.OnHealth(reading(t0.Add(time.Minute), 68, ok2, ok2, up)) }); len(held) != 0 {
				t.Errorf("68 C resolved or fired: %v", held)
			}
			for k, v := range run(e, func() { e.OnHealth(reading(t0.Add(2*time.Minute), 66, ok2, ok2, up)) }) {
				got[k] += v
			}
			return got
		}, map[string]int{"olt_temperature_high/firing/notify": 1, "olt_temperature_high/resolved/notify": 1}},
		{"a reading without the fan table leaves the fan alert firing", func(e *Engine) map[string]int {
			got := run(e, func() { e.OnHealth(reading(t0, 40, map[string]bool{"0.1": true}, ok2, up)) })
			r := reading(t0.Add(time.Minute), 40, nil, ok2, up)
			r.Tables = []string{streams.HealthChassis, streams.HealthPSUs, streams.HealthPONs}
			for k, v := range run(e, func() { e.OnHealth(r) }) {
				got[k] += v
			}
			return got
		}, map[string]int{"olt_fan_failed/firing/notify": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := NewEngine(Rules{}, testLimits())
			got := c.do(e)
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s: %d, want %d (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
	// A disabled rule makes no alert; the threshold is configurable.
	e := NewEngine(Rules{Defaults: Override{Disabled: []string{streams.RuleOLTFanFailed}, OLTTemperatureHighC: f(50)}}, testLimits())
	got := run(e, func() { e.OnHealth(reading(t0, 55, map[string]bool{"0.1": true}, ok2, up)) })
	if len(got) != 1 || got["olt_temperature_high/firing/notify"] != 1 {
		t.Errorf("disabled fan rule, threshold 50 C at 55 C: %v", got)
	}
}

// A health job's outcome feeds no olt_empty_read: its success does not
// resolve an empty read of the ONU jobs, its failure does not fire one.
func TestHealthExecutionsLeaveEmptyReadAlone(t *testing.T) {
	a := &alerter{}
	msg := func(ev streams.Event, subject string) jsrouter.Msg {
		b, err := streams.Encode("test", t0, ev)
		if err != nil {
			t.Fatal(err)
		}
		return jsrouter.Msg{Subject: subject, Data: b}
	}
	for _, tc := range []struct {
		name string
		ev   streams.Event
		want bool // evaluated
	}{
		{"health success", streams.ExecutionSucceeded{ExecutionID: "e", JobID: "j", OLTID: "olt-1", Kind: streams.KindHealth}, false},
		{"health failure", streams.ExecutionFailed{ExecutionID: "e", JobID: "j", OLTID: "olt-1", Kind: streams.KindHealth, Cause: streams.ExecCauseEmptyRead}, false},
		{"discovery success", streams.ExecutionSucceeded{ExecutionID: "e", JobID: "j", OLTID: "olt-1", Kind: streams.KindDiscovery}, true},
		{"success of an event before kinds", streams.ExecutionSucceeded{ExecutionID: "e", JobID: "j", OLTID: "olt-1"}, true},
	} {
		phase := streams.PhaseSucceeded
		if _, failed := tc.ev.(streams.ExecutionFailed); failed {
			phase = streams.PhaseFailed
		}
		fn, err := a.onExec(msg(tc.ev, streams.SubjectExec("olt-1", phase)))
		if err != nil || (fn != nil) != tc.want {
			t.Errorf("%s: evaluated %v (%v), want %v", tc.name, fn != nil, err, tc.want)
		}
	}
}
