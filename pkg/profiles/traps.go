package profiles

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/facho-olt/facho/streams"
)

// Traps is a profile's trap map (its YAML traps: section): which of the
// vendor's SNMP traps Facho understands, what each means, and where in
// its varbinds the ONU (or the PON) is. A trap whose OID is not in the
// map is still recorded raw (trap.received); only a mapped one is decoded
// (trap.decoded). The map is validated when the profile is read (a
// profile with a broken map is refused, `facho profiles check` says why).
type Traps []Trap

// Trap maps one vendor trap.
//
//   - id: ont-state            # unique in the profile
//     name: ONT state change
//     oid: 1.3.6.1.4.1.2011.6.128.1.1.2.0.6   # the trap OID
//     kind_from: {oid: 1.3.6.1.4.1.2011.6.128.1.1.2.46.1.15, enum: {"1": online, "2": offline}}
//     onu: {index_of: 1.3.6.1.4.1.2011.6.128.1.1.2.46.1.15}
//
// OID is the trap's snmpTrapOID.0 (SNMPv2c), or for an SNMPv1 trap its
// RFC 3584 form: <enterprise>.0.<specific-trap>.
type Trap struct {
	ID   string `yaml:"id" json:"id"`
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	OID  string `yaml:"oid" json:"oid"`
	// Kind is what the trap means (streams.TrapKinds); or KindFrom, a
	// varbind whose value says it (one trap OID for many alarms).
	Kind     string        `yaml:"kind,omitempty" json:"kind,omitempty"`
	KindFrom *TrapKindFrom `yaml:"kind_from,omitempty" json:"kind_from,omitempty"`
	// ONU says where the ONU's row index is (a PON event: the PON's
	// index); required for the kinds that change an ONU's status.
	ONU *TrapLocator `yaml:"onu,omitempty" json:"onu,omitempty"`
}

// TrapKindFrom reads a trap's kind from a varbind: the first varbind whose
// OID is OID or under it; its value (integer in decimal, or text) through
// Enum. A value not in Enum leaves the trap undecoded (recorded raw).
type TrapKindFrom struct {
	OID  string            `yaml:"oid" json:"oid"`
	Enum map[string]string `yaml:"enum" json:"enum"`
}

// TrapLocator finds the row index in a trap, one of two ways:
//   - IndexOf: the row index is what follows this OID in the OID of the
//     first varbind under it (the trap carries a column of the ONU's row,
//     e.g. its run status);
//   - Values: the row index is these varbinds' integer values joined by
//     dots (a trap carrying the PON and the ONU number as values).
//
// The index is then read with the profile's index scheme, as a polled
// row's would be. For a PON event an index of one integer is the PON's
// index.
type TrapLocator struct {
	IndexOf string   `yaml:"index_of,omitempty" json:"index_of,omitempty"`
	Values  []string `yaml:"values,omitempty" json:"values,omitempty"`
}

// trapsMax bounds a profile's trap map.
const trapsMax = 256

// UnmarshalYAML reads the traps section strictly (unknown keys are errors,
// like the rest of a profile) and validates it.
func (t *Traps) UnmarshalYAML(node *yaml.Node) error {
	b, err := yaml.Marshal(node)
	if err != nil {
		return fmt.Errorf("traps: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var raw []Trap
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("traps: %w", err)
	}
	if err := Traps(raw).Validate(); err != nil {
		return err
	}
	*t = raw
	return nil
}

// Validate checks the trap map: unique ids and trap OIDs, dotted OIDs,
// known kinds, a locator wherever a kind names an ONU.
func (t Traps) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if len(t) > trapsMax {
		add("traps: %d entries, at most %d", len(t), trapsMax)
	}
	ids, oids := map[string]bool{}, map[string]string{}
	for i, tr := range t {
		where := fmt.Sprintf("traps[%d] %q", i, tr.ID)
		if !streams.ValidID(tr.ID) {
			add("%s: id: want 1-64 characters of A-Z a-z 0-9 _ -", where)
		} else if ids[tr.ID] {
			add("%s: id used twice", where)
		}
		ids[tr.ID] = true
		oid := strings.Trim(tr.OID, ".")
		if !oidRE.MatchString(oid) {
			add("%s: oid %q: want a dotted OID", where, tr.OID)
		} else if other, dup := oids[oid]; dup {
			add("%s: oid %s already mapped by %q", where, oid, other)
		}
		oids[oid] = tr.ID
		var kinds []string
		switch {
		case tr.Kind != "" && tr.KindFrom != nil:
			add("%s: kind and kind_from: want one", where)
		case tr.Kind != "":
			kinds = []string{tr.Kind}
		case tr.KindFrom != nil:
			if !oidRE.MatchString(strings.Trim(tr.KindFrom.OID, ".")) {
				add("%s: kind_from.oid %q: want a dotted OID", where, tr.KindFrom.OID)
			}
			if len(tr.KindFrom.Enum) == 0 {
				add("%s: kind_from.enum: at least one value", where)
			}
			for v, k := range tr.KindFrom.Enum {
				if v == "" {
					add("%s: kind_from.enum: an empty value", where)
				}
				kinds = append(kinds, k)
			}
		default:
			add("%s: kind or kind_from is required", where)
		}
		needsONU := false
		for _, k := range kinds {
			if !streams.ValidTrapKind(k) {
				add("%s: kind %q: want one of %s", where, k, strings.Join(streams.TrapKinds(), ", "))
			}
			if streams.TrapONUStatus(k) != "" {
				needsONU = true
			}
		}
		if tr.ONU == nil {
			if needsONU {
				add("%s: onu (where the ONU's index is) is required for an ONU status kind", where)
			}
			continue
		}
		switch l := tr.ONU; {
		case (l.IndexOf == "") == (len(l.Values) == 0):
			add("%s: onu: want index_of or values", where)
		case l.IndexOf != "" && !oidRE.MatchString(strings.Trim(l.IndexOf, ".")):
			add("%s: onu.index_of %q: want a dotted OID", where, l.IndexOf)
		case len(l.Values) > 8:
			add("%s: onu.values: at most 8", where)
		}
		for _, v := range tr.ONU.Values {
			if !oidRE.MatchString(strings.Trim(v, ".")) {
				add("%s: onu.values %q: want a dotted OID", where, v)
			}
		}
	}
	return errors.Join(errs...)
}

// TrapMeaning is a decoded trap.
type TrapMeaning struct {
	Rule     string // the trap map entry's id
	Kind     string
	PonIndex *int64
	ONUID    *int64
	Index    string
	PortName string
}

// TrapDecoder decodes the traps of one profile; it is read-only once
// made, safe for concurrent use.
type TrapDecoder struct {
	profile string
	byOID   map[string]*Trap
	index   *streams.IndexParser
}

// TrapDecoder returns the decoder of p's trap map.
func (p Profile) TrapDecoder() *TrapDecoder {
	d := &TrapDecoder{profile: p.ID, byOID: make(map[string]*Trap, len(p.Traps)), index: p.Index.Parser()}
	for i := range p.Traps {
		d.byOID[strings.Trim(p.Traps[i].OID, ".")] = &p.Traps[i]
	}
	return d
}

// Profile is the id of the decoder's profile.
func (d *TrapDecoder) Profile() string { return d.profile }

// ErrTrapUnmapped: the profile does not map the trap OID.
var ErrTrapUnmapped = errors.New("trap OID not in the profile's trap map")

// Decode reads what a trap means. ErrTrapUnmapped when the profile does
// not map its OID; another error when it does but the trap lacks what the
// map says it carries (a missing varbind, a kind value not in the enum, an
// index the profile's scheme cannot read). It never panics on any input.
func (d *TrapDecoder) Decode(trapOID string, vbs []streams.TrapVarbind) (TrapMeaning, error) {
	tr, ok := d.byOID[strings.Trim(trapOID, ".")]
	if !ok {
		return TrapMeaning{}, ErrTrapUnmapped
	}
	m := TrapMeaning{Rule: tr.ID, Kind: tr.Kind}
	if tr.KindFrom != nil {
		vb, ok := under(vbs, tr.KindFrom.OID)
		if !ok {
			return m, fmt.Errorf("trap %s: no varbind under %s (the kind)", tr.ID, tr.KindFrom.OID)
		}
		k, ok := tr.KindFrom.Enum[vb.Value]
		if !ok {
			return m, fmt.Errorf("trap %s: kind value %q not in the map", tr.ID, bounded(vb.Value))
		}
		m.Kind = k
	}
	if tr.ONU == nil {
		return m, nil
	}
	idx, err := locate(tr, vbs)
	if err != nil {
		return m, err
	}
	pi, err := d.index.Parse(idx)
	if err != nil {
		if streams.TrapONUStatus(m.Kind) == "" {
			// A PON event: an index of one integer is the PON's.
			if n, perr := strconv.ParseInt(idx, 10, 64); perr == nil {
				m.PonIndex, m.Index = &n, idx
				return m, nil
			}
		}
		return m, fmt.Errorf("trap %s: index %q: %w", tr.ID, bounded(idx), err)
	}
	pon, onu := pi.PonIndex, pi.ONUID
	m.PonIndex, m.Index, m.PortName = &pon, pi.Index, pi.PortName
	if m.Kind != streams.TrapKindPONDown && m.Kind != streams.TrapKindPONUp {
		m.ONUID = &onu
	}
	return m, nil
}

// locate builds the row index a trap's locator names.
func locate(tr *Trap, vbs []streams.TrapVarbind) (string, error) {
	l := tr.ONU
	if l.IndexOf != "" {
		prefix := strings.Trim(l.IndexOf, ".")
		vb, ok := under(vbs, prefix)
		if !ok || len(strings.Trim(vb.OID, ".")) <= len(prefix) {
			return "", fmt.Errorf("trap %s: no varbind under %s (the ONU's index)", tr.ID, prefix)
		}
		return strings.Trim(vb.OID, ".")[len(prefix)+1:], nil
	}
	parts := make([]string, 0, len(l.Values))
	for _, oid := range l.Values {
		vb, ok := under(vbs, oid)
		if !ok {
			return "", fmt.Errorf("trap %s: no varbind under %s (part of the ONU's index)", tr.ID, oid)
		}
		v := strings.TrimSpace(vb.Value)
		if _, err := strconv.ParseUint(v, 10, 32); err != nil {
			return "", fmt.Errorf("trap %s: varbind %s: value %q is not an index arc", tr.ID, bounded(vb.OID), bounded(v))
		}
		parts = append(parts, v)
	}
	return strings.Join(parts, "."), nil
}

// under returns the first varbind whose OID is oid or below it.
func under(vbs []streams.TrapVarbind, oid string) (streams.TrapVarbind, bool) {
	oid = strings.Trim(oid, ".")
	for _, vb := range vbs {
		o := strings.Trim(vb.OID, ".")
		if o == oid || (len(o) > len(oid) && o[len(oid)] == '.' && strings.HasPrefix(o, oid)) {
			return vb, true
		}
	}
	return streams.TrapVarbind{}, false
}

// bounded cuts a peer's text for an error message.
func bounded(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
