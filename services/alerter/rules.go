package alerter

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/facho-olt/facho/streams"
)

// Thresholds are the rule parameters that apply to one OLT: the shipped
// defaults, overridden by the rules file's defaults, then by its vendor
// profile's section, then by its own section.
type Thresholds struct {
	// ONURxLowDBm and ONURxHighDBm bound the ONU's received power (GPON
	// class B+: -27 .. -8 dBm; class C+ profiles set -30).
	ONURxLowDBm  float64 `yaml:"onu_rx_low_dbm"`
	ONURxHighDBm float64 `yaml:"onu_rx_high_dbm"`
	// OLTRxLowDBm and OLTRxHighDBm bound the OLT-side Rx of an ONU, where
	// the profile reads it.
	OLTRxLowDBm  float64 `yaml:"olt_rx_low_dbm"`
	OLTRxHighDBm float64 `yaml:"olt_rx_high_dbm"`
	// HysteresisDB: an optical alert resolves only this far back inside
	// its threshold, so a reading wobbling at the edge does not flap it.
	HysteresisDB float64 `yaml:"hysteresis_db"`
	// DriftDB: an ONU whose Rx dropped more than this against its
	// baseline (the median of its daily means over DriftDays) while still
	// above the low threshold gets an onu_rx_drift warning.
	DriftDB   float64 `yaml:"drift_db"`
	DriftDays int     `yaml:"drift_days"`
	// FlapChanges status changes within FlapWindow make an ONU flapping.
	FlapChanges int           `yaml:"flap_changes"`
	FlapWindow  time.Duration `yaml:"flap_window"`
	// A PON outage: at least PONOutageONUs ONUs, or PONOutagePercent of
	// the PON's ONUs (and at least 2), went down within the outage
	// window: OutageCycles times the OLT's discovery interval (the longest
	// of the enabled discovery jobs assigned to it), or OutageWindow when
	// the OLT has none or OutageCycles is 0.
	PONOutageONUs    int           `yaml:"pon_outage_onus"`
	PONOutagePercent float64       `yaml:"pon_outage_percent"`
	OutageCycles     int           `yaml:"outage_cycles"`
	OutageWindow     time.Duration `yaml:"outage_window"`
	// An OLT outage: at least OLTOutagePONPercent of the OLT's PONs (and
	// at least 2) are in a PON outage at once.
	OLTOutagePONPercent float64 `yaml:"olt_outage_pon_percent"`
	// ONUDownHold: an ONU down alert waits this long for a PON or OLT
	// outage to cover it before it is notified on its own (an ONU back
	// within it makes no alert at all).
	ONUDownHold time.Duration `yaml:"onu_down_hold"`
	// OLTTemperatureHighC: an OLT whose hottest board is above this fires
	// olt_temperature_high, resolved TemperatureHysteresisC below it.
	OLTTemperatureHighC    float64 `yaml:"olt_temperature_high_c"`
	TemperatureHysteresisC float64 `yaml:"temperature_hysteresis_c"`
	// Disabled rules make no alert.
	Disabled []string `yaml:"disabled"`
}

// DefaultThresholds are the shipped defaults.
func DefaultThresholds() Thresholds {
	return Thresholds{
		ONURxLowDBm: -27, ONURxHighDBm: -8,
		OLTRxLowDBm: -30, OLTRxHighDBm: -8,
		HysteresisDB: 1,
		DriftDB:      3, DriftDays: 7,
		FlapChanges: 4, FlapWindow: 30 * time.Minute,
		PONOutageONUs: 4, PONOutagePercent: 50, OutageCycles: 2, OutageWindow: 10 * time.Minute,
		OLTOutagePONPercent: 50,
		ONUDownHold:         15 * time.Second,
		OLTTemperatureHighC: 70, TemperatureHysteresisC: 3,
	}
}

// MaxFlapChanges bounds FlapChanges (the per-ONU history of status
// changes is this long at most).
const MaxFlapChanges = 64

// MaxDriftDays bounds DriftDays (the per-ONU daily means kept).
const MaxDriftDays = 31

// Override is a section of the rules file: only the keys it sets change.
type Override struct {
	ONURxLowDBm            *float64       `yaml:"onu_rx_low_dbm"`
	ONURxHighDBm           *float64       `yaml:"onu_rx_high_dbm"`
	OLTRxLowDBm            *float64       `yaml:"olt_rx_low_dbm"`
	OLTRxHighDBm           *float64       `yaml:"olt_rx_high_dbm"`
	HysteresisDB           *float64       `yaml:"hysteresis_db"`
	DriftDB                *float64       `yaml:"drift_db"`
	DriftDays              *int           `yaml:"drift_days"`
	FlapChanges            *int           `yaml:"flap_changes"`
	FlapWindow             *time.Duration `yaml:"flap_window"`
	PONOutageONUs          *int           `yaml:"pon_outage_onus"`
	PONOutagePercent       *float64       `yaml:"pon_outage_percent"`
	OutageCycles           *int           `yaml:"outage_cycles"`
	OutageWindow           *time.Duration `yaml:"outage_window"`
	OLTOutagePONPercent    *float64       `yaml:"olt_outage_pon_percent"`
	ONUDownHold            *time.Duration `yaml:"onu_down_hold"`
	OLTTemperatureHighC    *float64       `yaml:"olt_temperature_high_c"`
	TemperatureHysteresisC *float64       `yaml:"temperature_hysteresis_c"`
	Disabled               []string       `yaml:"disabled"`
}

func (o Override) apply(t Thresholds) Thresholds {
	setF := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	setI := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	setD := func(dst *time.Duration, v *time.Duration) {
		if v != nil {
			*dst = *v
		}
	}
	setF(&t.ONURxLowDBm, o.ONURxLowDBm)
	setF(&t.ONURxHighDBm, o.ONURxHighDBm)
	setF(&t.OLTRxLowDBm, o.OLTRxLowDBm)
	setF(&t.OLTRxHighDBm, o.OLTRxHighDBm)
	setF(&t.HysteresisDB, o.HysteresisDB)
	setF(&t.DriftDB, o.DriftDB)
	setI(&t.DriftDays, o.DriftDays)
	setI(&t.FlapChanges, o.FlapChanges)
	setD(&t.FlapWindow, o.FlapWindow)
	setI(&t.PONOutageONUs, o.PONOutageONUs)
	setF(&t.PONOutagePercent, o.PONOutagePercent)
	setI(&t.OutageCycles, o.OutageCycles)
	setD(&t.OutageWindow, o.OutageWindow)
	setF(&t.OLTOutagePONPercent, o.OLTOutagePONPercent)
	setD(&t.ONUDownHold, o.ONUDownHold)
	setF(&t.OLTTemperatureHighC, o.OLTTemperatureHighC)
	setF(&t.TemperatureHysteresisC, o.TemperatureHysteresisC)
	if o.Disabled != nil {
		t.Disabled = append([]string(nil), o.Disabled...)
	}
	return t
}

// Rules is the rules configuration (FACHO_ALERT_RULES, YAML): defaults
// for every OLT, then sections per vendor profile (the brand's profile
// name, or its brand id) and per OLT id.
type Rules struct {
	Defaults Override            `yaml:"defaults"`
	Profiles map[string]Override `yaml:"profiles"`
	OLTs     map[string]Override `yaml:"olts"`
	// Global are the environment's overrides of the defaults, applied
	// after the shipped defaults and before the file's defaults section.
	Global Override `yaml:"-"`
}

// LoadRules reads a rules file; "" is no file (the defaults).
func LoadRules(path string) (Rules, error) {
	var r Rules
	if path == "" {
		return r, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("read alert rules: %w", err)
	}
	if len(b) > 1<<20 {
		return r, fmt.Errorf("alert rules %s: larger than 1 MiB", path)
	}
	dec := yaml.NewDecoder(bytesReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil && !errors.Is(err, errEOF) {
		return r, fmt.Errorf("parse alert rules %s: %w", path, err)
	}
	return r, nil
}

// For returns the thresholds of an OLT with the given vendor profile.
func (r Rules) For(oltID, profile string) Thresholds {
	t := r.Global.apply(DefaultThresholds())
	t = r.Defaults.apply(t)
	if o, ok := r.Profiles[profile]; ok && profile != "" {
		t = o.apply(t)
	}
	if o, ok := r.OLTs[oltID]; ok {
		t = o.apply(t)
	}
	return t
}

// Validate checks every section as it would apply.
func (r Rules) Validate() error {
	var errs []error
	check := func(where string, t Thresholds) {
		if err := t.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	check("defaults", r.For("", ""))
	for _, p := range sortedKeys(r.Profiles) {
		check("profiles."+p, r.Profiles[p].apply(r.For("", "")))
	}
	for _, o := range sortedKeys(r.OLTs) {
		check("olts."+o, r.For(o, ""))
	}
	if len(r.Profiles)+len(r.OLTs) > 100000 {
		errs = append(errs, errors.New("more than 100000 profile and OLT sections"))
	}
	return errors.Join(errs...)
}

// Validate checks one set of thresholds.
func (t Thresholds) Validate() error {
	var errs []error
	finite := func(name string, v float64) bool {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("%s: not a number", name))
			return false
		}
		return true
	}
	for _, p := range []struct {
		name      string
		low, high float64
	}{{"onu_rx", t.ONURxLowDBm, t.ONURxHighDBm}, {"olt_rx", t.OLTRxLowDBm, t.OLTRxHighDBm}} {
		if finite(p.name+"_low_dbm", p.low) && finite(p.name+"_high_dbm", p.high) {
			if p.low < -60 || p.high > 20 || p.low >= p.high {
				errs = append(errs, fmt.Errorf("%s_low_dbm %g / %s_high_dbm %g: want -60 <= low < high <= 20", p.name, p.low, p.name, p.high))
			}
		}
	}
	if finite("hysteresis_db", t.HysteresisDB) && (t.HysteresisDB < 0 || t.HysteresisDB > 10) {
		errs = append(errs, fmt.Errorf("hysteresis_db %g: want 0..10", t.HysteresisDB))
	}
	if finite("drift_db", t.DriftDB) && (t.DriftDB <= 0 || t.DriftDB > 30) {
		errs = append(errs, fmt.Errorf("drift_db %g: want > 0 and <= 30", t.DriftDB))
	}
	if t.DriftDays < 1 || t.DriftDays > MaxDriftDays {
		errs = append(errs, fmt.Errorf("drift_days %d: want 1..%d", t.DriftDays, MaxDriftDays))
	}
	if t.FlapChanges < 1 || t.FlapChanges >= MaxFlapChanges {
		errs = append(errs, fmt.Errorf("flap_changes %d: want 1..%d", t.FlapChanges, MaxFlapChanges-1))
	}
	if t.FlapWindow < time.Minute || t.FlapWindow > 24*time.Hour {
		errs = append(errs, fmt.Errorf("flap_window %s: want 1m..24h", t.FlapWindow))
	}
	if t.PONOutageONUs < 2 || t.PONOutageONUs > MaxONUsPerPON {
		errs = append(errs, fmt.Errorf("pon_outage_onus %d: want 2..%d", t.PONOutageONUs, MaxONUsPerPON))
	}
	if finite("pon_outage_percent", t.PONOutagePercent) && (t.PONOutagePercent <= 0 || t.PONOutagePercent > 100) {
		errs = append(errs, fmt.Errorf("pon_outage_percent %g: want > 0 and <= 100", t.PONOutagePercent))
	}
	if t.OutageCycles < 0 || t.OutageCycles > 100 {
		errs = append(errs, fmt.Errorf("outage_cycles %d: want 0..100 (0: always outage_window)", t.OutageCycles))
	}
	if t.OutageWindow < time.Second || t.OutageWindow > 24*time.Hour {
		errs = append(errs, fmt.Errorf("outage_window %s: want 1s..24h", t.OutageWindow))
	}
	if finite("olt_outage_pon_percent", t.OLTOutagePONPercent) && (t.OLTOutagePONPercent <= 0 || t.OLTOutagePONPercent > 100) {
		errs = append(errs, fmt.Errorf("olt_outage_pon_percent %g: want > 0 and <= 100", t.OLTOutagePONPercent))
	}
	if t.ONUDownHold < 0 || t.ONUDownHold > time.Hour {
		errs = append(errs, fmt.Errorf("onu_down_hold %s: want 0..1h", t.ONUDownHold))
	}
	if finite("olt_temperature_high_c", t.OLTTemperatureHighC) && (t.OLTTemperatureHighC < 20 || t.OLTTemperatureHighC > 150) {
		errs = append(errs, fmt.Errorf("olt_temperature_high_c %g: want 20..150", t.OLTTemperatureHighC))
	}
	if finite("temperature_hysteresis_c", t.TemperatureHysteresisC) && (t.TemperatureHysteresisC < 0 || t.TemperatureHysteresisC > 20) {
		errs = append(errs, fmt.Errorf("temperature_hysteresis_c %g: want 0..20", t.TemperatureHysteresisC))
	}
	for _, d := range t.Disabled {
		if !knownRule(d) {
			errs = append(errs, fmt.Errorf("disabled: unknown rule %q (one of %v)", d, AllRules()))
		}
	}
	return errors.Join(errs...)
}

// Enabled tells whether rule makes alerts under t.
func (t Thresholds) Enabled(rule string) bool {
	for _, d := range t.Disabled {
		if d == rule {
			return false
		}
	}
	return true
}

// AllRules lists the rules the alerter evaluates.
func AllRules() []string {
	return []string{streams.RuleONUDown, streams.RuleONURxLow, streams.RuleONURxHigh, streams.RuleOLTRxLow, streams.RuleOLTRxHigh,
		streams.RuleONURxDrift, streams.RuleONUFlapping, streams.RulePONOutage, streams.RuleOLTOutage, streams.RuleOLTUnreachable,
		streams.RuleOLTEmptyRead, streams.RuleQuotaViolation, streams.RuleOLTAutoDisabled,
		streams.RulePONPortDown, streams.RuleOLTTemperatureHigh, streams.RuleOLTPSUFailed, streams.RuleOLTFanFailed}
}

func knownRule(r string) bool {
	for _, k := range AllRules() {
		if k == r {
			return true
		}
	}
	return false
}

// severityOf is each rule's severity.
func severityOf(rule string) string {
	switch rule {
	case streams.RulePONOutage, streams.RuleOLTOutage, streams.RuleOLTUnreachable, streams.RuleOLTAutoDisabled,
		streams.RulePONPortDown, streams.RuleOLTTemperatureHigh:
		return streams.SeverityCritical
	case streams.RuleOLTPSUFailed, streams.RuleOLTFanFailed:
		return streams.SeverityWarning
	case streams.RuleONURxDrift, streams.RuleQuotaViolation, streams.RuleONUFlapping:
		return streams.SeverityWarning
	case streams.RuleONUDown, streams.RuleONURxLow, streams.RuleONURxHigh, streams.RuleOLTRxLow, streams.RuleOLTRxHigh, streams.RuleOLTEmptyRead:
		return streams.SeverityWarning
	}
	return streams.SeverityInfo
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
