package alerter

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/streams"
)

// onHealth decodes an OLT health reading (consumer alerter-health).
func (a *alerter) onHealth(m jsrouter.Msg) (func(*Engine), error) {
	_, h, err := streams.DecodeOn[streams.OLTHealth](m.Subject, m.Data)
	if err != nil {
		return nil, err
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("%w: olt.health: %w", streams.ErrMalformed, err)
	}
	return func(e *Engine) { e.OnHealth(h) }, nil
}

// unitAlertKey is the key of an alert about one port or unit of an OLT.
func unitAlertKey(rule, olt, index string) string { return oltAlertKey(rule, olt) + ":" + index }

// OnHealth evaluates an OLT's health reading: a PON port administratively
// up and operationally down fires pon_port_down, the hottest board above
// the threshold olt_temperature_high, a failed power supply olt_psu_failed,
// a failed fan olt_fan_failed; each resolves when a later reading shows it
// back (a port or unit no longer reported resolves too). A table the
// reading does not cover changes nothing.
func (e *Engine) OnHealth(h streams.OLTHealth) {
	if e.olt(h.OLTID) == nil {
		e.Dropped++
		return
	}
	th := e.thresholds(h.OLTID)
	at := h.ObservedAt
	if h.Has(streams.HealthChassis) && h.Chassis != nil {
		e.temperature(h, th)
	}
	if h.Has(streams.HealthFans) {
		e.units(h, streams.RuleOLTFanFailed, "fan", h.Fans, th)
	}
	if h.Has(streams.HealthPSUs) {
		e.units(h, streams.RuleOLTPSUFailed, "power supply", h.PSUs, th)
	}
	if !h.Has(streams.HealthPONs) {
		return
	}
	down := map[string]streams.PONHealth{}
	for _, p := range h.PONs {
		if p.OperState == streams.PortDown && p.AdminState != streams.PortDown {
			down[p.Index] = p
		}
	}
	resolveUnitsBut(e, streams.RulePONPortDown, h.OLTID, down, at)
	if !th.Enabled(streams.RulePONPortDown) {
		return
	}
	for _, idx := range sortedKeys(down) {
		p := down[idx]
		a := e.base(streams.RulePONPortDown, h.OLTID, at)
		a.Key = unitAlertKey(streams.RulePONPortDown, h.OLTID, idx)
		a.Pon = p.Name
		if a.Pon == "" {
			a.Pon = idx
		}
		if p.PonIndex >= 0 {
			pi := p.PonIndex
			a.PonIndex = &pi
		}
		a.Cause = "oper_state down"
		a.Labels = map[string]string{"port_index": bounded(idx, 64)}
		a.Summary = fmt.Sprintf("PON port %s of OLT %s is down (administratively %s)", bounded(a.Pon, 128), e.oltName(h.OLTID), orUnknown(p.AdminState))
		e.fire(a, false, "")
	}
}

// temperature fires or resolves olt_temperature_high.
func (e *Engine) temperature(h streams.OLTHealth, th Thresholds) {
	key := oltAlertKey(streams.RuleOLTTemperatureHigh, h.OLTID)
	t := h.Chassis.TemperatureC
	if t == nil || math.IsNaN(*t) {
		return
	}
	if _, firing := e.active[key]; firing {
		if *t < th.OLTTemperatureHighC-th.TemperatureHysteresisC || !th.Enabled(streams.RuleOLTTemperatureHigh) {
			e.resolve(key, h.ObservedAt)
		}
		return
	}
	if *t <= th.OLTTemperatureHighC || !th.Enabled(streams.RuleOLTTemperatureHigh) {
		return
	}
	a := e.base(streams.RuleOLTTemperatureHigh, h.OLTID, h.ObservedAt)
	v := math.Round(*t*100) / 100
	a.Value, a.Unit = &v, "C"
	a.Cause = "temperature above " + strconv.FormatFloat(th.OLTTemperatureHighC, 'f', -1, 64) + " C"
	a.Summary = fmt.Sprintf("OLT %s is at %g C (threshold %g C)", e.oltName(h.OLTID), v, th.OLTTemperatureHighC)
	e.fire(a, false, "")
}

// units fires rule for each failed unit and resolves the others.
func (e *Engine) units(h streams.OLTHealth, rule, what string, us []streams.UnitHealth, th Thresholds) {
	failed := map[string]streams.UnitHealth{}
	for _, u := range us {
		if u.Status == streams.UnitFailed {
			failed[u.Index] = u
		}
	}
	resolveUnitsBut(e, rule, h.OLTID, failed, h.ObservedAt)
	if !th.Enabled(rule) {
		return
	}
	for _, idx := range sortedKeys(failed) {
		u := failed[idx]
		a := e.base(rule, h.OLTID, h.ObservedAt)
		a.Key = unitAlertKey(rule, h.OLTID, idx)
		a.Cause = "status failed"
		a.Labels = map[string]string{"unit_index": bounded(idx, 64)}
		name := u.Name
		if name == "" {
			name = idx
		}
		a.Summary = fmt.Sprintf("%s %s of OLT %s failed", strings.ToUpper(what[:1])+what[1:], bounded(name, 128), e.oltName(h.OLTID))
		e.fire(a, false, "")
	}
}

// resolveUnitsBut resolves the alerts of rule on olt whose port or unit is
// not in keep (back to normal, or no longer reported).
func resolveUnitsBut[V any](e *Engine, rule, olt string, keep map[string]V, at time.Time) {
	prefix := oltAlertKey(rule, olt) + ":"
	var gone []string
	for key := range e.active {
		idx, ok := strings.CutPrefix(key, prefix)
		if !ok {
			continue
		}
		if _, kept := keep[idx]; !kept {
			gone = append(gone, key)
		}
	}
	sort.Strings(gone)
	for _, key := range gone {
		e.resolve(key, at)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
