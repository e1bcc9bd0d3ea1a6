package alerter

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/facho-olt/facho/streams"
)

// MaxONUsPerPON bounds what one PON's state holds (GPON splits at most
// 1:128; XGS-PON 1:256).
const MaxONUsPerPON = 256

// statusOnline is the ONU status that is not down; every other status
// (OFFLINE, LOS, DYING_GASP and the vendor states the profiles decode) is.
const statusOnline = "ONLINE"

// Limits bound the engine's memory by what the deployment allows.
type Limits struct {
	MaxONUs     int
	MaxPONs     int
	MaxOLTs     int
	MaxActive   int
	MaxSilences int
}

// ONUKey names one ONU.
type ONUKey struct {
	OLT string `json:"olt_id"`
	PON int64  `json:"pon_index"`
	ONU int64  `json:"onu_id"`
}

type ponKey struct {
	OLT string
	PON int64
}

// ponState is all the engine keeps of one PON.
type ponState struct {
	OLT     string `json:"olt_id"`
	PON     int64  `json:"pon_index"`
	Port    string `json:"port,omitempty"`
	Members int    `json:"members"`
	Down    int    `json:"down"`
	// Recent are the ONUs that went down within the outage window and
	// are still down.
	Recent   []downMark `json:"recent,omitempty"`
	Incident string     `json:"incident,omitempty"`
}

type downMark struct {
	ONU int64     `json:"onu"`
	At  time.Time `json:"at"`
}

// oltState is what the engine knows of an OLT.
type oltState struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Brand    string `json:"brand,omitempty"`
	PONs     int    `json:"pons"`
	PONsOut  int    `json:"pons_out"`
	Incident string `json:"incident,omitempty"`
	// Jobs are the jobs assigned to it and enabled there.
	Jobs []string `json:"jobs,omitempty"`
}

// activeAlert is a firing alert (or one held before it fires).
type activeAlert struct {
	A streams.Alert `json:"alert"`
	// Pending: an onu_down held for ONUDownHold, not published yet.
	Pending bool `json:"pending,omitempty"`
	// Notify: its firing went to the receivers (not inhibited, not
	// silenced), so its resolution does too.
	Notify bool `json:"notify,omitempty"`
	Acked  bool `json:"acked,omitempty"`
	// Until: an alert about a point event (a quota violation) resolves
	// then.
	Until *time.Time `json:"until,omitempty"`
	// Rev counts the updates of an incident's summary and value
	// (alert.updated).
	Rev int `json:"rev,omitempty"`
}

// Transition is an alert event the engine decided: published on
// FACHO_ALERT, and sent to the receivers when Notify.
type Transition struct {
	Alert  streams.Alert
	Notify bool
	// Update: an incident's new summary and value (alert.updated, the
	// Rev-th of its firing), published, never notified.
	Update bool
	Rev    int
}

// Engine evaluates the rules over the events it is given. It is not safe
// for concurrent use: the service serialises it. Every change is recorded
// in dirty (what to persist) and out (the transitions), which the caller
// takes with Take after each event.
type Engine struct {
	rules  Rules
	limits Limits

	onus     onuTable
	strs     strTable // ONU statuses and causes
	pons     map[ponKey]*ponState
	olts     map[string]*oltState
	brands   map[string]string // brand id -> profile
	jobs     map[string]jobState
	silences map[string]streams.SilenceUpserted
	active   map[string]*activeAlert

	// Indexes (not persisted, rebuilt on load): held onu_down alerts,
	// flapping ONUs, alerts with an Until.
	pending      map[string]struct{}
	pendingByPON map[ponKey]map[string]struct{}
	flapping     map[string]ONUKey
	timed        map[string]struct{}

	thCache map[string]*Thresholds
	// changed are the incidents (their alert keys) whose count may have
	// changed since the last Take, with the time of the last change.
	changed map[string]time.Time

	dirty   map[stateID]bool
	out     []Transition
	Dropped int // events ignored because a bound was reached
}

// stateID names one persisted entity: kind (onu, pon, olt, brand,
// silence, alert) and key.
type stateID struct{ Kind, Key string }

// NewEngine returns an empty engine.
func NewEngine(rules Rules, limits Limits) *Engine {
	return &Engine{
		rules: rules, limits: limits,
		onus: newONUTable(), strs: newStrTable(), pons: map[ponKey]*ponState{}, olts: map[string]*oltState{},
		brands: map[string]string{}, jobs: map[string]jobState{}, silences: map[string]streams.SilenceUpserted{}, active: map[string]*activeAlert{},
		pending: map[string]struct{}{}, pendingByPON: map[ponKey]map[string]struct{}{}, flapping: map[string]ONUKey{}, timed: map[string]struct{}{},
		dirty: map[stateID]bool{}, thCache: map[string]*Thresholds{}, changed: map[string]time.Time{},
	}
}

// Take returns and clears what changed since the last Take: an
// incident whose count changed since gets one alert.updated.
func (e *Engine) Take() (dirty map[stateID]bool, out []Transition) {
	e.updateIncidents()
	dirty, out = e.dirty, e.out
	e.dirty, e.out = map[stateID]bool{}, nil
	return dirty, out
}

func onuID(k ONUKey) string {
	return k.OLT + "/" + strconv.FormatInt(k.PON, 10) + "/" + strconv.FormatInt(k.ONU, 10)
}
func ponID(k ponKey) string { return k.OLT + "/" + strconv.FormatInt(k.PON, 10) }

func (e *Engine) touchONU(k ONUKey)  { e.dirty[stateID{"onu", onuID(k)}] = true }
func (e *Engine) touchPON(k ponKey)  { e.dirty[stateID{"pon", ponID(k)}] = true }
func (e *Engine) touchOLT(id string) { e.dirty[stateID{"olt", id}] = true }
func (e *Engine) touchAlert(key string) {
	e.dirty[stateID{"alert", key}] = true
}

// thresholds of an OLT: its brand's profile, then the OLT; cached until
// an OLT, brand or job changes (dropThresholds).
func (e *Engine) thresholds(olt string) Thresholds {
	if t, ok := e.thCache[olt]; ok {
		return *t
	}
	t := e.thresholdsOf(olt)
	if len(e.thCache) < e.limits.MaxOLTs {
		e.thCache[olt] = &t
	}
	return t
}

func (e *Engine) dropThresholds() { clear(e.thCache) }

func (e *Engine) thresholdsOf(olt string) Thresholds {
	var t Thresholds
	if o := e.olts[olt]; o == nil {
		t = e.rules.For(olt, "")
	} else {
		profile := e.brands[o.Brand]
		if _, ok := e.rules.Profiles[profile]; !ok || profile == "" {
			profile = o.Brand
		}
		t = e.rules.For(olt, profile)
	}
	t.OutageWindow = e.outageWindow(olt, t)
	return t
}

func (e *Engine) olt(id string) *oltState {
	o := e.olts[id]
	if o == nil {
		if len(e.olts) >= e.limits.MaxOLTs {
			return nil
		}
		o = &oltState{ID: id}
		e.olts[id] = o
		e.touchOLT(id)
	}
	return o
}

// OnONU evaluates an onu.changed event.
func (e *Engine) OnONU(ev streams.ONUChanged) {
	k := ONUKey{ev.OLTID, ev.PonIndex, ev.ONUID}
	at := ev.ObservedAt
	if ev.Change == streams.ONURemoved {
		e.removeONU(k, at)
		return
	}
	o := e.onus.get(k)
	pk := ponKey{k.OLT, k.PON}
	if o == nil {
		if e.onus.len() >= e.limits.MaxONUs {
			e.Dropped++
			return
		}
		p := e.pons[pk]
		if p == nil {
			if len(e.pons) >= e.limits.MaxPONs {
				e.Dropped++
				return
			}
			ol := e.olt(k.OLT)
			if ol == nil {
				e.Dropped++
				return
			}
			p = &ponState{OLT: k.OLT, PON: k.PON}
			e.pons[pk] = p
			ol.PONs++
			e.touchOLT(k.OLT)
		}
		if p.Members >= MaxONUsPerPON {
			e.Dropped++
			return
		}
		p.Members++
		e.touchPON(pk)
		o = e.onus.add(k)
	}
	e.touchONU(k)
	cur := ev.Current
	if cur.Serial != "" || cur.Description != "" {
		serial, desc := o.serial(), o.description()
		if cur.Serial != "" {
			serial = bounded(cur.Serial, 64)
		}
		if cur.Description != "" {
			desc = bounded(cur.Description, 256)
		}
		o.setText(serial, desc)
	}
	if cur.PortName != "" {
		port := bounded(ponOfPort(cur.PortName), 64)
		if p := e.pons[pk]; p != nil && p.Port != port {
			p.Port = strings.Clone(port)
			e.touchPON(pk)
		}
	}
	th := e.thresholds(k.OLT)
	if status := e.strs.get(o.status); cur.Status != "" && cur.Status != status {
		first := status == ""
		down := cur.Status != statusOnline
		o.status = e.strs.intern(bounded(cur.Status, 32))
		switch {
		case down && !o.Down:
			o.Down = true
			o.cause = e.strs.intern(bounded(cur.LastDownCause, 64))
			if o.cause == 0 {
				o.cause = o.status
			}
			if !first {
				e.statusChange(o, at, th)
			}
			e.onuDown(o, at, th, !first)
		case !down && o.Down:
			o.Down = false
			e.statusChange(o, at, th)
			e.onuUp(o, at, th)
		}
	}
	if cur.RxPowerDBm != nil && !o.Down && finite(*cur.RxPowerDBm) {
		v := *cur.RxPowerDBm
		o.rx = float32(v)
		e.optical(o, streams.RuleONURxLow, streams.RuleONURxHigh, v, th.ONURxLowDBm, th.ONURxHighDBm, th, at)
		e.drift(o, v, th, at)
	}
	if cur.OLTRxPowerDBm != nil && !o.Down && finite(*cur.OLTRxPowerDBm) {
		v := *cur.OLTRxPowerDBm
		o.oltRx = float32(v)
		e.optical(o, streams.RuleOLTRxLow, streams.RuleOLTRxHigh, v, th.OLTRxLowDBm, th.OLTRxHighDBm, th, at)
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v > -100 && v < 100 }

func bounded(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// statusChange records a status change for the flapping rule.
func (e *Engine) statusChange(o *onuState, at time.Time, th Thresholds) {
	cut := at.Add(-th.FlapWindow).UnixNano()
	keep := o.changes[:0]
	for _, t := range o.changes {
		if t > cut {
			keep = append(keep, t)
		}
	}
	o.changes = append(keep, at.UnixNano())
	if len(o.changes) > MaxFlapChanges {
		o.changes = o.changes[len(o.changes)-MaxFlapChanges:]
	}
	if len(o.changes) == 1 && cap(o.changes) > 4 {
		o.changes = append([]int64(nil), o.changes...) // calm again: give the memory back
	}
	key := alertKey(streams.RuleONUFlapping, o.ONUKey)
	if len(o.changes) > th.FlapChanges {
		if _, ok := e.active[key]; !ok {
			v := float64(len(o.changes))
			e.fire(e.onuAlert(streams.RuleONUFlapping, o, at, &v, "changes", fmt.Sprintf("ONU %s changed status %d times in %s", o.name(), len(o.changes), th.FlapWindow)), false, "")
		}
	}
	if _, ok := e.active[key]; ok {
		e.flapping[key] = o.ONUKey
	}
}

func (o *onuState) name() string {
	if s := o.serial(); s != "" {
		return s
	}
	return fmt.Sprintf("%s pon %d onu %d", o.OLT, o.PON, o.ONU)
}

func (e *Engine) onuDown(o *onuState, at time.Time, th Thresholds, transition bool) {
	pk := ponKey{o.OLT, o.PON}
	p := e.pons[pk]
	p.Down++
	e.incidentChanged(p.Incident, at)
	if transition {
		p.Recent = append(pruneRecent(p.Recent, at.Add(-th.OutageWindow)), downMark{o.ONU, at})
		if len(p.Recent) > MaxONUsPerPON {
			p.Recent = p.Recent[len(p.Recent)-MaxONUsPerPON:]
		}
	}
	e.touchPON(pk)
	if !th.Enabled(streams.RuleONUDown) {
		e.checkPON(p, at, th)
		return
	}
	a := e.onuAlert(streams.RuleONUDown, o, at, nil, "", fmt.Sprintf("ONU %s is %s", o.name(), e.strs.get(o.status)))
	a.Cause = e.strs.get(o.cause)
	if inc := e.incidentOf(o); inc != "" {
		e.fire(a, true, inc)
	} else if th.ONUDownHold > 0 {
		e.hold(a)
	} else {
		e.fire(a, false, "")
	}
	e.checkPON(p, at, th)
}

// incidentOf is the id of the outage covering an ONU's down alert, ""
// none.
func (e *Engine) incidentOf(o *onuState) string {
	if p := e.pons[ponKey{o.OLT, o.PON}]; p != nil && p.Incident != "" {
		return e.idOf(p.Incident)
	}
	if ol := e.olts[o.OLT]; ol != nil && ol.Incident != "" {
		return e.idOf(ol.Incident)
	}
	return ""
}

// idOf is the id of the active alert under key, "" none.
func (e *Engine) idOf(key string) string {
	if a, ok := e.active[key]; ok {
		return a.A.ID
	}
	return ""
}

func pruneRecent(r []downMark, cut time.Time) []downMark {
	keep := r[:0]
	for _, d := range r {
		if d.At.After(cut) {
			keep = append(keep, d)
		}
	}
	return keep
}

// checkPON fires a PON outage when enough of its ONUs went down within
// the window, or resolves it when few enough are still down.
func (e *Engine) checkPON(p *ponState, at time.Time, th Thresholds) {
	pk := ponKey{p.OLT, p.PON}
	p.Recent = pruneRecent(p.Recent, at.Add(-th.OutageWindow))
	if p.Incident == "" {
		n := len(p.Recent)
		if !th.Enabled(streams.RulePONOutage) || !outage(n, p.Members, th.PONOutageONUs, th.PONOutagePercent) {
			return
		}
		a := e.base(streams.RulePONOutage, p.OLT, at)
		a.Key = ponAlertKey(streams.RulePONOutage, pk)
		pon := p.PON
		a.PonIndex, a.Pon = &pon, ponName(p)
		a.Unit = "onus"
		a.Value, a.Summary = e.ponOutageSummary(p)
		inc := ""
		if ol := e.olts[p.OLT]; ol != nil && ol.Incident != "" {
			inc = e.idOf(ol.Incident)
		}
		e.fire(a, inc != "", inc)
		id := e.idOf(a.Key)
		if id == "" {
			return // not recorded (MaxActive): counted in Dropped
		}
		p.Incident = a.Key
		e.touchPON(pk)
		// The held down alerts of its ONUs fire now, under it.
		for _, d := range p.Recent {
			key := alertKey(streams.RuleONUDown, ONUKey{p.OLT, p.PON, d.ONU})
			if h, ok := e.active[key]; ok && h.Pending {
				e.release(key, true, id, at)
			}
		}
		for _, key := range sortedSet(e.pendingByPON[pk]) {
			e.release(key, true, id, at)
		}
		if ol := e.olts[p.OLT]; ol != nil {
			ol.PONsOut++
			e.incidentChanged(ol.Incident, at)
			e.touchOLT(p.OLT)
			e.checkOLT(ol, at, th)
		}
		return
	}
	if outage(p.Down, p.Members, th.PONOutageONUs, th.PONOutagePercent) {
		return
	}
	if act := e.active[p.Incident]; act != nil {
		act.A.Value, act.A.Summary = e.ponOutageSummary(p) // the count it ends at
	}
	e.resolve(p.Incident, at)
	p.Incident = ""
	e.touchPON(pk)
	if ol := e.olts[p.OLT]; ol != nil {
		if ol.PONsOut > 0 {
			ol.PONsOut--
		}
		e.incidentChanged(ol.Incident, at)
		e.touchOLT(p.OLT)
		e.checkOLT(ol, at, th)
	}
}

// ponOutageSummary is a PON outage's value and summary as the PON is
// now: its ONUs down.
func (e *Engine) ponOutageSummary(p *ponState) (*float64, string) {
	v := float64(p.Down)
	return &v, fmt.Sprintf("PON %s of OLT %s: %d of %d ONUs down (probable fiber cut)", ponName(p), e.oltName(p.OLT), p.Down, p.Members)
}

// oltOutageSummary is an OLT outage's value and summary as the OLT is
// now: its PONs in outage.
func (e *Engine) oltOutageSummary(ol *oltState) (*float64, string) {
	v := float64(ol.PONsOut)
	return &v, fmt.Sprintf("OLT %s: %d of %d PONs in outage", e.oltName(ol.ID), ol.PONsOut, ol.PONs)
}

// incidentChanged notes that the count of the incident under key ("":
// none) may have changed at at.
func (e *Engine) incidentChanged(key string, at time.Time) {
	if key != "" {
		if t, ok := e.changed[key]; !ok || at.After(t) {
			e.changed[key] = at
		}
	}
}

// updateIncidents makes one alert.updated per firing incident whose value
// changed since its last event: its summary follows the outage.
func (e *Engine) updateIncidents() {
	if len(e.changed) == 0 {
		return
	}
	for _, key := range sortedKeys(e.changed) {
		at := e.changed[key]
		act := e.active[key]
		if act == nil || act.Pending {
			continue
		}
		var v *float64
		var summary string
		switch act.A.Rule {
		case streams.RulePONOutage:
			if act.A.PonIndex == nil {
				continue
			}
			p := e.pons[ponKey{act.A.OLTID, *act.A.PonIndex}]
			if p == nil {
				continue
			}
			v, summary = e.ponOutageSummary(p)
		case streams.RuleOLTOutage:
			ol := e.olts[act.A.OLTID]
			if ol == nil {
				continue
			}
			v, summary = e.oltOutageSummary(ol)
		default:
			continue
		}
		if act.A.Value != nil && *act.A.Value == *v && act.A.Summary == summary {
			continue
		}
		act.A.Value, act.A.Summary = v, summary
		// Fired since the last Take: its firing says it (no update).
		if i := e.firingOut(key, act.A.ID); i >= 0 {
			e.out[i].Alert.Value, e.out[i].Alert.Summary = v, summary
			e.touchAlert(key)
			continue
		}
		if at.After(act.A.ObservedAt) {
			act.A.ObservedAt = at
		}
		act.Rev++
		e.touchAlert(key)
		e.out = append(e.out, Transition{Alert: act.A, Notify: false, Update: true, Rev: act.Rev})
	}
	clear(e.changed)
}

// firingOut is the index in out of the firing of alert id under key, -1
// none.
func (e *Engine) firingOut(key, id string) int {
	for i := len(e.out) - 1; i >= 0; i-- {
		t := e.out[i]
		if t.Alert.Key == key && t.Alert.ID == id && !t.Update && t.Alert.State == streams.AlertStateFiring {
			return i
		}
	}
	return -1
}

func outage(down, members, minONUs int, pct float64) bool {
	if down >= minONUs {
		return true
	}
	return members >= 2 && down >= 2 && float64(down)*100 >= pct*float64(members)
}

// ponOfPort is the PON's name in an ONU's port name ("0/1/0" of
// "0/1/0:5"): the pon label of its alerts, as the API's PON view and the
// alert filters name a PON.
func ponOfPort(port string) string {
	if i := strings.IndexByte(port, ':'); i > 0 {
		return port[:i]
	}
	return port
}

func ponName(p *ponState) string {
	if p.Port != "" {
		return p.Port
	}
	return strconv.FormatInt(p.PON, 10)
}

// checkOLT fires an OLT outage when most of its PONs are in an outage at
// once, or resolves it.
func (e *Engine) checkOLT(ol *oltState, at time.Time, th Thresholds) {
	on := ol.PONs >= 2 && ol.PONsOut >= 2 && float64(ol.PONsOut)*100 >= th.OLTOutagePONPercent*float64(ol.PONs)
	switch {
	case on && ol.Incident == "" && th.Enabled(streams.RuleOLTOutage):
		a := e.base(streams.RuleOLTOutage, ol.ID, at)
		a.Unit = "pons"
		a.Value, a.Summary = e.oltOutageSummary(ol)
		e.fire(a, false, "")
		if e.idOf(a.Key) != "" {
			ol.Incident = a.Key
			e.touchOLT(ol.ID)
		}
	case !on && ol.Incident != "":
		if act := e.active[ol.Incident]; act != nil {
			act.A.Value, act.A.Summary = e.oltOutageSummary(ol) // the count it ends at
		}
		e.resolve(ol.Incident, at)
		ol.Incident = ""
		e.touchOLT(ol.ID)
	}
}

func (e *Engine) onuUp(o *onuState, at time.Time, th Thresholds) {
	pk := ponKey{o.OLT, o.PON}
	p := e.pons[pk]
	if p.Down > 0 {
		p.Down--
	}
	e.incidentChanged(p.Incident, at)
	keep := p.Recent[:0]
	for _, d := range p.Recent {
		if d.ONU != o.ONU {
			keep = append(keep, d)
		}
	}
	p.Recent = keep
	e.touchPON(pk)
	e.resolve(alertKey(streams.RuleONUDown, o.ONUKey), at)
	if p.Incident != "" {
		e.checkPON(p, at, th)
	}
}

func (e *Engine) removeONU(k ONUKey, at time.Time) {
	o := e.onus.get(k)
	if o == nil {
		return
	}
	for _, r := range []string{streams.RuleONUDown, streams.RuleONURxLow, streams.RuleONURxHigh, streams.RuleOLTRxLow, streams.RuleOLTRxHigh, streams.RuleONURxDrift, streams.RuleONUFlapping} {
		e.resolve(alertKey(r, k), at)
	}
	pk := ponKey{k.OLT, k.PON}
	if p := e.pons[pk]; p != nil {
		p.Members--
		if o.Down && p.Down > 0 {
			p.Down--
		}
		e.incidentChanged(p.Incident, at)
		e.touchPON(pk)
		if p.Incident != "" {
			e.checkPON(p, at, e.thresholds(k.OLT))
		}
	}
	e.onus.del(k)
	e.touchONU(k)
}

// optical evaluates a low/high pair with hysteresis.
func (e *Engine) optical(o *onuState, lowRule, highRule string, v, low, high float64, th Thresholds, at time.Time) {
	side := "ONU"
	if lowRule == streams.RuleOLTRxLow {
		side = "OLT-side"
	}
	lk, hk := alertKey(lowRule, o.ONUKey), alertKey(highRule, o.ONUKey)
	if _, ok := e.active[lk]; ok {
		if v >= low+th.HysteresisDB {
			e.resolve(lk, at)
		}
	} else if v < low && th.Enabled(lowRule) {
		e.fire(e.onuAlert(lowRule, o, at, &v, "dBm", fmt.Sprintf("%s Rx of ONU %s is %.2f dBm, below %.2f dBm", side, o.name(), v, low)), false, "")
	}
	if _, ok := e.active[hk]; ok {
		if v <= high-th.HysteresisDB {
			e.resolve(hk, at)
		}
	} else if v > high && th.Enabled(highRule) {
		e.fire(e.onuAlert(highRule, o, at, &v, "dBm", fmt.Sprintf("%s Rx of ONU %s is %.2f dBm, above %.2f dBm", side, o.name(), v, high)), false, "")
	}
}

// drift records v in the ONU's daily means and compares it with the
// baseline: the median of the previous days' means.
func (e *Engine) drift(o *onuState, v float64, th Thresholds, at time.Time) {
	day := int32(at.Unix() / 86400)
	if n := len(o.Days); n > 0 && o.Days[n-1].Day == day {
		o.Days[n-1].Sum += v
		o.Days[n-1].N++
	} else {
		o.Days = append(o.Days, dayMean{Day: day, Sum: v, N: 1})
	}
	// Keep today and the DriftDays before it.
	keep := o.Days[:0]
	for _, d := range o.Days {
		if d.Day >= day-int32(th.DriftDays) {
			keep = append(keep, d)
		}
	}
	o.Days = keep
	if len(o.Days) > MaxDriftDays+1 {
		o.Days = o.Days[len(o.Days)-MaxDriftDays-1:]
	}
	key := alertKey(streams.RuleONURxDrift, o.ONUKey)
	prev := o.Days[:len(o.Days)-1]
	if len(prev) < min(3, th.DriftDays) {
		return
	}
	means := make([]float64, len(prev))
	for i, d := range prev {
		means[i] = d.Sum / float64(d.N)
	}
	base := median(means)
	drop := base - v
	if _, ok := e.active[key]; ok {
		if drop < th.DriftDB-th.HysteresisDB || v < th.ONURxLowDBm {
			e.resolve(key, at)
		}
		return
	}
	if drop > th.DriftDB && v >= th.ONURxLowDBm && th.Enabled(streams.RuleONURxDrift) {
		a := e.onuAlert(streams.RuleONURxDrift, o, at, &drop, "dB", fmt.Sprintf("Rx of ONU %s dropped %.2f dB below its baseline %.2f dBm (now %.2f dBm)", o.name(), drop, base, v))
		e.fire(a, false, "")
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// OnAvailability evaluates an OLT availability change: unavailable fires
// olt_unreachable, available resolves it.
func (e *Engine) OnAvailability(ev streams.OLTAvailability) {
	key := oltAlertKey(streams.RuleOLTUnreachable, ev.OLTID)
	switch ev.State {
	case streams.AvailabilityUnavailable:
		if _, ok := e.active[key]; ok || !e.thresholds(ev.OLTID).Enabled(streams.RuleOLTUnreachable) {
			return
		}
		if e.olt(ev.OLTID) == nil {
			e.Dropped++
			return
		}
		a := e.base(streams.RuleOLTUnreachable, ev.OLTID, ev.Since)
		a.Cause = bounded(ev.LastError, 512)
		a.Summary = fmt.Sprintf("OLT %s does not answer since %s", e.oltName(ev.OLTID), ev.Since.UTC().Format(time.RFC3339))
		a.ObservedAt = ev.ObservedAt
		e.fire(a, false, "")
	case streams.AvailabilityAvailable:
		e.resolve(key, ev.ObservedAt)
	}
}

// Execution causes that make an olt_empty_read alert.
// emptyCauses are the failures of an OLT that answered but gave nothing to
// read: a get that came back empty where ONUs were known, a discovery that
// placed no row of its profile's tables, a walk a broken agent ended, a
// walk ended at a bound because the OLT sent more than it allows.
var emptyCauses = map[string]bool{streams.ExecCauseEmptyRead: true, streams.ExecCauseProfileMismatch: true, streams.ExecCauseOIDNotIncreasing: true,
	streams.ExecCauseBoundExceeded: true}

// OnExecution evaluates an execution outcome: a failure with an empty
// read cause fires olt_empty_read; a success resolves it.
func (e *Engine) OnExecution(olt string, succeeded bool, cause, errText string, at time.Time) {
	key := oltAlertKey(streams.RuleOLTEmptyRead, olt)
	if succeeded {
		e.resolve(key, at)
		return
	}
	if !emptyCauses[cause] {
		return
	}
	if _, ok := e.active[key]; ok || !e.thresholds(olt).Enabled(streams.RuleOLTEmptyRead) || e.olt(olt) == nil {
		return
	}
	a := e.base(streams.RuleOLTEmptyRead, olt, at)
	a.Cause = cause
	a.Summary = fmt.Sprintf("OLT %s answered but a read came back empty (%s): %s", e.oltName(olt), cause, bounded(errText, 256))
	if cause == streams.ExecCauseBoundExceeded {
		a.Summary = fmt.Sprintf("OLT %s sent more than a bound allows (%s): %s", e.oltName(olt), cause, bounded(errText, 256))
	}
	e.fire(a, false, "")
}

// OnNotification turns the auditor's notifications into alerts: a quota
// violation (resolved after ttl) and an auto-disabled OLT (resolved when
// the OLT is enabled again).
func (e *Engine) OnNotification(n streams.Notification, ttl time.Duration) {
	var rule string
	switch n.Kind {
	case streams.NotifyQuotaViolation:
		rule = streams.RuleQuotaViolation
	case streams.NotifyOLTDisabled:
		rule = streams.RuleOLTAutoDisabled
	default:
		return
	}
	key := oltAlertKey(rule, n.OLTID)
	if _, ok := e.active[key]; ok || !e.thresholds(n.OLTID).Enabled(rule) {
		return
	}
	if n.OLTID != "" && e.olt(n.OLTID) == nil {
		return
	}
	a := e.base(rule, n.OLTID, n.OccurredAt)
	a.Summary = bounded(n.Message, 512)
	a.Labels = map[string]string{"notification_id": bounded(n.ID, 200)}
	e.fire(a, false, "")
	if rule == streams.RuleQuotaViolation {
		if act := e.active[key]; act != nil {
			until := n.OccurredAt.Add(ttl)
			act.Until = &until
			e.timed[key] = struct{}{}
		}
	}
}

// OnOLT records an OLT's name and brand; an enabled OLT resolves its
// olt_auto_disabled alert (raised before at).
func (e *Engine) OnOLT(u streams.OLTUpserted, at time.Time) {
	o := e.olt(u.ID)
	if o == nil {
		e.Dropped++
		return
	}
	o.Name, o.Brand = bounded(u.Name, 128), u.BrandID
	e.touchOLT(u.ID)
	e.dropThresholds()
	key := oltAlertKey(streams.RuleOLTAutoDisabled, u.ID)
	if a, ok := e.active[key]; ok && u.Enabled && at.After(a.A.StartsAt) {
		e.resolve(key, at)
	}
}

// OnOLTAutoEnabled resolves the olt_auto_disabled alert of an OLT the
// availability service re-enabled (raised before at).
func (e *Engine) OnOLTAutoEnabled(id string, at time.Time) {
	key := oltAlertKey(streams.RuleOLTAutoDisabled, id)
	if a, ok := e.active[key]; ok && at.After(a.A.StartsAt) {
		e.resolve(key, at)
	}
}

// OnOLTDeleted resolves every alert of the OLT and forgets it.
func (e *Engine) OnOLTDeleted(id string, at time.Time) {
	for _, key := range sortedKeys(e.active) {
		if e.active[key].A.OLTID == id {
			e.resolve(key, at)
		}
	}
	var gone []ONUKey
	e.onus.each(func(o *onuState) bool {
		if o.OLT == id {
			gone = append(gone, o.ONUKey)
		}
		return true
	})
	for _, k := range gone {
		e.onus.del(k)
		e.touchONU(k)
	}
	for k := range e.pons {
		if k.OLT == id {
			delete(e.pons, k)
			e.touchPON(k)
		}
	}
	delete(e.olts, id)
	e.touchOLT(id)
	e.dropThresholds()
}

// OnBrand records a brand's vendor profile.
func (e *Engine) OnBrand(id, profile string) {
	if len(e.brands) >= e.limits.MaxOLTs && e.brands[id] == "" {
		e.Dropped++
		return
	}
	e.brands[id] = profile
	e.dirty[stateID{"brand", id}] = true
	e.dropThresholds()
}

// OnSilence records a silence (nil s with id: deleted).
func (e *Engine) OnSilence(id string, s *streams.SilenceUpserted) {
	if s == nil {
		delete(e.silences, id)
	} else {
		if _, ok := e.silences[id]; !ok && len(e.silences) >= e.limits.MaxSilences {
			e.Dropped++
			return
		}
		e.silences[id] = *s
	}
	e.dirty[stateID{"silence", id}] = true
}

// OnAck records an acknowledgement: the firing is not re-sent to
// Alertmanager (the other receivers got it once anyway).
func (e *Engine) OnAck(ack streams.AlertAcknowledged) {
	a, ok := e.active[ack.Key]
	if !ok || a.A.ID != ack.AlertID || a.Acked {
		return
	}
	a.Acked = true
	e.touchAlert(ack.Key)
}

// Tick fires the held down alerts whose hold ended, resolves flapping
// ONUs that calmed down and point alerts whose time is up.
func (e *Engine) Tick(now time.Time) {
	for key := range e.pending { // releasing deletes from it: allowed while ranging
		a, ok := e.active[key]
		if !ok {
			delete(e.pending, key)
			continue
		}
		if now.Sub(a.A.StartsAt) < e.thresholds(a.A.OLTID).ONUDownHold {
			continue
		}
		// Still down after its hold: notified, unless the ONU is
		// flapping (its flapping alert covers it).
		if a.A.PonIndex != nil && a.A.ONUID != nil {
			if fl, ok := e.active[alertKey(streams.RuleONUFlapping, ONUKey{a.A.OLTID, *a.A.PonIndex, *a.A.ONUID})]; ok {
				e.release(key, true, fl.A.ID, now)
				continue
			}
		}
		e.release(key, false, "", now)
	}
	for _, key := range sortedKeys(e.flapping) {
		k := e.flapping[key]
		o := e.onus.get(k)
		if o == nil || len(o.changes) == 0 || now.Sub(time.Unix(0, o.changes[len(o.changes)-1])) >= e.thresholds(k.OLT).FlapWindow {
			e.resolve(key, now)
		}
	}
	for _, key := range sortedSet(e.timed) {
		if a := e.active[key]; a != nil && a.Until != nil && !now.Before(*a.Until) {
			e.resolve(key, now)
		}
	}
}

// base is an alert of rule about an OLT.
func (e *Engine) base(rule, olt string, at time.Time) streams.Alert {
	return streams.Alert{Key: oltAlertKey(rule, olt), Rule: rule, Severity: severityOf(rule), State: streams.AlertStateFiring,
		OLTID: olt, OLTName: e.oltName(olt), StartsAt: at, ObservedAt: at}
}

func (e *Engine) oltName(id string) string {
	if o := e.olts[id]; o != nil && o.Name != "" {
		return o.Name
	}
	return id
}

func (e *Engine) onuAlert(rule string, o *onuState, at time.Time, v *float64, unit, summary string) streams.Alert {
	a := e.base(rule, o.OLT, at)
	a.Key = alertKey(rule, o.ONUKey)
	pon, onu := o.PON, o.ONU
	a.PonIndex, a.ONUID = &pon, &onu
	if p := e.pons[ponKey{o.OLT, o.PON}]; p != nil {
		a.Pon = ponName(p)
	} else {
		a.Pon = strconv.FormatInt(pon, 10)
	}
	a.Serial, a.Description = o.serial(), o.description()
	if v != nil {
		x := math.Round(*v*100) / 100
		a.Value = &x
	}
	a.Unit, a.Summary = unit, summary
	return a
}

func alertKey(rule string, k ONUKey) string {
	return rule + ":" + k.OLT + ":" + strconv.FormatInt(k.PON, 10) + ":" + strconv.FormatInt(k.ONU, 10)
}
func ponAlertKey(rule string, k ponKey) string {
	return rule + ":" + k.OLT + ":" + strconv.FormatInt(k.PON, 10)
}
func oltAlertKey(rule, olt string) string {
	if olt == "" {
		olt = streams.AlertGlobal
	}
	return rule + ":" + olt
}

// AlertID is the id of the firing of key that started at startsAt.
func AlertID(key string, startsAt time.Time) string {
	h := sha256.Sum256([]byte(key + "@" + startsAt.UTC().Format(time.RFC3339Nano)))
	return hex.EncodeToString(h[:10])
}

// fire starts an alert (none active under its key). inhibited: recorded,
// not notified, under incident.
func (e *Engine) fire(a streams.Alert, inhibited bool, incident string) {
	if _, ok := e.active[a.Key]; ok {
		return
	}
	if len(e.active) >= e.limits.MaxActive {
		e.Dropped++
		return
	}
	a.ID = AlertID(a.Key, a.StartsAt)
	a.State = streams.AlertStateFiring
	if a.Rule == streams.RulePONOutage || a.Rule == streams.RuleOLTOutage {
		if incident == "" {
			a.IncidentID = a.ID
		}
	}
	if incident != "" {
		a.IncidentID, a.Inhibited = incident, true
	}
	notify := !a.Inhibited && !e.silenced(a, a.StartsAt)
	e.active[a.Key] = &activeAlert{A: a, Notify: notify}
	e.touchAlert(a.Key)
	e.out = append(e.out, Transition{Alert: a, Notify: notify})
}

// hold records a down alert that fires after its hold unless an outage
// covers it first or the ONU comes back.
func (e *Engine) hold(a streams.Alert) {
	if _, ok := e.active[a.Key]; ok {
		return
	}
	if len(e.active) >= e.limits.MaxActive {
		e.Dropped++
		return
	}
	a.ID = AlertID(a.Key, a.StartsAt)
	e.active[a.Key] = &activeAlert{A: a, Pending: true}
	e.addPending(a)
	e.touchAlert(a.Key)
}

func (e *Engine) addPending(a streams.Alert) {
	e.pending[a.Key] = struct{}{}
	if a.PonIndex != nil {
		pk := ponKey{a.OLTID, *a.PonIndex}
		if e.pendingByPON[pk] == nil {
			e.pendingByPON[pk] = map[string]struct{}{}
		}
		e.pendingByPON[pk][a.Key] = struct{}{}
	}
}

func (e *Engine) dropPending(a streams.Alert) {
	delete(e.pending, a.Key)
	if a.PonIndex != nil {
		pk := ponKey{a.OLTID, *a.PonIndex}
		delete(e.pendingByPON[pk], a.Key)
		if len(e.pendingByPON[pk]) == 0 {
			delete(e.pendingByPON, pk)
		}
	}
}

// release fires a held alert.
func (e *Engine) release(key string, inhibited bool, incident string, at time.Time) {
	h, ok := e.active[key]
	if !ok {
		delete(e.pending, key)
		return
	}
	e.dropPending(h.A)
	delete(e.active, key)
	a := h.A
	if inhibited {
		a.ObservedAt = at
	}
	e.fire(a, inhibited, incident)
}

// resolve ends the alert under key, if any. A held one ends unpublished.
func (e *Engine) resolve(key string, at time.Time) {
	a, ok := e.active[key]
	if !ok {
		return
	}
	delete(e.active, key)
	e.dropPending(a.A)
	delete(e.flapping, key)
	delete(e.timed, key)
	e.touchAlert(key)
	if a.Pending {
		return
	}
	r := a.A
	r.State = streams.AlertStateResolved
	if at.Before(r.StartsAt) {
		at = r.StartsAt
	}
	end := at
	r.EndsAt, r.ObservedAt = &end, at
	e.out = append(e.out, Transition{Alert: r, Notify: a.Notify})
}

// silenced tells whether a silence covers a at.
func (e *Engine) silenced(a streams.Alert, at time.Time) bool {
	for _, s := range e.silences {
		if at.Before(s.StartsAt) || !at.Before(s.EndsAt) {
			continue
		}
		if (s.OLTID == "" || s.OLTID == a.OLTID) && (s.Pon == "" || s.Pon == a.Pon) && (s.Rule == "" || s.Rule == a.Rule) {
			return true
		}
	}
	return false
}

func sortedSet(m map[string]struct{}) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
