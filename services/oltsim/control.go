package oltsim

import (
	"fmt"
	"math"
)

// Rx power bounds SetONURxPower accepts, in dBm: wider than any GPON
// budget (class C+ sensitivity is -32 dBm, overload -8), narrow enough for
// every profile's encoding.
const (
	MinRxPowerDBm = -40.0
	MaxRxPowerDBm = 10.0
)

// SetONUOnline brings the ONU whose row index (ONU.Index) is index online
// or takes it offline, as a Life tick would: an offline ONU keeps its
// authorisation row and, depending on the profile, loses its optical row
// or reports "no reading". Tests use it to script one ONU's life.
func (o *OLT) SetONUOnline(index string, online bool) error {
	return o.PatchONU(index, ONUPatch{Online: &online})
}

// SetONURxPower sets the received optical power of the ONU whose row index
// is index, in dBm (0.01 dB resolution, MinRxPowerDBm..MaxRxPowerDBm): a
// power drop, a repaired fibre. An offline ONU keeps the value and serves
// it once it is back online. Tests use it to script one ONU's life.
func (o *OLT) SetONURxPower(index string, dbm float64) error {
	return o.PatchONU(index, ONUPatch{RxPowerDBm: &dbm})
}

// ONU returns the ground truth of the ONU whose row index is index.
func (o *OLT) ONU(index string) (ONU, bool) {
	if o.prof == nil {
		return ONU{}, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.onus {
		if o.prof.rowIndex(&o.onus[i]).String() == index {
			return o.onus[i].public(o.prof), true
		}
	}
	return ONU{}, false
}

// updateONU applies change to the ONU whose row index is index, on a copy
// of the records when a view serves them (requests in flight keep the
// view they started with); change says whether it changed anything.
func (o *OLT) updateONU(index string, change func(s *onuState) bool) error {
	if o.prof == nil {
		return fmt.Errorf("olt %s serves a recording: its ONUs cannot change", o.name)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.onus {
		if o.prof.rowIndex(&o.onus[i]).String() != index {
			continue
		}
		next := o.onus[i]
		if !change(&next) {
			return nil
		}
		o.mutableONUs()
		o.onus[i] = next
		o.mib.Store(nil) // rebuilt from the new state on the next request
		return nil
	}
	return fmt.Errorf("olt %s has no onu with index %s", o.name, index)
}

// ONUPatch is a change of one ONU for the control API (PATCH
// /olts/{name}/onus/{index}); absent fields stay as they are.
type ONUPatch struct {
	Online     *bool    `json:"online,omitempty"`
	RxPowerDBm *float64 `json:"rx_power_dbm,omitempty"`
	// DownCause of an ONU taken offline: "los" (default) or "dying_gasp"
	// (a power failure at the customer's): its last down cause and the
	// trap it sends.
	DownCause string `json:"down_cause,omitempty"`
}

// Down causes of ONUPatch.DownCause.
const (
	DownCauseLOS       = "los"
	DownCauseDyingGasp = "dying_gasp"
)

// PatchONU applies p to the ONU whose row index is index, both fields at
// once: no request sees one changed without the other.
func (o *OLT) PatchONU(index string, p ONUPatch) error {
	if p.Online == nil && p.RxPowerDBm == nil {
		return fmt.Errorf("olt %s onu %s: nothing to change: want online and/or rx_power_dbm", o.name, index)
	}
	if p.DownCause != "" && p.DownCause != DownCauseLOS && p.DownCause != DownCauseDyingGasp {
		return fmt.Errorf("olt %s onu %s: down_cause %q: want los or dying_gasp", o.name, index, p.DownCause)
	}
	var centi int16
	if p.RxPowerDBm != nil {
		c, err := rxCenti(*p.RxPowerDBm)
		if err != nil {
			return fmt.Errorf("olt %s onu %s: %w", o.name, index, err)
		}
		centi = c
	}
	return o.updateONU(index, func(s *onuState) bool {
		changed := false
		if p.RxPowerDBm != nil && s.rxCenti != centi {
			s.rxCenti, changed = centi, true
		}
		if p.Online != nil && s.online != *p.Online {
			s.online, changed = *p.Online, true
			if !s.online {
				s.downCause = 2 // LOS, as a Life tick draws it
				if p.DownCause == DownCauseDyingGasp {
					s.downCause = causeDyingGasp
				}
			}
			o.onuChanged(s)
		}
		return changed
	})
}

// rxCenti checks an Rx power in dBm and returns it in 0.01 dB.
func rxCenti(dbm float64) (int16, error) {
	if math.IsNaN(dbm) || dbm < MinRxPowerDBm || dbm > MaxRxPowerDBm {
		return 0, fmt.Errorf("rx power %g dBm: want %g..%g", dbm, MinRxPowerDBm, MaxRxPowerDBm)
	}
	return int16(math.Round(dbm * 100)), nil
}
