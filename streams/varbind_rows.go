package streams

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/invopop/jsonschema"
)

// VarbindBatchVersion is the current version of varbind.batch. Version 2
// added Rows: the varbinds of a table grouped by row (one ONU), each value
// naming its column by position, so a batch carries every column of an
// ONU together and each OID's prefix is not repeated; about a fifth of
// version 1's bytes. Version 1 batches (Varbinds only) stay readable:
// a version 2 reader decodes them unchanged.
const VarbindBatchVersion = 2

// EventVersion: see VarbindBatchVersion.
func (VarbindBatch) EventVersion() int { return VarbindBatchVersion }

// EventMinVersion: version 1 batches decode as version 2 without Rows.
func (VarbindBatch) EventMinVersion() int { return 1 }

// VarbindRow is one table row read in one execution: Index is the OID
// suffix after the column OIDs ("4194304000.1"), Values the row's
// varbinds, each with the position of its column in VarbindBatch.Columns.
// The varbind of value v is Columns[v.Column].OID + "." + Index.
//
// On the wire a row is compact: ["<index>", col, "t", "value", col, "t",
// "value", ...] with one-letter type codes (see TypeCode).
type VarbindRow struct {
	Index  string
	Values []RowValue
}

// RowValue is one varbind of a row: its column's position, its type (VT*)
// and value as in Varbind.
type RowValue struct {
	Column int
	Type   string
	Value  string
}

// typeCodes are the wire codes of the common varbind types; any other
// type is written with its full name (never one letter).
var typeCodes = map[string]string{
	VTInteger: "i", VTOctetString: "s", VTOID: "o", VTIPAddress: "a", VTCounter32: "c", VTGauge32: "g",
	VTTimeTicks: "t", VTCounter64: "C", VTNull: "n", VTNoSuchObject: "O", VTNoSuchInstance: "N",
	VTEndOfMibView: "E", VTOpaque: "q",
}

// typesByCode is typeCodes reversed.
var typesByCode = func() map[string]string {
	m := make(map[string]string, len(typeCodes))
	for t, c := range typeCodes {
		m[c] = t
	}
	return m
}()

// TypeCode is the wire code of varbind type t in a VarbindRow.
func TypeCode(t string) string {
	if c, ok := typeCodes[t]; ok {
		return c
	}
	return t
}

func typeFromCode(c string) string {
	if t, ok := typesByCode[c]; ok {
		return t
	}
	return c
}

// MarshalJSON writes the compact form (AppendVarbindRow).
func (r VarbindRow) MarshalJSON() ([]byte, error) {
	return AppendVarbindRow(make([]byte, 0, 16+len(r.Index)+16*len(r.Values)), r), nil
}

// AppendVarbindRow appends r's compact form to w, byte for byte what
// encoding/json writes for it inside a batch: hand-written encoders of
// varbind.batch (the poller's) use it.
func AppendVarbindRow(w []byte, r VarbindRow) []byte {
	w = append(w, '[')
	w = AppendJSONString(w, r.Index)
	for _, v := range r.Values {
		w = append(w, ',')
		w = strconv.AppendInt(w, int64(v.Column), 10)
		w = append(w, ',')
		w = AppendJSONString(w, TypeCode(v.Type))
		w = append(w, ',')
		w = AppendJSONString(w, v.Value)
	}
	return append(w, ']')
}

// AppendJSONString appends s quoted as encoding/json does (HTML-safe):
// directly when it has only printable ASCII that needs no escaping (hex,
// decimal and dotted values, ids), through encoding/json otherwise.
func AppendJSONString(w []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(w, q...)
		}
	}
	w = append(w, '"')
	w = append(w, s...)
	return append(w, '"')
}

// UnmarshalJSON reads the compact form.
func (r *VarbindRow) UnmarshalJSON(data []byte) error {
	// The projector decodes millions of rows a minute: a row as
	// AppendVarbindRow writes it is read in one pass; anything else
	// (whitespace, escapes, other number forms) by encoding/json.
	if fastRow(data, r) {
		return nil
	}
	return r.unmarshalSlow(data)
}

// fastRow reads a row written by AppendVarbindRow: no whitespace, strings
// without escapes, columns as plain non-negative integers. It reports
// false, leaving the rest to unmarshalSlow, for anything else.
func fastRow(data []byte, r *VarbindRow) bool {
	i := 0
	str := func() (string, bool) {
		if i >= len(data) || data[i] != '"' {
			return "", false
		}
		j := i + 1
		for j < len(data) && data[j] != '"' {
			if data[j] == '\\' || data[j] < 0x20 {
				return "", false
			}
			j++
		}
		if j >= len(data) {
			return "", false
		}
		s := string(data[i+1 : j])
		i = j + 1
		return s, true
	}
	sep := func(c byte) bool {
		if i < len(data) && data[i] == c {
			i++
			return true
		}
		return false
	}
	if !sep('[') {
		return false
	}
	idx, ok := str()
	if !ok {
		return false
	}
	values := make([]RowValue, 0, 4)
	for !sep(']') {
		if !sep(',') {
			return false
		}
		col, start := 0, i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' && i-start < 9 {
			col = col*10 + int(data[i]-'0')
			i++
		}
		if i == start || (data[start] == '0' && i-start > 1) || !sep(',') {
			return false
		}
		code, ok := str()
		if !ok || !sep(',') {
			return false
		}
		val, ok := str()
		if !ok {
			return false
		}
		values = append(values, RowValue{Column: col, Type: typeFromCode(code), Value: val})
	}
	if i != len(data) || len(values) == 0 {
		return false
	}
	r.Index, r.Values = idx, values
	return true
}

func (r *VarbindRow) unmarshalSlow(data []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(data, &parts); err != nil {
		return fmt.Errorf("varbind row: %w", err)
	}
	if len(parts) == 0 || (len(parts)-1)%3 != 0 {
		return fmt.Errorf("varbind row: want [index, (column, type, value)...], got %d elements", len(parts))
	}
	if err := json.Unmarshal(parts[0], &r.Index); err != nil {
		return fmt.Errorf("varbind row index: %w", err)
	}
	r.Values = make([]RowValue, 0, (len(parts)-1)/3)
	for i := 1; i < len(parts); i += 3 {
		var v RowValue
		var code string
		if err := json.Unmarshal(parts[i], &v.Column); err != nil {
			return fmt.Errorf("varbind row %s value %d column: %w", r.Index, len(r.Values), err)
		}
		if err := json.Unmarshal(parts[i+1], &code); err != nil {
			return fmt.Errorf("varbind row %s value %d type: %w", r.Index, len(r.Values), err)
		}
		if err := json.Unmarshal(parts[i+2], &v.Value); err != nil {
			return fmt.Errorf("varbind row %s value %d: %w", r.Index, len(r.Values), err)
		}
		v.Type = typeFromCode(code)
		r.Values = append(r.Values, v)
	}
	return nil
}

// VarbindCount is how many varbinds the batch carries (Varbinds and Rows).
func (b VarbindBatch) VarbindCount() int {
	n := len(b.Varbinds)
	for _, r := range b.Rows {
		n += len(r.Values)
	}
	return n
}

// AllVarbinds returns every varbind of the batch in the raw form: Varbinds,
// then each row's values with their full OIDs.
func (b VarbindBatch) AllVarbinds() []Varbind {
	out := make([]Varbind, 0, b.VarbindCount())
	out = append(out, b.Varbinds...)
	for _, r := range b.Rows {
		for _, v := range r.Values {
			oid := ""
			if v.Column >= 0 && v.Column < len(b.Columns) {
				oid = trimDots(b.Columns[v.Column].OID) + "." + r.Index
			}
			out = append(out, Varbind{OID: oid, Type: v.Type, Value: v.Value})
		}
	}
	return out
}

func trimDots(s string) string {
	for len(s) > 0 && s[0] == '.' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// validateRows checks every row value names a column of the batch.
func (b VarbindBatch) validateRows() error {
	for _, r := range b.Rows {
		if r.Index == "" {
			return fmt.Errorf("row without index")
		}
		for _, v := range r.Values {
			if v.Column < 0 || v.Column >= len(b.Columns) {
				return fmt.Errorf("row %s: column %d of %d", r.Index, v.Column, len(b.Columns))
			}
		}
	}
	return nil
}

// JSONSchema describes the compact wire form of a row for schemas/.
func (VarbindRow) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "array",
		Description: `["<row index>", column, "type code", "value", ...]: the row index, then for each varbind the position of its column in columns, its type (one letter: i Integer, s OctetString (hex), o ObjectIdentifier, a IpAddress, c Counter32, g Gauge32, t TimeTicks, C Counter64, n Null, O NoSuchObject, N NoSuchInstance, E EndOfMibView, q Opaque; any other type by its full name) and its value as in varbinds`,
		MinItems:    ptrUint64(1),
		PrefixItems: []*jsonschema.Schema{{Type: "string", MinLength: ptrUint64(1)}},
		Items:       &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "integer", Minimum: json.Number("0")}, {Type: "string"}}},
	}
}

func ptrUint64(v uint64) *uint64 { return &v }
