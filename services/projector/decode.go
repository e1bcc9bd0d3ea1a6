package projector

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/facho-olt/facho/streams"
)

// Index schemes (streams.BrandUpserted.IndexScheme).
const (
	SchemePonONU    = "pon.onu"
	SchemeFiberhome = "fiberhome"
)

// ONUKey names one ONU of an OLT.
type ONUKey struct {
	PonIndex int64
	ONUID    int64
}

// ONUFields are the fields one batch read for one ONU; nil means the batch
// did not read that field (the stored value stays). RxPowerSet with a nil
// RxPowerDBm means "read, but no reading" (stored as NULL).
type ONUFields struct {
	Serial      *string
	Description *string
	Status      *string
	RxPowerSet  bool
	RxPowerDBm  *float64
	// Index is the ONU's row index and PortName its human name, from the
	// batch's index scheme ("" when no column of that scheme was read).
	Index    string
	PortName string
	// The vendor profile fields (issue 9): a key present means the batch
	// read the field; a nil value is "no reading" (stored as NULL).
	Text map[string]string
	Num  map[string]*float64
	Time map[string]*time.Time
	// RxGone: the Rx power was read as NoSuchInstance (a get asked for
	// the ONU's optical row and the OLT has none: FiberHome and V-SOL drop
	// it for an offline ONU), so a stored reading is cleared; alone it
	// never creates an ONU (see onlyRxGone).
	RxGone bool
}

// onlyRxGone says the batch knows nothing of the ONU but that its optical
// row is gone: not enough to create it.
func (f *ONUFields) onlyRxGone() bool {
	return f.RxGone && f.Serial == nil && f.Description == nil && f.Status == nil && len(f.Text) == 0 && len(f.Num) == 0 && len(f.Time) == 0
}

// Skip reasons of varbinds that feed no field (metric label values).
const (
	SkipUnknownColumn = "unknown_column"
	SkipBadIndex      = "bad_index"
	SkipUndecodable   = "undecodable"
	// SkipWrongType: a value of a type its column's decoder does not take
	// (an Integer for a string, an OctetString for a number): left
	// unplaced, never converted.
	SkipWrongType    = "wrong_type"
	SkipNoValue      = "no_value" // Null, NoSuchObject, NoSuchInstance, EndOfMibView
	SkipUnknownField = "unknown_field"
)

// Decoded is a batch grouped by ONU, with the varbinds it skipped.
type Decoded struct {
	ONUs    map[ONUKey]*ONUFields
	Skipped map[string]int
	// Filtered counts the varbinds of rows that are no ONU by the index
	// definition's filters or key pattern: dropped on purpose, so neither
	// placed nor unplaced.
	Filtered int
	// owner is, per ONU named by a value key, the row index that named it
	// first: the rows grouped into it after that only fill unset fields.
	owner map[ONUKey]string
}

// Keys returns the ONU keys in a stable order.
func (d Decoded) Keys() []ONUKey {
	keys := make([]ONUKey, 0, len(d.ONUs))
	for k := range d.ONUs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].PonIndex != keys[j].PonIndex {
			return keys[i].PonIndex < keys[j].PonIndex
		}
		return keys[i].ONUID < keys[j].ONUID
	})
	return keys
}

// DecodeBatch groups a batch's varbinds by ONU using the batch's own
// columns and index scheme, so a replay decodes it as it was read. It fails
// only when the batch as a whole cannot be decoded (unknown scheme, bad
// column); single varbinds that do not decode are counted in Skipped.
func DecodeBatch(b streams.VarbindBatch) (Decoded, error) {
	scheme, err := streams.ResolveIndex(b.IndexScheme, b.Index)
	if err != nil {
		return Decoded{}, fmt.Errorf("%w: %v", streams.ErrMalformed, err)
	}
	schemeParser := scheme.Parser()
	cols := make([]column, 0, len(b.Columns))
	for _, c := range b.Columns {
		if err := c.Decoder.Validate(); err != nil {
			return Decoded{}, fmt.Errorf("%w: column %s: %v", streams.ErrMalformed, c.OID, err)
		}
		var re *regexp.Regexp
		if c.Decoder.Kind == "regex" {
			re, _ = c.Decoder.CompilePattern() // valid: checked above
		}
		prefix := strings.Trim(c.OID, ".")
		if prefix == "" {
			return Decoded{}, fmt.Errorf("%w: column %s without oid", streams.ErrMalformed, c.ID)
		}
		col := column{prefix: prefix + ".", pos: len(cols), spec: c, parser: schemeParser, primary: true, re: re}
		if c.Index != nil {
			if err := c.Index.Validate(); err != nil {
				return Decoded{}, fmt.Errorf("%w: column %s: %v", streams.ErrMalformed, c.OID, err)
			}
			col.parser, col.primary, col.specID = c.Index.Parser(), false, 1+col.pos
		}
		cols = append(cols, col)
	}
	// Longest prefix first, so a column nested in another wins.
	sort.Slice(cols, func(i, j int) bool { return len(cols[i].prefix) > len(cols[j].prefix) })
	for i := range cols {
		for j := range cols {
			if i != j && strings.HasPrefix(cols[j].prefix, cols[i].prefix) { // longer, or the same
				cols[i].shadowed = true
			}
		}
	}

	// Sized for a batch of rows (an ONU a row): growing the maps row by
	// row rehashed them a dozen times a batch.
	d := Decoded{ONUs: make(map[ONUKey]*ONUFields, len(b.Rows)), Skipped: map[string]int{}}
	rows := newRowValues(schemeParser, cols, b)
	// A row's values share its index: each index spec parses it once.
	type memoKey struct {
		spec   int
		suffix string
	}
	parsed := make(map[memoKey]parsedIndex, len(b.Rows))
	plainPonONU := b.Index == nil && b.IndexScheme == SchemePonONU
	parse := func(col *column, suffix string) parsedIndex {
		k := memoKey{col.specID, suffix}
		if p, ok := parsed[k]; ok {
			return p
		}
		var pi streams.ParsedIndex
		var err error
		switch {
		case col.primary && rows != nil:
			pi, err = rows.parse(suffix)
		case col.primary && plainPonONU:
			var ok bool
			if pi, ok = parsePonONU(suffix); !ok {
				pi, err = col.parser.Parse(suffix) // its error
			}
		default:
			pi, err = col.parser.Parse(suffix)
		}
		p := parsedIndex{pi, err}
		parsed[k] = p
		return p
	}
	place := func(col *column, suffix string, vb streams.Varbind) {
		p := parse(col, suffix)
		switch {
		case errors.Is(p.err, streams.ErrRowFiltered):
			d.Filtered++
			return
		case p.err != nil:
			d.Skipped[SkipBadIndex]++
			return
		}
		if rows != nil && rows.keyed && col.primary && !d.claim(col, p.ParsedIndex) {
			return
		}
		d.place(col, p.ParsedIndex, vb)
	}
	for _, vb := range b.Varbinds {
		oid := strings.TrimPrefix(vb.OID, ".")
		i, suffix, ok := match(cols, oid)
		if !ok {
			d.Skipped[SkipUnknownColumn]++
			continue
		}
		place(&cols[i], suffix, vb)
	}
	// A row names its values' columns: no prefix to match, unless a
	// column's OID is a prefix of another's (then the longest match wins,
	// as for a raw varbind).
	byPos := make([]int, len(b.Columns))
	for i := range byPos {
		byPos[i] = -1
	}
	for i := range cols {
		if !cols[i].shadowed {
			byPos[cols[i].pos] = i
		}
	}
	for _, r := range b.Rows {
		for _, v := range r.Values {
			vb := streams.Varbind{Type: v.Type, Value: v.Value}
			if v.Column >= 0 && v.Column < len(byPos) && byPos[v.Column] >= 0 {
				place(&cols[byPos[v.Column]], r.Index, vb)
				continue
			}
			oid := ""
			if v.Column >= 0 && v.Column < len(b.Columns) {
				oid = strings.Trim(b.Columns[v.Column].OID, ".") + "." + r.Index
			}
			i, suffix, ok := match(cols, oid)
			if !ok {
				d.Skipped[SkipUnknownColumn]++
				continue
			}
			vb.OID = oid
			place(&cols[i], suffix, vb)
		}
	}
	return d, nil
}

// parsePonONU is the built-in pon.onu scheme's IndexParser.Parse
// (streams.BuiltinIndex: two integer arcs, pon and onu, then any numeric
// arcs; port name "{pon}:{onu}") without its maps, for the commonest
// index: false for whatever it would refuse (the caller asks the parser
// then, for its error). TestParsePonONUMatchesParser holds them equal.
func parsePonONU(suffix string) (streams.ParsedIndex, bool) {
	var v [2]uint64
	at, end := 0, 0
	for n := 0; ; n++ {
		dot := strings.IndexByte(suffix[at:], '.')
		arc := suffix[at:]
		if dot >= 0 {
			arc = suffix[at : at+dot]
		}
		x, err := strconv.ParseUint(arc, 10, 32)
		if err != nil {
			return streams.ParsedIndex{}, false
		}
		if n < 2 {
			v[n] = x
			end = at + len(arc)
		}
		if dot < 0 {
			if n < 1 {
				return streams.ParsedIndex{}, false
			}
			break
		}
		at += dot + 1
	}
	return streams.ParsedIndex{PonIndex: int64(v[0]), ONUID: int64(v[1]), Index: suffix[:end],
		PortName: strconv.FormatUint(v[0], 10) + ":" + strconv.FormatUint(v[1], 10)}, true
}

// parsedIndex is a row index read through an index spec, or why not.
type parsedIndex struct {
	streams.ParsedIndex
	err error
}

// place decodes one varbind of col into the fields of its ONU.
func (d *Decoded) place(col *column, pi streams.ParsedIndex, vb streams.Varbind) {
	key := ONUKey{PonIndex: pi.PonIndex, ONUID: pi.ONUID}
	val, err := decodeValue(col.spec.Decoder, col.re, vb)
	if errors.Is(err, errNoValue) && vb.Type == streams.VTNoSuchInstance && col.spec.Field == streams.FieldRxPower {
		// Only a get reads exceptions (a walk stops at them): the
		// ONU's optical instance does not exist, i.e. no reading.
		f := d.ONUs[key]
		if f == nil {
			f = &ONUFields{}
			d.ONUs[key] = f
		}
		f.RxPowerSet, f.RxPowerDBm, f.RxGone = true, nil, true
		return
	}
	if errors.Is(err, errNoValue) {
		d.Skipped[SkipNoValue]++
		return
	}
	if errors.Is(err, errWrongType) {
		d.Skipped[SkipWrongType]++
		return
	}
	if err != nil {
		d.Skipped[SkipUndecodable]++
		return
	}
	f := d.ONUs[key]
	if f == nil {
		f = &ONUFields{}
	}
	if !f.set(col.spec.Field, val) {
		d.Skipped[SkipUnknownField]++
		return
	}
	if col.primary && f.Index == "" {
		f.Index, f.PortName = pi.Index, pgText(pi.PortName)
	}
	d.ONUs[key] = f
}

type column struct {
	prefix string // oid + "."
	pos    int    // in the batch's Columns
	// shadowed: another column's OID starts with this one's.
	shadowed bool
	specID   int // 0: the batch's scheme (primary), else 1 + pos
	spec     streams.OIDSpec
	parser   *streams.IndexParser
	// primary: the column is indexed by the batch's scheme (not its own),
	// so its row index is the ONU's.
	primary bool
	re      *regexp.Regexp // a regex decoder's pattern
}

func match(cols []column, oid string) (int, string, bool) {
	for i, c := range cols {
		if strings.HasPrefix(oid, c.prefix) {
			return i, oid[len(c.prefix):], true
		}
	}
	return -1, "", false
}

// ParseIndex turns a row index (the OID suffix after the column) into an
// ONU key.
//   - "pon.onu": "<pon index>.<onu id>" (Huawei, ZTE, V-SOL), possibly
//     followed by a sub-index that names no other ONU: ZTE's optical table
//     (1082.500.20.2.2.2.1) is indexed "<pon>.<onu>.1". The ONU is named
//     by the first two arcs; the rest must be numeric and is ignored.
//   - "fiberhome": one integer slot*2^25 + pon*2^19 + onu*2^8; the PON
//     index is that integer with its 19 low bits cleared (slot and pon
//     bits kept), the ONU id is bits 8..18.
func ParseIndex(scheme, suffix string) (ONUKey, error) {
	parts := strings.Split(suffix, ".")
	switch scheme {
	case SchemePonONU:
		if len(parts) < 2 {
			return ONUKey{}, fmt.Errorf("index %q: want <pon>.<onu>", suffix)
		}
		for _, sub := range parts[2:] {
			if _, err := strconv.ParseUint(sub, 10, 32); err != nil {
				return ONUKey{}, fmt.Errorf("index %q: sub-index %q is not an arc", suffix, sub)
			}
		}
		pon, err1 := strconv.ParseInt(parts[0], 10, 64)
		onu, err2 := strconv.ParseInt(parts[1], 10, 64)
		if err := errors.Join(err1, err2); err != nil || pon < 0 || onu < 0 {
			return ONUKey{}, fmt.Errorf("index %q: want two non-negative integers", suffix)
		}
		return ONUKey{PonIndex: pon, ONUID: onu}, nil
	case SchemeFiberhome:
		if len(parts) != 1 {
			return ONUKey{}, fmt.Errorf("index %q: want one packed integer", suffix)
		}
		idx, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil || idx < 0 {
			return ONUKey{}, fmt.Errorf("index %q: want a non-negative integer", suffix)
		}
		return ONUKey{PonIndex: idx &^ (1<<19 - 1), ONUID: (idx >> 8) & (1<<11 - 1)}, nil
	default:
		return ONUKey{}, fmt.Errorf("unknown index scheme %q", scheme)
	}
}

// value is a decoded varbind: text, or a number, or "no reading" (null).
type value struct {
	text string
	num  float64
	at   time.Time
	kind int
}

const (
	kindText = iota
	kindNumber
	kindNull
	kindTime
)

var errNoValue = errors.New("varbind carries no value")

// errWrongType: the varbind's type is not one its decoder takes.
var errWrongType = errors.New("value of the wrong type for its decoder")

// takesType says whether a decoder of kind reads a value of SNMP type typ:
// text from OctetStrings (and the types SNMP renders as text: IpAddress,
// OID, for string), numbers from the integer types. Anything else is of
// the wrong type and left unplaced, never converted (an Integer is no
// description, a string no Rx power).
func takesType(kind, typ string) bool {
	switch kind {
	case "string":
		return typ == streams.VTOctetString || typ == streams.VTIPAddress || typ == streams.VTOID
	case "hex_serial", "float_string", "date_and_time":
		return typ == streams.VTOctetString
	case "int", "scaled", "enum":
		switch typ {
		case streams.VTInteger, streams.VTCounter32, streams.VTGauge32, streams.VTTimeTicks, streams.VTCounter64:
			return true
		}
		return false
	}
	return true // an unknown kind fails below
}

// DecodeValue applies a decoder to one raw varbind.
func DecodeValue(dec streams.Decoder, vb streams.Varbind) (value, error) {
	var re *regexp.Regexp
	if dec.Kind == "regex" {
		var err error
		if re, err = dec.CompilePattern(); err != nil {
			return value{}, err
		}
	}
	return decodeValue(dec, re, vb)
}

// decodeValue is DecodeValue with a regex decoder's pattern compiled.
func decodeValue(dec streams.Decoder, re *regexp.Regexp, vb streams.Varbind) (value, error) {
	switch vb.Type {
	case streams.VTNull, streams.VTNoSuchObject, streams.VTNoSuchInstance, streams.VTEndOfMibView:
		return value{}, errNoValue
	}
	if !takesType(dec.Kind, vb.Type) {
		return value{}, fmt.Errorf("%w: %s of a %s", errWrongType, dec.Kind, vb.Type)
	}
	switch dec.Kind {
	case "string":
		s, err := text(vb)
		if dec.Trim {
			s = strings.TrimSpace(s)
		}
		return value{text: s}, err
	case "regex":
		return decodeRegex(dec, re, vb)
	case "hex_serial":
		if len(vb.Value) > 2*MaxTextBytes {
			vb.Value = vb.Value[:2*MaxTextBytes] // no serial is that long
		}
		b, err := hex.DecodeString(vb.Value)
		if err != nil {
			return value{}, fmt.Errorf("hex_serial: %w", err)
		}
		return value{text: hexSerial(b)}, nil
	case "int":
		n, err := integer(vb)
		if err != nil || dec.Unit != "" {
			return numberIn(dec.Unit, float64(n), err)
		}
		return value{kind: kindNumber, num: float64(n), text: strconv.FormatInt(n, 10)}, nil
	case "scaled":
		n, err := integer(vb)
		if err != nil {
			return value{}, err
		}
		if dec.NoReading != nil && n == *dec.NoReading {
			return value{kind: kindNull}, nil
		}
		scale := dec.Scale
		if scale == 0 {
			// An unset scale means 1: a zero scale would erase every value.
			scale = 1
		}
		f := round6(float64(n)*scale + dec.Offset)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			// A huge scale or offset: no Inf/NaN may reach Postgres.
			return value{}, fmt.Errorf("scaled %d*%g%+g out of range", n, scale, dec.Offset)
		}
		return numberIn(dec.Unit, f, nil)
	case "float_string":
		s, err := text(vb)
		if err != nil {
			return value{}, err
		}
		if dec.Trim {
			s = strings.TrimSpace(s)
		}
		f, ok := leadingFloat(s)
		if !ok {
			return value{kind: kindNull}, nil
		}
		return numberIn(dec.Unit, f, nil)
	case "enum":
		n, err := integer(vb)
		if err != nil {
			return value{}, err
		}
		if s, ok := dec.Enum[strconv.FormatInt(n, 10)]; ok {
			return value{text: pgText(s)}, nil
		}
		return value{text: "UNKNOWN"}, nil
	case "date_and_time":
		b, err := hex.DecodeString(vb.Value)
		if err != nil {
			return value{}, fmt.Errorf("date_and_time: %w", err)
		}
		t, ok, err := dateAndTime(b)
		if err != nil {
			return value{}, err
		}
		if !ok {
			return value{kind: kindNull}, nil
		}
		return value{kind: kindTime, at: t, text: t.Format(time.RFC3339)}, nil
	default:
		return value{}, fmt.Errorf("decoder kind %q", dec.Kind)
	}
}

// dateAndTime decodes an SNMPv2-TC DateAndTime: year (2 bytes), month,
// day, hour, minutes, seconds, deci-seconds, then optionally direction
// ('+'/'-') and hours and minutes from UTC (local time when absent is
// taken as UTC). Year 0 or all zero bytes is "never" (no reading).
func dateAndTime(b []byte) (time.Time, bool, error) {
	if len(b) != 8 && len(b) != 11 {
		return time.Time{}, false, fmt.Errorf("date_and_time of %d bytes: want 8 or 11", len(b))
	}
	year := int(b[0])<<8 | int(b[1])
	if year == 0 {
		return time.Time{}, false, nil
	}
	mon, day, h, m, s, ds := int(b[2]), int(b[3]), int(b[4]), int(b[5]), int(b[6]), int(b[7])
	if mon < 1 || mon > 12 || day < 1 || day > 31 || h > 23 || m > 59 || s > 60 || ds > 9 {
		return time.Time{}, false, fmt.Errorf("date_and_time %x out of range", b)
	}
	loc := time.UTC
	if len(b) == 11 {
		off := (int(b[9])*60 + int(b[10])) * 60
		switch b[8] {
		case '+':
		case '-':
			off = -off
		default:
			return time.Time{}, false, fmt.Errorf("date_and_time %x: direction %q", b, b[8])
		}
		loc = time.FixedZone("", off)
	}
	return time.Date(year, time.Month(mon), day, h, m, s, ds*100_000_000, loc).UTC(), true, nil
}

// text is a varbind as text: OctetStrings are hex-decoded; any value is
// then made fit for an ONU field (see oltText).
func text(vb streams.Varbind) (string, error) {
	if vb.Type != streams.VTOctetString {
		// Other types are text already, but a batch off the stream may
		// carry anything in them.
		return oltText(vb.Value), nil
	}
	if len(vb.Value) > 2*MaxTextBytes+2*utf8.UTFMax {
		// Cut before decoding: what is past the cap is never read.
		vb.Value = vb.Value[:2*MaxTextBytes+2*utf8.UTFMax]
	}
	b, err := hex.DecodeString(vb.Value)
	if err != nil {
		return "", fmt.Errorf("octet string: %w", err)
	}
	return oltText(string(b)), nil
}

// MaxTextBytes caps a text value from an OLT (a description, a name), cut
// at a character boundary: the poller already cuts values at its
// value_bytes bound, this holds whatever a batch carries.
const MaxTextBytes = 1024

// oltText makes a text read from an OLT fit for an ONU field: control
// characters (C0, DEL, C1: a terminal escape in a description) become
// spaces, NULs go, invalid UTF-8 becomes U+FFFD, and the result is cut to
// MaxTextBytes. Blanks around are kept (a decoder's trim removes them).
func oltText(s string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r == 0:
			return -1
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	// Blanks stay: a decoder trims only when its profile says trim.
	if len(clean) <= MaxTextBytes {
		return clean
	}
	cut := MaxTextBytes
	for cut > 0 && !utf8.RuneStart(clean[cut]) {
		cut--
	}
	return clean[:cut]
}

// pgText drops NULs and replaces invalid UTF-8: Postgres text takes
// neither. Blanks are kept: a decoder trims only when told (Decoder.Trim).
func pgText(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	return strings.ToValidUTF8(s, "\uFFFD")
}

func integer(vb streams.Varbind) (int64, error) {
	switch vb.Type {
	case streams.VTOctetString, streams.VTOID, streams.VTIPAddress:
		return 0, fmt.Errorf("integer of a %s", vb.Type)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(vb.Value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("integer %q: %w", vb.Value, err)
	}
	return n, nil
}

// hexSerial renders a GPON serial: 4 vendor letters then the rest in
// upper-case hex (Huawei's 8 raw bytes). A serial that is already text
// (FiberHome, some ZTE) is kept as text, upper-cased.
func hexSerial(b []byte) string {
	if len(b) != 8 {
		// Text serials may come NUL-padded; raw 8-byte ones may end in
		// zero bytes that are part of the serial.
		if t := []byte(strings.TrimRight(string(b), "\x00")); printable(t) && utf8.Valid(t) {
			return strings.ToUpper(strings.TrimSpace(string(t)))
		}
	}
	if len(b) >= 4 && printable(b[:4]) {
		return string(b[:4]) + strings.ToUpper(hex.EncodeToString(b[4:]))
	}
	return strings.ToUpper(hex.EncodeToString(b))
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return len(b) > 0
}

// leadingFloat parses the number at the start of s ("-10.47", "-10.47 dBm").
// It scans the decimal grammar once and parses once: retrying ever shorter
// prefixes is quadratic, and a value off the wire may be megabytes long.
// A number out of float64 range is no reading.
func leadingFloat(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	digits := func(i int) int {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	j := digits(i)
	n := j - i
	if j < len(s) && s[j] == '.' {
		k := digits(j + 1)
		n += k - j - 1
		j = k
	}
	if n == 0 {
		return 0, false
	}
	end := j
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if e := digits(k); e > k {
			end = e
		}
	}
	f, err := strconv.ParseFloat(s[:end], 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// round6 rounds to 6 decimals; a number too large for that (f*1e6 would
// overflow) has no decimals to round.
func round6(f float64) float64 {
	if math.Abs(f) >= 1<<52 {
		return f
	}
	return math.Round(f*1e6) / 1e6
}

// set stores v in the field it feeds; false when the field is unknown.
func (f *ONUFields) set(field string, v value) bool {
	str := func() *string {
		if v.kind == kindNull {
			return nil
		}
		s := v.text
		return &s
	}
	switch field {
	case streams.FieldSerial:
		if s := str(); s != nil {
			f.Serial = s
		}
	case streams.FieldDescription:
		if s := str(); s != nil {
			f.Description = s
		}
	case streams.FieldStatus:
		if s := str(); s != nil {
			f.Status = s
		}
	case streams.FieldRxPower:
		f.RxPowerSet, f.RxGone = true, false
		f.RxPowerDBm = nil
		switch v.kind {
		case kindNumber:
			n := v.num
			f.RxPowerDBm = &n
		case kindText:
			if n, ok := leadingFloat(v.text); ok {
				f.RxPowerDBm = &n
			}
		}
	case streams.FieldName, streams.FieldModel, streams.FieldFirmware, streams.FieldLastDownCause:
		if s := str(); s != nil {
			if f.Text == nil {
				f.Text = map[string]string{}
			}
			f.Text[field] = *s
		}
	case streams.FieldTxPower, streams.FieldOLTRxPower, streams.FieldDistance, streams.FieldTemperature, streams.FieldVoltage, streams.FieldBias:
		if f.Num == nil {
			f.Num = map[string]*float64{}
		}
		var n *float64
		switch v.kind {
		case kindNumber:
			x := v.num
			n = &x
		case kindText:
			if x, ok := leadingFloat(v.text); ok {
				n = &x
			}
		}
		f.Num[field] = n
	case streams.FieldLastDownTime, streams.FieldLastUpTime:
		if f.Time == nil {
			f.Time = map[string]*time.Time{}
		}
		var t *time.Time
		if v.kind == kindTime {
			x := v.at
			t = &x
		}
		f.Time[field] = t
	default:
		return false
	}
	return true
}
