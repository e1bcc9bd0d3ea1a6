package api

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/facho-olt/facho/streams"
)

// IndexSchemes are the brand index schemes the poller and projector decode.
var IndexSchemes = []string{"pon.onu", "fiberhome"}

// Kinds are the job kinds.
var Kinds = []string{streams.KindDiscovery, streams.KindGet, streams.KindWalk, streams.KindBulkWalk, streams.KindHealth}

// Fields are the ONU fields an OID can feed.
var Fields = streams.ONUFields()

// Bounds of free text. The read-model columns are Postgres text (no
// length limit, but no NUL and UTF-8 only); these caps keep rows, events
// and the admin's lists readable, far below any message size limit.
const (
	maxNameRunes        = 200
	maxDescriptionRunes = 1000
	maxEnumEntries      = 256
	maxEnumRunes        = 200
)

// OID bounds (RFC 2578 section 3.5: at most 128 sub-identifiers, each at
// most 2^32-1).
const (
	maxOIDArcs = 128
	maxArc     = 1<<32 - 1
)

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// checkOID: dotted numeric, 2..128 sub-identifiers of 0..2^32-1 without
// leading zeros (the poller matches returned OIDs textually), the first
// 0..2 and, under 0 or 1, the second 0..39 (X.690 encodes the first two as
// one). A leading dot is tolerated, as net-snmp writes it.
func checkOID(field, s string) *apiError {
	const form = " (dotted numeric, e.g. 1.3.6.1.2.1.1.1)"
	if len(s) > maxOIDArcs*11 {
		return badField(field, "%s is longer than %d sub-identifiers", field, maxOIDArcs)
	}
	arcs := strings.Split(strings.TrimPrefix(s, "."), ".")
	if len(arcs) < 2 {
		return badField(field, "%s needs at least 2 sub-identifiers"+form, field)
	}
	if len(arcs) > maxOIDArcs {
		return badField(field, "%s has %d sub-identifiers, at most %d", field, len(arcs), maxOIDArcs)
	}
	var first uint64
	for i, a := range arcs {
		if a == "" {
			return badField(field, "%s has an empty sub-identifier at position %d"+form, field, i+1)
		}
		if len(a) > 1 && a[0] == '0' {
			return badField(field, "%s sub-identifier %d (%q) has a leading zero", field, i+1, a)
		}
		for _, c := range a {
			if c < '0' || c > '9' {
				return badField(field, "%s sub-identifier %d is not a number"+form, field, i+1)
			}
		}
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil || n > maxArc {
			return badField(field, "%s sub-identifier %d exceeds %d", field, i+1, uint64(maxArc))
		}
		switch {
		case i == 0 && n > 2:
			return badField(field, "%s must start with 0, 1 or 2", field)
		case i == 0:
			first = n
		case i == 1 && first < 2 && n > 39:
			return badField(field, "%s: the second sub-identifier must be 0..39 under %d", field, first)
		}
	}
	return nil
}

// checkIP accepts a literal IPv4 or IPv6 unicast address without zone:
// not unspecified (0.0.0.0, ::), not in 0.0.0.0/8, not the limited
// broadcast 255.255.255.255 and not multicast. Loopback stays valid (the
// simulator listens on 127.0.0.1).
func checkIP(field, s string) *apiError {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return badField(field, "%s must be an IPv4 or IPv6 address", field)
	}
	a = a.Unmap()
	switch {
	case a.IsUnspecified() || (a.Is4() && a.As4()[0] == 0):
		return badField(field, "%s %s is unspecified (\"this host\"), not an OLT's address", field, s)
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return badField(field, "%s %s is the broadcast address, not an OLT's address", field, s)
	case a.IsMulticast():
		return badField(field, "%s %s is a multicast address, not an OLT's address", field, s)
	}
	return nil
}

// checkName requires a non-empty single-line name of bounded length.
func checkName(field, v string) *apiError {
	if strings.TrimSpace(v) == "" {
		return badField(field, "%s is required", field)
	}
	return checkText(field, v, maxNameRunes, false)
}

// checkDescription accepts an optional text of bounded length; tabs and
// line breaks are allowed, other control characters are not.
func checkDescription(field, v string) *apiError {
	return checkText(field, v, maxDescriptionRunes, true)
}

// checkText refuses invalid UTF-8, control characters (NUL included:
// Postgres text cannot hold it), bidirectional overrides (they make an
// admin list lie about what it shows) and more than max characters.
func checkText(field, v string, max int, multiline bool) *apiError {
	if p := textProblem(v, max, multiline); p != "" {
		return badField(field, "%s %s", field, p)
	}
	return nil
}

// textProblem says what is wrong with v as checkText sees it, "" if
// nothing.
func textProblem(v string, max int, multiline bool) string {
	if !utf8.ValidString(v) {
		return "is not valid UTF-8"
	}
	n := 0
	for _, r := range v {
		n++
		if multiline && (r == '\t' || r == '\n' || r == '\r') {
			continue
		}
		if r == utf8.RuneError {
			return fmt.Sprintf("is not valid UTF-8 (U+FFFD, the replacement character, at character %d)", n)
		}
		if unicode.IsControl(r) || isBidiControl(r) {
			return fmt.Sprintf("must not contain control characters (%U at character %d)", r, n)
		}
	}
	if n > max {
		return fmt.Sprintf("is longer than %d characters", max)
	}
	return ""
}

// isBidiControl reports the Unicode bidirectional embedding, override and
// isolate controls (U+202A..U+202E, U+2066..U+2069) and marks.
func isBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}

// checkDecoder validates the kind and the free text of an enum mapping.
func checkDecoder(field string, d streams.Decoder) *apiError {
	if err := d.Validate(); err != nil {
		return badField(field, "%s: %v (kinds: %s)", field, err, strings.Join(streams.DecoderKinds, ", "))
	}
	if len(d.Enum) > maxEnumEntries {
		return badField(field+".enum", "%s.enum has %d entries, at most %d", field, len(d.Enum), maxEnumEntries)
	}
	keys := make([]string, 0, len(d.Enum))
	for k := range d.Enum {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad entry is the same at every try
	for _, k := range keys {
		v := d.Enum[k]
		if p := textProblem(k, maxEnumRunes, false); p != "" {
			return badField(field+".enum", "%s.enum: key %s %s", field, strconv.QuoteToASCII(k), p)
		}
		if p := textProblem(v, maxEnumRunes, false); p != "" {
			return badField(field+".enum", "%s.enum: the value of %s %s", field, strconv.QuoteToASCII(k), p)
		}
	}
	return nil
}

// newOrCheckedID returns a fresh id for an empty one, else checks it.
func newOrCheckedID(id string) (string, *apiError) {
	if id == "" {
		return newID(), nil
	}
	return id, checkID("id", id)
}

// checkID validates an id given in a body or path (it becomes a subject
// token).
func checkID(field, v string) *apiError {
	if !streams.ValidID(v) {
		return badField(field, "%s must be 1-64 characters of A-Z a-z 0-9 _ - starting with a letter or digit", field)
	}
	return nil
}
