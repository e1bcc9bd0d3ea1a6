package streams

import (
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// IndexSpec says, as data, how a table's row index (the OID arcs after a
// column) names an ONU. The index is read part by part, left to right:
//
//   - "int": one arc, an unsigned integer; Fields unpack a vendor-packed
//     integer (Huawei's and ZTE's PON ifIndex, FiberHome's row index, Nokia's
//     ONT index) into named bit fields (frame, slot, port, onu, ...);
//   - "string": an OCTET STRING index as SNMP encodes it, a length arc then
//     that many byte arcs (e.g. a table indexed by the ONU serial);
//   - "fixed": Length byte arcs without a length arc (a MAC address);
//   - "implied": every arc left, as bytes (an IMPLIED OCTET STRING, last).
//
// The ONU's key in onu_data (pon_index, onu_id) is made of references to
// what was read (see IndexRef), and PortName is the human name of the ONU
// ("{frame}/{slot}/{port}:{onu}"), a template over the same names.
type IndexSpec struct {
	Parts []IndexPart `json:"parts" yaml:"parts"`
	// Rest says what may follow the parts: "" nothing, "numeric" any
	// number of integer arcs naming no other ONU (ZTE's optical table is
	// indexed <pon>.<onu>.1), ignored.
	Rest string `json:"rest,omitempty" yaml:"rest,omitempty"`
	// PonIndex and ONUID are references to what was read: a part or field
	// name ("pon"), one shifted left ("slot<<8"), a packed part keeping
	// only some of its fields' bits ("index[slot,pon]"), a string part
	// hashed to an integer ("hash(serial)", FNV-1a, 31 bits), a constant,
	// or a sum of those ("285278208+slot<<8+port": a table indexed in
	// another tree lands on the same ONU key).
	PonIndex string `json:"pon_index" yaml:"pon_index"`
	ONUID    string `json:"onu_id" yaml:"onu_id"`
	// PortName is a template: "{name}" is replaced by the part's or
	// field's value ("gpon-onu_{shelf}/{slot}/{port}:{onu}").
	PortName string `json:"port_name,omitempty" yaml:"port_name,omitempty"`
	// Key, when set, names the ONU by a column's value instead of by the
	// row index alone (an IF-MIB ifName "Ont 50515061/g1"): see ValueKey.
	Key *ValueKey `json:"key,omitempty" yaml:"key,omitempty"`
	// Filter keeps only the rows whose columns match: see RowFilter.
	Filter []RowFilter `json:"filter,omitempty" yaml:"filter,omitempty"`
}

// IndexPart is one part of a row index.
type IndexPart struct {
	Name   string     `json:"name" yaml:"name"`
	Type   string     `json:"type" yaml:"type"`
	Length int        `json:"length,omitempty" yaml:"length,omitempty"`
	Fields []BitField `json:"fields,omitempty" yaml:"fields,omitempty"`
}

// BitField is a field of a packed integer: (value >> Shift) & (2^Bits-1),
// plus Add (a vendor numbering from 1 where the bits count from 0).
type BitField struct {
	Name  string `json:"name" yaml:"name"`
	Shift uint   `json:"shift" yaml:"shift"`
	Bits  uint   `json:"bits" yaml:"bits"`
	Add   int64  `json:"add,omitempty" yaml:"add,omitempty"`
}

// Index part types.
const (
	PartInt     = "int"
	PartString  = "string"
	PartFixed   = "fixed"
	PartImplied = "implied"
)

// Index rest rules (IndexSpec.Rest).
const (
	RestNone    = ""
	RestNumeric = "numeric"
)

// BuiltinIndex returns the definition of a named index scheme of
// BrandUpserted.IndexScheme ("pon.onu", "fiberhome"); false for others.
func BuiltinIndex(name string) (IndexSpec, bool) {
	switch name {
	case IndexSchemePonONU:
		return IndexSpec{
			Parts:    []IndexPart{{Name: "pon", Type: PartInt}, {Name: "onu", Type: PartInt}},
			Rest:     RestNumeric,
			PonIndex: "pon", ONUID: "onu", PortName: "{pon}:{onu}",
		}, true
	case IndexSchemeFiberhome:
		return IndexSpec{
			Parts: []IndexPart{{Name: "index", Type: PartInt, Fields: []BitField{
				{Name: "slot", Shift: 25, Bits: 7}, {Name: "pon", Shift: 19, Bits: 6}, {Name: "onu", Shift: 8, Bits: 11},
			}}},
			PonIndex: "index[slot,pon]", ONUID: "onu", PortName: "{slot}/{pon}:{onu}",
		}, true
	}
	return IndexSpec{}, false
}

// ResolveIndex is the index definition a brand, NodeDue or batch carries:
// its own Index when it has one, else the built-in named scheme.
func ResolveIndex(scheme string, spec *IndexSpec) (IndexSpec, error) {
	if spec != nil {
		return *spec, spec.Validate()
	}
	s, ok := BuiltinIndex(scheme)
	if !ok {
		return IndexSpec{}, fmt.Errorf("index scheme %q: want one of %v or an index definition", scheme, IndexSchemes())
	}
	return s, nil
}

var (
	indexNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	refRE       = regexp.MustCompile(`^(?:([a-z][a-z0-9_]*)(?:<<(\d{1,2})|\[([a-z0-9_,]+)\])?|hash\(([a-z][a-z0-9_]*)\)|(\d{1,18}))$`)
	templRE     = regexp.MustCompile(`\{([^{}]*)\}`)
)

// maxIndexParts bounds IndexSpec.Parts.
const maxIndexParts = 8

// Validate checks the definition: known part types, unique names, fields
// within 63 bits, references and template names that exist.
func (s IndexSpec) Validate() error {
	if len(s.Parts) == 0 || len(s.Parts) > maxIndexParts {
		return fmt.Errorf("index: want 1..%d parts", maxIndexParts)
	}
	names := map[string]string{} // name -> "int", "field", "string"
	for i, p := range s.Parts {
		if !indexNameRE.MatchString(p.Name) {
			return fmt.Errorf("index part %d: name %q: want lower-case letters, digits, _", i+1, p.Name)
		}
		if _, dup := names[p.Name]; dup {
			return fmt.Errorf("index part %q: name used twice", p.Name)
		}
		switch p.Type {
		case PartInt:
			names[p.Name] = "int"
		case PartString:
			names[p.Name] = "string"
		case PartFixed:
			if p.Length < 1 || p.Length > 128 {
				return fmt.Errorf("index part %q: fixed length %d: want 1..128", p.Name, p.Length)
			}
			names[p.Name] = "string"
		case PartImplied:
			if i != len(s.Parts)-1 {
				return fmt.Errorf("index part %q: an implied string must be the last part", p.Name)
			}
			if s.Rest != RestNone {
				return fmt.Errorf("index part %q: an implied string takes every arc left: rest must be empty", p.Name)
			}
			names[p.Name] = "string"
		default:
			return fmt.Errorf("index part %q: type %q: want int, string, fixed or implied", p.Name, p.Type)
		}
		if len(p.Fields) > 0 && p.Type != PartInt {
			return fmt.Errorf("index part %q: only an int part has fields", p.Name)
		}
		for _, f := range p.Fields {
			if !indexNameRE.MatchString(f.Name) {
				return fmt.Errorf("index part %q: field name %q: want lower-case letters, digits, _", p.Name, f.Name)
			}
			if _, dup := names[f.Name]; dup {
				return fmt.Errorf("index part %q: field %q: name used twice", p.Name, f.Name)
			}
			if f.Bits < 1 || f.Shift+f.Bits > 63 {
				return fmt.Errorf("index part %q: field %q: shift %d + bits %d must stay within 63 bits", p.Name, f.Name, f.Shift, f.Bits)
			}
			names[f.Name] = "field:" + p.Name
		}
	}
	switch s.Rest {
	case RestNone, RestNumeric:
	default:
		return fmt.Errorf("index rest %q: want empty or %q", s.Rest, RestNumeric)
	}
	if err := s.validateRows(names); err != nil {
		return err
	}
	for _, r := range []struct{ what, ref string }{{"pon_index", s.PonIndex}, {"onu_id", s.ONUID}} {
		if err := checkRef(r.ref, names, s.Parts); err != nil {
			return fmt.Errorf("index %s: %w", r.what, err)
		}
	}
	for _, m := range templRE.FindAllStringSubmatch(s.PortName, -1) {
		if _, ok := names[m[1]]; !ok {
			return fmt.Errorf("index port_name: {%s} names no part or field", m[1])
		}
	}
	return nil
}

func checkRef(ref string, names map[string]string, parts []IndexPart) error {
	terms := strings.Split(ref, "+")
	if ref == "" || len(terms) > maxIndexParts*2 {
		return fmt.Errorf("%q: want a name, name<<n, name[field,...], hash(name), a number, or a sum of them", ref)
	}
	for _, t := range terms {
		if err := checkTerm(strings.TrimSpace(t), names); err != nil {
			return err
		}
	}
	return nil
}

func checkTerm(ref string, names map[string]string) error {
	m := refRE.FindStringSubmatch(ref)
	if m == nil {
		return fmt.Errorf("%q: want a name, name<<n, name[field,...], hash(name) or a number", ref)
	}
	switch {
	case m[5] != "":
		return nil
	case m[4] != "":
		if names[m[4]] != "string" && names[m[4]] != "group" {
			return fmt.Errorf("%q: hash() takes a string part", ref)
		}
		return nil
	}
	kind, ok := names[m[1]]
	if !ok {
		return fmt.Errorf("%q names no part or field", ref)
	}
	if kind == "string" {
		return fmt.Errorf("%q is a string: use hash(%s)", ref, m[1])
	}
	if m[3] == "" {
		return nil
	}
	if kind != "int" { // a field, a key group
		return fmt.Errorf("%q: [fields] applies to an int part", ref)
	}
	for _, f := range strings.Split(m[3], ",") {
		if names[f] != "field:"+m[1] {
			return fmt.Errorf("%q: %q is not a field of %s", ref, f, m[1])
		}
	}
	return nil
}

// ParsedIndex is a row index read through an IndexSpec.
type ParsedIndex struct {
	PonIndex int64
	ONUID    int64
	// Index is the ONU's row index (the arcs the parts took, without the
	// ignored rest), PortName its human name.
	Index    string
	PortName string
}

// Parse reads a row index (dotted arcs after the column OID). To parse
// many, take a Parser once.
func (s IndexSpec) Parse(suffix string) (ParsedIndex, error) {
	return s.Parser().Parse(suffix)
}

// IndexParser is an IndexSpec with its references and port name template
// read once: the projector parses a row index per ONU row.
type IndexParser struct {
	s        IndexSpec
	pon, onu []refTerm
	port     []templPiece
	rows     *rowRules // Key and Filter compiled; nil without them
}

// refTerm is one term of a reference: its text and refRE's submatches (nil:
// not a reference).
type refTerm struct {
	ref string
	m   []string
}

// templPiece is a literal of the port name template, or a {name} in it.
type templPiece struct {
	text   string
	isName bool
}

// Parser reads s's references and template for Parse.
func (s IndexSpec) Parser() *IndexParser {
	terms := func(ref string) []refTerm {
		var out []refTerm
		for _, t := range strings.Split(ref, "+") {
			t = strings.TrimSpace(t)
			out = append(out, refTerm{ref: t, m: refRE.FindStringSubmatch(t)})
		}
		return out
	}
	p := &IndexParser{s: s, pon: terms(s.PonIndex), onu: terms(s.ONUID), rows: s.compileRows()}
	at := 0
	for _, loc := range templRE.FindAllStringIndex(s.PortName, -1) {
		if loc[0] > at {
			p.port = append(p.port, templPiece{text: s.PortName[at:loc[0]]})
		}
		p.port = append(p.port, templPiece{text: s.PortName[loc[0]+1 : loc[1]-1], isName: true})
		at = loc[1]
	}
	if at < len(s.PortName) {
		p.port = append(p.port, templPiece{text: s.PortName[at:]})
	}
	return p
}

// Parse reads a row index (dotted arcs after the column OID). A spec with
// a Key or Filter needs the row's values: see ParseRow.
func (ip *IndexParser) Parse(suffix string) (ParsedIndex, error) {
	if ip.s.Key != nil {
		return ParsedIndex{}, fmt.Errorf("index %q: the ONU is named by a column's value, not by the row index", suffix)
	}
	r, err := ip.parseParts(suffix)
	if err != nil {
		return ParsedIndex{}, err
	}
	return ip.finish(suffix, r)
}

// readIndex is what the parts of a row index (and a key's groups) read.
type readIndex struct {
	ints        map[string]int64
	strs, texts map[string]string
	index       string
}

// parseParts reads the parts of a row index.
func (ip *IndexParser) parseParts(suffix string) (readIndex, error) {
	s := ip.s
	arcs := strings.Split(suffix, ".")
	ints := map[string]int64{}
	strs := map[string]string{}
	texts := map[string]string{}
	at := 0
	next := func() (uint64, error) {
		if at >= len(arcs) {
			return 0, fmt.Errorf("index %q: too short", suffix)
		}
		v, err := strconv.ParseUint(arcs[at], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("index %q: arc %q is not a number", suffix, arcs[at])
		}
		at++
		return v, nil
	}
	readBytes := func(n int) ([]byte, error) {
		b := make([]byte, 0, n)
		for range n {
			v, err := next()
			if err != nil {
				return nil, err
			}
			if v > 255 {
				return nil, fmt.Errorf("index %q: string arc %d is not a byte", suffix, v)
			}
			b = append(b, byte(v))
		}
		return b, nil
	}
	for _, p := range s.Parts {
		var b []byte
		switch p.Type {
		case PartInt:
			v, err := next()
			if err != nil {
				return readIndex{}, err
			}
			ints[p.Name] = int64(v)
			texts[p.Name] = strconv.FormatUint(v, 10)
			for _, f := range p.Fields {
				fv := int64(v>>f.Shift&(1<<f.Bits-1)) + f.Add
				ints[f.Name] = fv
				texts[f.Name] = strconv.FormatInt(fv, 10)
			}
			continue
		case PartString:
			n, err := next()
			if err != nil {
				return readIndex{}, err
			}
			if n > 128 {
				return readIndex{}, fmt.Errorf("index %q: string length %d", suffix, n)
			}
			if b, err = readBytes(int(n)); err != nil {
				return readIndex{}, err
			}
		case PartFixed:
			var err error
			if b, err = readBytes(p.Length); err != nil {
				return readIndex{}, err
			}
		case PartImplied:
			var err error
			if b, err = readBytes(len(arcs) - at); err != nil {
				return readIndex{}, err
			}
		default:
			return readIndex{}, fmt.Errorf("index part %q: type %q", p.Name, p.Type)
		}
		strs[p.Name] = string(b)
		texts[p.Name] = printableIndex(b)
	}
	used := at
	switch s.Rest {
	case RestNumeric:
		for at < len(arcs) {
			if _, err := next(); err != nil {
				return readIndex{}, err
			}
		}
	default:
		if at != len(arcs) {
			return readIndex{}, fmt.Errorf("index %q: %d arcs left over", suffix, len(arcs)-at)
		}
	}
	return readIndex{ints: ints, strs: strs, texts: texts, index: strings.Join(arcs[:used], ".")}, nil
}

// finish evaluates the ONU key and port name of what was read.
func (ip *IndexParser) finish(suffix string, r readIndex) (ParsedIndex, error) {
	s := ip.s
	pon, err := s.eval(ip.pon, r.ints, r.strs)
	if err != nil {
		return ParsedIndex{}, fmt.Errorf("index %q: pon_index: %w", suffix, err)
	}
	onu, err := s.eval(ip.onu, r.ints, r.strs)
	if err != nil {
		return ParsedIndex{}, fmt.Errorf("index %q: onu_id: %w", suffix, err)
	}
	var name strings.Builder
	for _, p := range ip.port {
		if p.isName {
			name.WriteString(r.texts[p.text])
		} else {
			name.WriteString(p.text)
		}
	}
	return ParsedIndex{PonIndex: pon, ONUID: onu, Index: r.index, PortName: name.String()}, nil
}

func (s IndexSpec) eval(terms []refTerm, ints map[string]int64, strs map[string]string) (int64, error) {
	var sum int64
	for _, t := range terms {
		v, err := s.evalTerm(t.ref, t.m, ints, strs)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

func (s IndexSpec) evalTerm(ref string, m []string, ints map[string]int64, strs map[string]string) (int64, error) {
	switch {
	case m == nil:
		return 0, fmt.Errorf("bad reference %q", ref)
	case m[5] != "":
		return strconv.ParseInt(m[5], 10, 64)
	case m[4] != "":
		h := fnv.New32a()
		h.Write([]byte(strs[m[4]]))
		return int64(h.Sum32() & 0x7fffffff), nil
	}
	v, ok := ints[m[1]]
	if !ok {
		return 0, fmt.Errorf("%q names no integer", ref)
	}
	switch {
	case m[2] != "":
		n, _ := strconv.Atoi(m[2])
		return v << n, nil
	case m[3] == "":
		return v, nil
	}
	var keep int64
	for _, f := range strings.Split(m[3], ",") {
		bf, ok := s.field(f)
		if !ok {
			return 0, fmt.Errorf("%q: no field %q", ref, f)
		}
		keep |= (1<<bf.Bits - 1) << bf.Shift
	}
	return v & keep, nil
}

func (s IndexSpec) field(name string) (BitField, bool) {
	for _, p := range s.Parts {
		for _, f := range p.Fields {
			if f.Name == name {
				return f, true
			}
		}
	}
	return BitField{}, false
}

// ErrNoRowIndex: the scheme's key cannot be turned back into a row index
// (a string part, a hashed key), so a get cannot address the ONU.
var ErrNoRowIndex = errors.New("the index scheme cannot rebuild a row index from pon_index and onu_id")

// Format is the inverse of Parse for the integer schemes a get can read:
// the row index of ONU onu of PON pon. Every part must be an int that is
// the pon_index or the onu_id, or a packed int holding them.
func (s IndexSpec) Format(pon, onu int64) (string, error) {
	f, err := s.Formatter()
	if err != nil {
		return "", err
	}
	return f(pon, onu)
}

// Formatter returns Format with the scheme read once: for formatting the
// row indexes of many ONUs.
func (s IndexSpec) Formatter() (func(pon, onu int64) (string, error), error) {
	if s.Key != nil {
		return nil, ErrNoRowIndex // the key is in a value, not in the index
	}
	ponRef := refRE.FindStringSubmatch(s.PonIndex)
	onuRef := refRE.FindStringSubmatch(s.ONUID)
	if ponRef == nil || onuRef == nil || ponRef[1] == "" || onuRef[1] == "" || onuRef[2] != "" || onuRef[3] != "" || ponRef[2] != "" {
		return nil, ErrNoRowIndex
	}
	// What each part is: the PON, the ONU, or both packed (field f).
	const (
		isPON = iota
		isONU
		isPacked
	)
	kinds := make([]int, len(s.Parts))
	var packed BitField
	for i, p := range s.Parts {
		if p.Type != PartInt {
			return nil, ErrNoRowIndex
		}
		switch {
		case p.Name == ponRef[1] && ponRef[3] == "" && p.Name != onuRef[1]:
			kinds[i] = isPON
		case p.Name == onuRef[1]:
			kinds[i] = isONU
		case p.Name == ponRef[1]:
			f, ok := s.field(onuRef[1])
			if !ok || !hasField(p, f.Name) {
				return nil, ErrNoRowIndex
			}
			kinds[i], packed = isPacked, f
		default:
			return nil, ErrNoRowIndex
		}
	}
	return func(pon, onu int64) (string, error) {
		var buf [64]byte
		b := buf[:0]
		for i, k := range kinds {
			if i > 0 {
				b = append(b, '.')
			}
			switch k {
			case isPON:
				b = strconv.AppendInt(b, pon, 10)
			case isONU:
				b = strconv.AppendInt(b, onu, 10)
			default:
				v := onu - packed.Add
				if v < 0 || v >= 1<<packed.Bits {
					return "", fmt.Errorf("onu_id %d does not fit field %s", onu, packed.Name)
				}
				b = strconv.AppendInt(b, pon|v<<packed.Shift, 10)
			}
		}
		return string(b), nil
	}, nil
}

func hasField(p IndexPart, name string) bool {
	for _, f := range p.Fields {
		if f.Name == name {
			return true
		}
	}
	return false
}

// printableIndex shows a string index part as text when it is printable,
// else as hex.
func printableIndex(b []byte) string {
	if utf8.Valid(b) {
		ok := true
		for _, c := range string(b) {
			if c < 0x20 || c == 0x7f {
				ok = false
				break
			}
		}
		if ok {
			return string(b)
		}
	}
	return fmt.Sprintf("%x", b)
}
