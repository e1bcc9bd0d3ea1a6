package profiles

import (
	"encoding/hex"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/facho-olt/facho/streams"
)

// healthValue is one decoded health value: a number, a text, or none.
type healthValue struct {
	num   float64
	text  string
	isNum bool
}

// maxRawHealthRows bounds the rows of a table kept before its type filter
// (an IF-MIB ifTable of an OLT with ONT interfaces holds thousands); at most
// streams.MaxHealthRows of the kept rows are reported.
const maxRawHealthRows = 16 * streams.MaxHealthRows

// healthRow is one row of a health table: field -> value.
type healthRow map[string]healthValue

// DecodeHealth decodes the varbinds a health job read (specs are its OIDs,
// with Field streams.HealthField) into a reading; the caller sets the ids
// and time. Tables lists every table a spec names, read empty or not.
// Varbinds without a value, undecodable ones and rows past
// streams.MaxHealthRows are counted in Skipped. Several specs may share an
// OID (an IF-MIB column read for PON ports and uplinks): a varbind feeds
// each.
func DecodeHealth(specs []streams.OIDSpec, vbs []streams.Varbind) streams.OLTHealth {
	type col struct {
		prefix       string
		table, field string
		dec          streams.Decoder
	}
	var cols []col
	tableSet := map[string]bool{}
	hasType := map[string]bool{}
	for _, s := range specs {
		table, field, ok := streams.ParseHealthField(s.Field)
		if !ok {
			continue
		}
		cols = append(cols, col{prefix: strings.Trim(s.OID, ".") + ".", table: table, field: field, dec: s.Decoder})
		tableSet[table] = true
		if field == streams.HFType {
			hasType[table] = true
		}
	}
	var h streams.OLTHealth
	for _, t := range streams.HealthTables() {
		if tableSet[t] {
			h.Tables = append(h.Tables, t)
		}
	}
	rows := map[string]map[string]healthRow{} // table -> index -> row
	for _, vb := range vbs {
		oid := strings.TrimPrefix(vb.OID, ".")
		fed := false
		for _, c := range cols {
			idx, ok := strings.CutPrefix(oid, c.prefix)
			if !ok || idx == "" {
				continue
			}
			v, ok := decodeHealthValue(c.field, c.dec, vb)
			if !ok {
				continue
			}
			t := rows[c.table]
			if t == nil {
				t = map[string]healthRow{}
				rows[c.table] = t
			}
			r := t[idx]
			if r == nil {
				if len(t) >= maxRawHealthRows {
					continue
				}
				r = healthRow{}
				t[idx] = r
			}
			r[c.field] = v
			fed = true
		}
		if !fed {
			h.Skipped++
		}
	}
	for table, t := range rows {
		if !hasType[table] {
			continue
		}
		for idx, r := range t {
			// The type enum maps the kept types; any other is UNKNOWN.
			if v, ok := r[streams.HFType]; !ok || v.text == "" || v.text == "UNKNOWN" {
				delete(t, idx)
			}
		}
	}
	for _, t := range rows {
		for _, idx := range sortedIndexes(t)[min(len(t), streams.MaxHealthRows):] {
			h.Skipped += len(t[idx])
			delete(t, idx)
		}
	}
	if tableSet[streams.HealthChassis] {
		h.Chassis = chassisOf(rows[streams.HealthChassis])
	}
	for _, idx := range sortedIndexes(rows[streams.HealthFans]) {
		h.Fans = append(h.Fans, unitOf(idx, rows[streams.HealthFans][idx]))
	}
	for _, idx := range sortedIndexes(rows[streams.HealthPSUs]) {
		h.PSUs = append(h.PSUs, unitOf(idx, rows[streams.HealthPSUs][idx]))
	}
	for _, idx := range sortedIndexes(rows[streams.HealthPONs]) {
		r := rows[streams.HealthPONs][idx]
		p := streams.PONHealth{PonIndex: -1, Index: idx, Name: r.text(streams.HFName), AdminState: r.text(streams.HFAdminState),
			OperState: r.text(streams.HFOperState), TxPowerDBm: r.num(streams.HFTxPower), RxPowerDBm: r.num(streams.HFRxPower),
			TemperatureC: r.num(streams.HFTemperature), ONUCount: r.count(streams.HFONUCount)}
		if n, err := strconv.ParseInt(idx, 10, 64); err == nil {
			p.PonIndex = n
		}
		h.PONs = append(h.PONs, p)
	}
	for _, idx := range sortedIndexes(rows[streams.HealthUplinks]) {
		r := rows[streams.HealthUplinks][idx]
		h.Uplinks = append(h.Uplinks, streams.UplinkHealth{Index: idx, Name: r.text(streams.HFName), AdminState: r.text(streams.HFAdminState),
			OperState: r.text(streams.HFOperState), InErrors: r.count(streams.HFInErrors), OutErrors: r.count(streams.HFOutErrors)})
	}
	return h
}

func chassisOf(rows map[string]healthRow) *streams.ChassisHealth {
	c := &streams.ChassisHealth{}
	maxOf := func(field string) *float64 {
		var out *float64
		for _, r := range rows {
			if v := r.num(field); v != nil && (out == nil || *v > *out) {
				out = v
			}
		}
		return out
	}
	c.CPUPercent, c.MemoryPercent, c.TemperatureC = maxOf(streams.HFCPUPercent), maxOf(streams.HFMemoryPercent), maxOf(streams.HFTemperature)
	for _, r := range rows {
		if len(r) > 0 {
			c.Boards++
		}
	}
	return c
}

func unitOf(idx string, r healthRow) streams.UnitHealth {
	u := streams.UnitHealth{Index: idx, Name: r.text(streams.HFName), Status: r.text(streams.HFStatus)}
	if u.Status == "" {
		u.Status = streams.UnitUnknown
	}
	return u
}

func (r healthRow) text(field string) string {
	if v, ok := r[field]; ok && !v.isNum {
		return v.text
	}
	return ""
}

func (r healthRow) num(field string) *float64 {
	if v, ok := r[field]; ok && v.isNum {
		f := v.num
		return &f
	}
	return nil
}

func (r healthRow) count(field string) *int64 {
	if v, ok := r[field]; ok && v.isNum && v.num >= 0 && v.num < math.MaxInt64/2 {
		n := int64(v.num)
		return &n
	}
	return nil
}

// sortedIndexes are the row indexes of a table in OID order.
func sortedIndexes(t map[string]healthRow) []string {
	out := make([]string, 0, len(t))
	for k := range t {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return lessIndex(out[i], out[j]) })
	return out
}

// lessIndex orders dotted row indexes arc by arc, numerically.
func lessIndex(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errx := strconv.ParseUint(as[i], 10, 64)
		y, erry := strconv.ParseUint(bs[i], 10, 64)
		if errx != nil || erry != nil {
			if as[i] != bs[i] {
				return as[i] < bs[i]
			}
			continue
		}
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

// decodeHealthValue decodes one varbind of a health column; false: no
// value (an exception, no reading) or undecodable.
func decodeHealthValue(field string, dec streams.Decoder, vb streams.Varbind) (healthValue, bool) {
	switch vb.Type {
	case streams.VTNull, streams.VTNoSuchObject, streams.VTNoSuchInstance, streams.VTEndOfMibView:
		return healthValue{}, false
	}
	switch dec.Kind {
	case "string":
		s, ok := octetText(vb)
		return healthValue{text: s}, ok
	case "int", "scaled":
		n, err := strconv.ParseInt(strings.TrimSpace(vb.Value), 10, 64)
		if err != nil || vb.Type == streams.VTOctetString {
			// Counter64 above MaxInt64: not a health value anyway.
			return healthValue{}, false
		}
		if dec.NoReading != nil && n == *dec.NoReading {
			return healthValue{}, false
		}
		f := float64(n)
		if dec.Kind == "scaled" {
			scale := dec.Scale
			if scale == 0 {
				scale = 1
			}
			f = math.Round((f*scale+dec.Offset)*1e6) / 1e6
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return healthValue{}, false
		}
		return healthValue{num: f, isNum: true}, true
	case "float_string":
		s, ok := octetText(vb)
		if !ok {
			return healthValue{}, false
		}
		f, err := strconv.ParseFloat(strings.Fields(s + " x")[0], 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return healthValue{}, false
		}
		return healthValue{num: f, isNum: true}, true
	case "enum":
		n, err := strconv.ParseInt(strings.TrimSpace(vb.Value), 10, 64)
		if err != nil || vb.Type == streams.VTOctetString {
			return healthValue{}, false
		}
		if s, ok := dec.Enum[strconv.FormatInt(n, 10)]; ok {
			return healthValue{text: s}, true
		}
		if streams.HealthStates(field) != nil {
			return healthValue{text: streams.UnitUnknown}, true // "unknown" is a state of every stated field
		}
		return healthValue{text: "UNKNOWN"}, true
	}
	return healthValue{}, false
}

// octetText is an OctetString as bounded, trimmed, valid UTF-8 text.
func octetText(vb streams.Varbind) (string, bool) {
	s := vb.Value
	if vb.Type == streams.VTOctetString {
		b, err := hex.DecodeString(vb.Value)
		if err != nil {
			return "", false
		}
		s = string(b)
	}
	s = strings.ToValidUTF8(strings.TrimSpace(strings.ReplaceAll(s, "\x00", "")), "\uFFFD")
	if len(s) > streams.MaxHealthText {
		s = s[:streams.MaxHealthText]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s, true
}
