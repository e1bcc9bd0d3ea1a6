package streams

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Row rules of an index definition: an ONU named by a column's value
// (ValueKey) and rows kept only when their columns match (RowFilter). Both
// read values of the row, so a table using them is read by a walk that
// reads those columns; the projector hands the row's values to ParseRow.

// ValueKey names the ONU by a text column of its row: Pattern (RE2) is
// matched against the column's value, and its named groups become names
// that pon_index, onu_id and port_name refer to like parts (a group whose
// text is a decimal integer is an integer, one that took no part in the
// match is 0; hash(group) for any text; a name may stand in several
// alternatives, the one that matched gives its value). A
// row whose value does not match is no ONU (skipped as filtered). Several
// rows giving the same key are one ONU: the first row read sets its
// fields, the others fill only what it left unset.
//
// Column is the profile's column id; OID is that column's OID (a profile
// fills it from Column; an event carries it).
type ValueKey struct {
	Column  string `json:"column,omitempty" yaml:"column,omitempty"`
	OID     string `json:"oid,omitempty" yaml:"oid,omitempty"`
	Pattern string `json:"pattern" yaml:"pattern"`
}

// RowFilter keeps the rows whose column's text matches Match (RE2,
// anywhere in the text; Invert keeps those that do not). A batch that does
// not read the column is not filtered by it (a get addresses ONUs already
// known); a walk that reads it drops every row without a match, and rows
// where the column has no value.
type RowFilter struct {
	Column string `json:"column,omitempty" yaml:"column,omitempty"`
	OID    string `json:"oid,omitempty" yaml:"oid,omitempty"`
	Match  string `json:"match" yaml:"match"`
	Invert bool   `json:"invert,omitempty" yaml:"invert,omitempty"`
}

// ErrRowFiltered: the row is no ONU (a filter or the key's pattern did not
// match); not an error of the OLT or of the definition.
var ErrRowFiltered = errors.New("row filtered out")

// maxRowFilters bounds IndexSpec.Filter.
const maxRowFilters = 8

var dottedOID = regexp.MustCompile(`^[0-9]+(\.[0-9]+)+$`)

// validateRows checks Key and Filter and adds the key's group names to
// names (kind "group").
func (s IndexSpec) validateRows(names map[string]string) error {
	if len(s.Filter) > maxRowFilters {
		return fmt.Errorf("index filter: at most %d", maxRowFilters)
	}
	for i, f := range s.Filter {
		if !dottedOID.MatchString(strings.Trim(f.OID, ".")) {
			return fmt.Errorf("index filter %d: oid %q: want a dotted OID (the column's)", i+1, f.OID)
		}
		if f.Match == "" || len(f.Match) > MaxPatternLen {
			return fmt.Errorf("index filter %d: match: want a pattern of 1..%d characters", i+1, MaxPatternLen)
		}
		if _, err := regexp.Compile(f.Match); err != nil {
			return fmt.Errorf("index filter %d: match: %w", i+1, err)
		}
	}
	k := s.Key
	if k == nil {
		return nil
	}
	if !dottedOID.MatchString(strings.Trim(k.OID, ".")) {
		return fmt.Errorf("index key: oid %q: want a dotted OID (the column's)", k.OID)
	}
	if k.Pattern == "" || len(k.Pattern) > MaxPatternLen {
		return fmt.Errorf("index key: pattern: want 1..%d characters", MaxPatternLen)
	}
	re, err := regexp.Compile(k.Pattern)
	if err != nil {
		return fmt.Errorf("index key: pattern: %w", err)
	}
	groups := 0
	inPattern := map[string]bool{}
	for _, g := range re.SubexpNames()[1:] {
		if g == "" || inPattern[g] {
			continue // a name may stand in several alternatives
		}
		inPattern[g] = true
		if !indexNameRE.MatchString(g) {
			return fmt.Errorf("index key: group %q: want lower-case letters, digits, _", g)
		}
		if _, dup := names[g]; dup {
			return fmt.Errorf("index key: group %q: name used twice", g)
		}
		names[g] = "group"
		groups++
	}
	if groups == 0 {
		return errors.New("index key: pattern: want named groups ((?P<onu>[0-9]+)) for pon_index and onu_id to refer to")
	}
	return nil
}

// rowRules are Key and Filter compiled.
type rowRules struct {
	key     *regexp.Regexp
	keyOID  string
	filters []rowFilter
	err     error
}

type rowFilter struct {
	oid    string
	re     *regexp.Regexp
	invert bool
}

// compileRows compiles Key and Filter; nil when the spec has neither.
func (s IndexSpec) compileRows() *rowRules {
	if s.Key == nil && len(s.Filter) == 0 {
		return nil
	}
	r := &rowRules{}
	var errs []error
	for _, f := range s.Filter {
		re, err := regexp.Compile(f.Match)
		errs = append(errs, err)
		r.filters = append(r.filters, rowFilter{oid: strings.Trim(f.OID, "."), re: re, invert: f.Invert})
	}
	if s.Key != nil {
		var err error
		r.key, err = regexp.Compile(s.Key.Pattern)
		r.keyOID = strings.Trim(s.Key.OID, ".")
		errs = append(errs, err)
	}
	r.err = errors.Join(errs...)
	return r
}

// RowOIDs are the OIDs of the columns whose values ParseRow needs (the
// key's and the filters'), without dots around.
func (ip *IndexParser) RowOIDs() []string {
	if ip.rows == nil {
		return nil
	}
	var out []string
	if ip.rows.key != nil {
		out = append(out, ip.rows.keyOID)
	}
	for _, f := range ip.rows.filters {
		out = append(out, f.oid)
	}
	return out
}

// HasRowRules says whether the spec names ONUs by value or filters rows.
func (ip *IndexParser) HasRowRules() bool { return ip.rows != nil }

// ParseRow reads a row index with the row's values: value returns the
// text of the row's value of a column (by OID, as RowOIDs gives it), read
// says whether the batch reads that column at all. A row that a filter or
// the key's pattern drops is ErrRowFiltered.
func (ip *IndexParser) ParseRow(suffix string, value func(oid string) (string, bool), read func(oid string) bool) (ParsedIndex, error) {
	rr := ip.rows
	if rr == nil {
		return ip.Parse(suffix)
	}
	if rr.err != nil {
		return ParsedIndex{}, fmt.Errorf("index row rules: %w", rr.err)
	}
	for _, f := range rr.filters {
		if !read(f.oid) {
			continue
		}
		v, ok := value(f.oid)
		if !ok || f.re.MatchString(v) == f.invert {
			return ParsedIndex{}, ErrRowFiltered
		}
	}
	r, err := ip.parseParts(suffix)
	if err != nil {
		return ParsedIndex{}, err
	}
	if rr.key != nil {
		v, ok := value(rr.keyOID)
		if !ok {
			if !read(rr.keyOID) {
				return ParsedIndex{}, fmt.Errorf("index %q: the batch does not read the key column %s", suffix, rr.keyOID)
			}
			return ParsedIndex{}, ErrRowFiltered
		}
		m := rr.key.FindStringSubmatch(v)
		if m == nil {
			return ParsedIndex{}, ErrRowFiltered
		}
		for i, g := range rr.key.SubexpNames() {
			if i == 0 || g == "" {
				continue
			}
			if _, set := r.strs[g]; set && m[i] == "" {
				continue // the alternative that matched set it
			}
			r.strs[g], r.texts[g] = m[i], m[i]
			r.ints[g] = 0 // a group that took no part in the match
			if n, err := strconv.ParseUint(m[i], 10, 63); err == nil {
				r.ints[g] = int64(n)
			} else if m[i] != "" {
				delete(r.ints, g) // text: only hash() takes it
			}
		}
	}
	return ip.finish(suffix, r)
}
