package projector

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/facho-olt/facho/streams"
)

// The profile language's row rules and value decoders: an ONU named by a
// column's value (an IF-MIB name), rows filtered by their values, rows of
// one ONU grouped, numbers captured from text and converted to dBm.

// rowValues holds, per row index of a batch, the texts of the columns the
// index definition's key and filters read; nil for a definition without
// them.
type rowValues struct {
	parser *streams.IndexParser
	keyed  bool
	read   map[string]bool              // OIDs the batch reads (of those needed)
	vals   map[string]map[string]string // row index -> OID -> text
}

// newRowValues collects the key and filter columns' values of b.
func newRowValues(parser *streams.IndexParser, cols []column, b streams.VarbindBatch) *rowValues {
	if !parser.HasRowRules() {
		return nil
	}
	rv := &rowValues{parser: parser, read: map[string]bool{}, vals: map[string]map[string]string{}}
	need := map[string]bool{}
	for _, oid := range parser.RowOIDs() {
		need[oid] = true
	}
	rv.keyed = len(parser.RowOIDs()) > 0 && keyedSpec(b.Index)
	byPos := map[int]*column{}
	for i := range cols {
		c := &cols[i]
		oid := strings.TrimSuffix(c.prefix, ".")
		if c.primary && need[oid] {
			rv.read[oid] = true
			byPos[c.pos] = c
		}
	}
	if len(byPos) == 0 {
		return rv
	}
	keep := func(c *column, suffix string, vb streams.Varbind) {
		switch vb.Type {
		case streams.VTNull, streams.VTNoSuchObject, streams.VTNoSuchInstance, streams.VTEndOfMibView:
			return
		}
		t, err := text(vb)
		if err != nil {
			return
		}
		m := rv.vals[suffix]
		if m == nil {
			m = map[string]string{}
			rv.vals[suffix] = m
		}
		m[strings.TrimSuffix(c.prefix, ".")] = t
	}
	for _, vb := range b.Varbinds {
		i, suffix, ok := match(cols, strings.TrimPrefix(vb.OID, "."))
		if ok && byPos[cols[i].pos] != nil {
			keep(&cols[i], suffix, vb)
		}
	}
	for _, r := range b.Rows {
		for _, v := range r.Values {
			if c := byPos[v.Column]; c != nil && !c.shadowed {
				keep(c, r.Index, streams.Varbind{Type: v.Type, Value: v.Value})
			}
		}
	}
	return rv
}

func keyedSpec(spec *streams.IndexSpec) bool { return spec != nil && spec.Key != nil }

// parse reads a row index with its row's values.
func (rv *rowValues) parse(suffix string) (streams.ParsedIndex, error) {
	row := rv.vals[suffix]
	return rv.parser.ParseRow(suffix,
		func(oid string) (string, bool) { t, ok := row[oid]; return t, ok },
		func(oid string) bool { return rv.read[oid] })
}

// claim says whether the row of pi may set fields of its ONU: the first
// row that names an ONU owns it; a later row of the same ONU (an IF-MIB
// ONT's other interfaces) only fills fields still unset.
func (d *Decoded) claim(col *column, pi streams.ParsedIndex) bool {
	key := ONUKey{PonIndex: pi.PonIndex, ONUID: pi.ONUID}
	if d.owner == nil {
		d.owner = map[ONUKey]string{}
	}
	owner, ok := d.owner[key]
	if !ok {
		d.owner[key] = pi.Index
		return true
	}
	if owner == pi.Index {
		return true
	}
	f := d.ONUs[key]
	return f == nil || !f.has(col.spec.Field)
}

// has says whether the batch already set field.
func (f *ONUFields) has(field string) bool {
	switch field {
	case streams.FieldSerial:
		return f.Serial != nil
	case streams.FieldDescription:
		return f.Description != nil
	case streams.FieldStatus:
		return f.Status != nil
	case streams.FieldRxPower:
		return f.RxPowerSet
	}
	if _, ok := f.Text[field]; ok {
		return true
	}
	if _, ok := f.Num[field]; ok {
		return true
	}
	_, ok := f.Time[field]
	return ok
}

// decodeRegex captures a number or text from a varbind's text: the named
// group, else the first group, else the whole match. A capture that reads
// as a number (a decimal comma is taken for a point) is a number, in
// dec.Unit; no match, or a unit and no number, is no reading.
func decodeRegex(dec streams.Decoder, re *regexp.Regexp, vb streams.Varbind) (value, error) {
	s, err := text(vb)
	if err != nil {
		return value{}, err
	}
	if dec.Trim {
		s = strings.TrimSpace(s)
	}
	m := re.FindStringSubmatch(s)
	if m == nil {
		return value{kind: kindNull}, nil
	}
	g := 0
	switch {
	case dec.Group != "":
		g = re.SubexpIndex(dec.Group)
	case re.NumSubexp() > 0:
		g = 1
	}
	t := m[g]
	if f, ok := wholeFloat(t); ok {
		v, err := numberIn(dec.Unit, f, nil)
		if v.kind == kindNumber && dec.Unit == "" {
			v.text = t
		}
		return v, err
	}
	if dec.Unit != "" || t == "" {
		return value{kind: kindNull}, nil
	}
	return value{text: t}, nil
}

// wholeFloat parses t, blanks around it allowed, as a decimal number with
// a point or a single decimal comma ("-27,5").
func wholeFloat(t string) (float64, bool) {
	t = strings.TrimSpace(t)
	if strings.Count(t, ",") == 1 && !strings.Contains(t, ".") {
		t = strings.Replace(t, ",", ".", 1)
	}
	if t == "" || len(t) > 64 || strings.ContainsAny(t, "xXpP_") || strings.EqualFold(strings.TrimLeft(t, "+-"), "inf") ||
		strings.EqualFold(strings.TrimLeft(t, "+-"), "infinity") || strings.EqualFold(t, "nan") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// numberIn is the number f, read in unit, as a value in dBm (or as is
// without a unit). A power of 0 or less has no dBm: no reading.
func numberIn(unit string, f float64, err error) (value, error) {
	if err != nil {
		return value{}, err
	}
	switch unit {
	case streams.UnitMW, streams.UnitUW:
		if f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return value{kind: kindNull}, nil
		}
		if unit == streams.UnitUW {
			f /= 1000
		}
		f = 10 * math.Log10(f)
	}
	f = round6(f)
	return value{kind: kindNumber, num: f, text: strconv.FormatFloat(f, 'f', -1, 64)}, nil
}
