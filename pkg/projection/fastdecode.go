package projection

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"time"

	"github.com/facho-olt/facho/streams"
)

// Decoders is a cache of decoding plans for DecodeOnWith, one per type: a
// rebuild's batch form makes one per run and decodes the run's messages
// with it.
//
// The plans decode a strict subset of JSON without encoding/json's
// reflection walk and validity scan, about twice as fast: objects whose
// keys are exactly the fields' names, each at most once; strings of
// printable ASCII without escapes; numbers in JSON's grammar that fit the
// field; no null. Anything else (an unknown key, a key in another case,
// an escape, a null, a type mismatch, a type the plans do not handle)
// makes the fast path give up, and encoding/json decodes the message as
// before: what the fast path accepts, encoding/json accepts with the same
// value (TestFastDecodeMatchesJSON, FuzzFastDecode), so what a decoder
// accepts and refuses is unchanged.
type Decoders struct {
	plans  map[reflect.Type]*typePlan
	fields map[subjectField]int
	reused map[reflect.Type]any // DecodeOnReused's memory (*reusedOn[T]) per T
}

// NewDecoders returns an empty plan cache.
func NewDecoders() *Decoders {
	return &Decoders{plans: map[reflect.Type]*typePlan{}, fields: map[subjectField]int{}, reused: map[reflect.Type]any{}}
}

// subjectField is a payload type's field a subject names.
type subjectField struct {
	t    reflect.Type
	name string
}

// payloadField is streams' payloadField (what CheckSubjectOf answers a
// subject's field from) with the field's index (streams.PayloadFieldIndex)
// found once per type.
func (d *Decoders) payloadField(v reflect.Value, name string) (string, bool) {
	if v.Kind() != reflect.Struct {
		return "", false
	}
	k := subjectField{v.Type(), name}
	i, ok := d.fields[k]
	if !ok {
		i = streams.PayloadFieldIndex(v.Type(), name)
		d.fields[k] = i
	}
	if i < 0 {
		return "", false
	}
	return v.Field(i).String(), true
}

type planKind uint8

const (
	kindUnsupported planKind = iota
	kindString
	kindBool
	kindInt
	kindUint
	kindFloat
	kindTime
	kindStruct
	kindSlice
	kindMap
	kindPtr
)

type typePlan struct {
	kind   planKind
	t      reflect.Type
	fields []fieldPlan // kindStruct
	elem   *typePlan   // kindSlice, kindMap (the value), kindPtr
}

type fieldPlan struct {
	name  string
	index int
	plan  *typePlan
}

// plan returns t's plan (kindUnsupported: the fast path gives up on t).
func (d *Decoders) plan(t reflect.Type) *typePlan {
	if p, ok := d.plans[t]; ok {
		return p
	}
	p := &typePlan{t: t}
	d.plans[t] = p // before the fields: a recursive type finds itself
	p.kind = d.build(p)
	if p.kind == kindUnsupported {
		p.fields, p.elem = nil, nil
	}
	return p
}

// build fills p's fields or element and returns its kind: only types
// encoding/json decodes by their kind alone (no Unmarshaler but
// time.Time's, no interface, no []byte, no embedded field, no ",string").
func (d *Decoders) build(p *typePlan) planKind {
	t := p.t
	if t == reflect.TypeFor[time.Time]() {
		return kindTime
	}
	unmarshaler, textUnmarshaler := reflect.TypeFor[json.Unmarshaler](), reflect.TypeFor[encoding.TextUnmarshaler]()
	if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) ||
		t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) ||
		t == reflect.TypeFor[json.Number]() { // a string checked as a number
		return kindUnsupported
	}
	switch t.Kind() {
	case reflect.String:
		return kindString
	case reflect.Bool:
		return kindBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return kindInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return kindUint
	case reflect.Float32, reflect.Float64:
		return kindFloat
	case reflect.Pointer:
		if p.elem = d.plan(t.Elem()); p.elem.kind == kindUnsupported {
			return kindUnsupported
		}
		return kindPtr
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // base64 in encoding/json
			return kindUnsupported
		}
		if p.elem = d.plan(t.Elem()); p.elem.kind == kindUnsupported {
			return kindUnsupported
		}
		return kindSlice
	case reflect.Map:
		if t.Key() != reflect.TypeFor[string]() {
			return kindUnsupported
		}
		if p.elem = d.plan(t.Elem()); p.elem.kind == kindUnsupported {
			return kindUnsupported
		}
		return kindMap
	case reflect.Struct:
		seen := map[string]bool{}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				return kindUnsupported
			}
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts := tag, ""
			for j := 0; j < len(tag); j++ {
				if tag[j] == ',' {
					name, opts = tag[:j], tag[j+1:]
					break
				}
			}
			if !plainOptions(opts) {
				return kindUnsupported
			}
			if name == "" {
				name = f.Name
			}
			if !plainName(name) || seen[name] {
				return kindUnsupported
			}
			seen[name] = true
			fp := d.plan(f.Type)
			if fp.kind == kindUnsupported {
				return kindUnsupported
			}
			p.fields = append(p.fields, fieldPlan{name: name, index: i, plan: fp})
		}
		return kindStruct
	}
	return kindUnsupported
}

// plainOptions reports whether a json tag's options are only omitempty
// and omitzero (encoding only).
func plainOptions(opts string) bool {
	for opts != "" {
		o := opts
		for j := 0; j < len(opts); j++ {
			if opts[j] == ',' {
				o, opts = opts[:j], opts[j+1:]
				break
			}
		}
		if o == opts {
			opts = ""
		}
		if o != "omitempty" && o != "omitzero" {
			return false
		}
	}
	return true
}

// plainName reports whether name is made of letters, digits and
// underscores (a tag name encoding/json takes as it is).
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return name != ""
}

// decodeFast decodes b into v (a pointer's element) by v's plan; false:
// the fast path gave up, v may be partly written. v is zero, or (reuse)
// holds what an earlier decode left: its slices, maps and pointers are
// written over and a string equal to the one there is kept, so a message
// much like the one before allocates little; what is absent from b is
// zeroed. Either way v ends as a decode into a zero value would leave it.
// memo (reuse only; nil: none) is what the decodes into v before this one
// left of the struct it names (rawMemo); it is emptied when the fast path
// gives up.
func (d *Decoders) decodeFast(b []byte, v reflect.Value, reuse bool, memo *rawMemo) bool {
	p := d.plan(v.Type())
	if p.kind == kindUnsupported {
		return false
	}
	s := scanner{b: b, reuse: reuse, memo: memo}
	ok := s.value(p, v)
	if ok {
		s.ws()
		ok = s.i == len(s.b)
	}
	if !ok && memo != nil {
		memo.forget()
	}
	return ok
}

// rawMemo is, for one struct of a value decodeFast decodes into again and
// again (the first object of plan's type it meets: DecodeOnReused's
// payload), the bytes each of its fields holding an object, an array or a
// string was last decoded from (raw, by field; empty: none). A field whose
// bytes are the same in the next message is skipped: the value already
// holds their decode (the bytes of an object, an array or a string
// without escapes are the whole value, unlike a number's, and the fast
// path decodes the same bytes the same way). A NodeDue's target, OIDs and
// decoders are the same event after event, and so are most ids and
// times.
type rawMemo struct {
	plan *typePlan
	raw  [][]byte
}

func newRawMemo(p *typePlan) rawMemo {
	if p.kind != kindStruct {
		return rawMemo{}
	}
	return rawMemo{plan: p, raw: make([][]byte, len(p.fields))}
}

// forget empties m: the value no longer holds what it says.
func (m *rawMemo) forget() {
	for i := range m.raw {
		m.raw[i] = m.raw[i][:0]
	}
}

type scanner struct {
	b     []byte
	i     int
	depth int
	reuse bool     // the value holds an earlier decode (decodeFast)
	memo  *rawMemo // reuse: what earlier decodes left of memo.plan's struct
	met   bool     // memo's struct met
}

// maxDepth bounds the nesting the fast path follows (encoding/json
// refuses past 10,000).
const maxDepth = 1000

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str scans a string of printable ASCII without escapes and returns its
// content.
func (s *scanner) str() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			s.i = j + 1
			return s.b[start:j], true
		}
		if c < 0x20 || c > 0x7e || c == '\\' {
			return nil, false
		}
	}
	return nil, false
}

// number scans a number in JSON's grammar; integer: only -?(0|[1-9][0-9]*).
func (s *scanner) number(integer bool) ([]byte, bool) {
	b, j := s.b, s.i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return nil, false
	}
	if !integer {
		if j < len(b) && b[j] == '.' {
			j++
			if j >= len(b) || b[j] < '0' || b[j] > '9' {
				return nil, false
			}
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
		}
		if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
			j++
			if j < len(b) && (b[j] == '+' || b[j] == '-') {
				j++
			}
			if j >= len(b) || b[j] < '0' || b[j] > '9' {
				return nil, false
			}
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
		}
	}
	// What follows must end the number (a delimiter, checked by the caller).
	if j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
		default:
			return nil, false
		}
	}
	num := b[s.i:j]
	s.i = j
	return num, true
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// value decodes one value into v (zero) by p.
func (s *scanner) value(p *typePlan, v reflect.Value) bool {
	s.ws()
	switch p.kind {
	case kindString:
		str, ok := s.str()
		if !ok {
			return false
		}
		if !s.reuse || v.String() != string(str) { // the comparison allocates nothing
			v.SetString(string(str))
		}
		return true
	case kindBool:
		switch {
		case s.literal("true"):
			v.SetBool(true)
		case s.literal("false"):
			v.SetBool(false)
		default:
			return false
		}
		return true
	case kindInt:
		num, ok := s.number(true)
		if !ok {
			return false
		}
		n, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || v.OverflowInt(n) {
			return false
		}
		v.SetInt(n)
		return true
	case kindUint:
		num, ok := s.number(true)
		if !ok || num[0] == '-' {
			return false
		}
		n, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil || v.OverflowUint(n) {
			return false
		}
		v.SetUint(n)
		return true
	case kindFloat:
		num, ok := s.number(false)
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(num), v.Type().Bits())
		if err != nil || v.OverflowFloat(f) {
			return false
		}
		v.SetFloat(f)
		return true
	case kindTime:
		start := s.i
		if _, ok := s.str(); !ok {
			return false
		}
		// time.Time's own UnmarshalJSON, as encoding/json calls it.
		t, ok := v.Addr().Interface().(*time.Time)
		return ok && t.UnmarshalJSON(s.b[start:s.i]) == nil
	case kindPtr:
		if s.reuse && !v.IsNil() {
			return s.value(p.elem, v.Elem())
		}
		e := reflect.New(p.t.Elem())
		if !s.value(p.elem, e.Elem()) {
			return false
		}
		v.Set(e)
		return true
	case kindSlice:
		return s.array(p, v)
	case kindMap:
		return s.object(p, v)
	case kindStruct:
		return s.object(p, v)
	}
	return false
}

// array decodes an array into the slice v: an empty array makes an empty
// slice, as encoding/json does. Reused, v's array is written over.
func (s *scanner) array(p *typePlan, v reflect.Value) bool {
	if !s.literal("[") {
		return false
	}
	if s.depth++; s.depth > maxDepth {
		return false
	}
	defer func() { s.depth-- }()
	var out reflect.Value
	if s.reuse && !v.IsNil() {
		out = v.Slice(0, 0)
	} else {
		out = reflect.MakeSlice(p.t, 0, 0)
	}
	s.ws()
	if s.literal("]") {
		v.Set(out)
		return true
	}
	for {
		// An element within the capacity is zero (growslice zeroes the
		// rest of a new array) or, reused, what an earlier decode left.
		n := out.Len()
		if n < out.Cap() {
			out = out.Slice(0, n+1)
		} else {
			out = reflect.Append(out, reflect.Zero(p.t.Elem()))
		}
		if !s.value(p.elem, out.Index(n)) {
			return false
		}
		s.ws()
		if s.literal("]") {
			v.Set(out)
			return true
		}
		if !s.literal(",") {
			return false
		}
	}
}

// object decodes an object into the struct or map v (a map is made, even
// for an empty object, as encoding/json does). A struct's keys must be its
// fields' names, each at most once; a map's keys, each at most once.
// Reused, a struct's fields absent from the object are zeroed, and a
// map[string]string equal to the object is kept.
func (s *scanner) object(p *typePlan, v reflect.Value) bool {
	if s.reuse && p.kind == kindMap && !v.IsNil() && p.t == reflect.TypeFor[map[string]string]() && s.sameStrings(v.Interface().(map[string]string)) {
		return true
	}
	if !s.literal("{") {
		return false
	}
	if s.depth++; s.depth > maxDepth {
		return false
	}
	defer func() { s.depth-- }()
	var seen uint64 // struct fields set, when fewer than 64
	next := 0       // the field expected next
	if p.kind == kindStruct && len(p.fields) > 64 {
		return false
	}
	if p.kind == kindMap {
		v.Set(reflect.MakeMap(p.t))
	}
	var memo *rawMemo
	if s.memo != nil && p == s.memo.plan && !s.met {
		memo, s.met = s.memo, true
	}
	if s.reuse && p.kind == kindStruct {
		defer func() {
			for j := range p.fields {
				if seen&(1<<j) == 0 {
					v.Field(p.fields[j].index).SetZero()
					if memo != nil {
						memo.raw[j] = memo.raw[j][:0]
					}
				}
			}
		}()
	}
	s.ws()
	if s.literal("}") {
		return true
	}
	for {
		s.ws()
		key, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if !s.literal(":") {
			return false
		}
		if p.kind == kindMap {
			k := string(key)
			if v.MapIndex(reflect.ValueOf(k)).IsValid() {
				return false
			}
			e := reflect.New(p.t.Elem()).Elem()
			if !s.value(p.elem, e) {
				return false
			}
			v.SetMapIndex(reflect.ValueOf(k), e)
		} else {
			// The field after the last one first: encoding/json writes
			// them in order.
			f := -1
			if next < len(p.fields) && p.fields[next].name == string(key) {
				f = next
			} else {
				for j := range p.fields {
					if p.fields[j].name == string(key) {
						f = j
						break
					}
				}
			}
			if f < 0 || seen&(1<<f) != 0 {
				return false
			}
			seen |= 1 << f
			next = f + 1
			if memo == nil {
				if !s.value(p.fields[f].plan, v.Field(p.fields[f].index)) {
					return false
				}
			} else if !s.memoValue(memo, f, v.Field(p.fields[f].index)) {
				return false
			}
		}
		s.ws()
		if s.literal("}") {
			return true
		}
		if !s.literal(",") {
			return false
		}
	}
}

// memoValue is value for field f of memo's struct: skipped when its bytes
// are those memo has, else decoded and, when an object, an array or a
// string, remembered.
func (s *scanner) memoValue(memo *rawMemo, f int, v reflect.Value) bool {
	s.ws()
	if prev := memo.raw[f]; len(prev) > 0 && bytes.HasPrefix(s.b[s.i:], prev) {
		s.i += len(prev)
		return true
	}
	start := s.i
	if !s.value(memo.plan.fields[f].plan, v) {
		return false
	}
	if c := s.b[start]; c == '{' || c == '[' || c == '"' {
		memo.raw[f] = append(memo.raw[f][:0], s.b[start:s.i]...)
	} else {
		memo.raw[f] = memo.raw[f][:0]
	}
	return true
}

// sameStrings reports whether the object at s.i has exactly m's entries,
// each key once, in the subset object and value accept, and moves past it
// if so; otherwise s is left where it was.
func (s *scanner) sameStrings(m map[string]string) bool {
	if s.depth >= maxDepth || len(m) > maxSameKeys {
		return false
	}
	start := s.i
	var keys [maxSameKeys][]byte // the keys so far, to find one twice
	n := 0
	same := func() bool {
		if !s.literal("{") {
			return false
		}
		s.ws()
		if s.literal("}") {
			return true
		}
		for {
			s.ws()
			key, ok := s.str()
			if !ok || n == len(m) {
				return false
			}
			for _, k := range keys[:n] {
				if string(k) == string(key) {
					return false
				}
			}
			keys[n] = key
			n++
			s.ws()
			if !s.literal(":") {
				return false
			}
			s.ws()
			val, ok := s.str()
			if !ok {
				return false
			}
			if cur, ok := m[string(key)]; !ok || cur != string(val) {
				return false
			}
			s.ws()
			if s.literal("}") {
				return true
			}
			if !s.literal(",") {
				return false
			}
		}
	}
	// n distinct keys, all m's, and as many as m has: m's keys.
	if same() && n == len(m) {
		return true
	}
	s.i = start
	return false
}

// maxSameKeys bounds the maps sameStrings compares (enum mappings have a
// few entries); a larger one is decoded anew.
const maxSameKeys = 32
