package oltsim

import "fmt"

// SetONUOnline brings the ONU whose row index (ONU.Index) is index online
// or takes it offline, as a Life tick would: an offline ONU keeps its
// authorisation row and, depending on the profile, loses its optical row
// or reports "no reading". Tests use it to script one ONU's life.
func (o *OLT) SetONUOnline(index string, online bool) error {
	if o.prof == nil {
		return fmt.Errorf("olt %s serves a recording: its ONUs cannot change", o.name)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.onus {
		s := &o.onus[i]
		if o.prof.rowIndex(s).String() != index {
			continue
		}
		if s.online != online {
			o.mutableONUs()
			s = &o.onus[i]
			s.online = online
			if !online {
				s.downCause = 2 // LOS, as a Life tick draws it
			}
			o.mib.Store(nil) // rebuilt from the new state on the next request
		}
		return nil
	}
	return fmt.Errorf("olt %s has no onu with index %s", o.name, index)
}
