// Package configrules holds the field rules of the configuration events
// (brands, OIDs, OLTs, jobs): the API refuses a request that breaks them
// with a 400 naming the field, and every consumer that applies
// configuration events refuses (dead-letters) an event that breaks them,
// whoever published it. One place, so the two cannot drift apart.
//
// A rule returns nil or a *FieldError whose Msg is the complete sentence
// ("port must be 1..65535"), fit for an API answer and a dead letter's
// reason alike.
package configrules

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/facho-olt/facho/streams"
)

// Bounds of free text. The read-model columns are Postgres text (no length
// limit, but no NUL and UTF-8 only); these caps keep rows, events and the
// admin's lists readable, far below any message size limit.
const (
	MaxNameRunes        = 200
	MaxDescriptionRunes = 1000
	MaxEnumEntries      = 256
	MaxEnumRunes        = 200
	// MaxJobOIDs bounds the OIDs one job reads.
	MaxJobOIDs = 1000
	// MaxCommunityEncBytes bounds a sealed SNMP community (a community is
	// at most 255 bytes; sealed and encoded it stays far below this).
	MaxCommunityEncBytes = 2048
)

// OID bounds (RFC 2578 section 3.5: at most 128 sub-identifiers, each at
// most 2^32-1).
const (
	MaxOIDArcs = 128
	maxArc     = 1<<32 - 1
)

// Job bounds.
const (
	MinIntervalSeconds   = 10
	MaxIntervalSeconds   = 7 * 24 * 3600
	MaxJobRetries        = 10
	MaxRetryDelaySeconds = 86400
	MaxTimeoutSeconds    = 3600
	MaxPriority          = 100
)

// IndexSchemes are the built-in index schemes (a brand without an index
// definition names one of them).
var indexSchemes = []string{"pon.onu", "fiberhome"}

// IndexSchemes lists the built-in index schemes.
func IndexSchemes() []string { return append([]string(nil), indexSchemes...) }

// Kinds are the job kinds.
func Kinds() []string {
	return []string{streams.KindDiscovery, streams.KindGet, streams.KindWalk, streams.KindBulkWalk, streams.KindHealth}
}

// FieldError is a broken rule: the field and the sentence saying why.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

func bad(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// AsFieldError returns err's FieldError, if it is one.
func AsFieldError(err error) (*FieldError, bool) {
	var fe *FieldError
	ok := errors.As(err, &fe)
	return fe, ok
}

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// OID accepts a dotted numeric OID: 2..128 sub-identifiers of 0..2^32-1
// without leading zeros (the poller matches returned OIDs textually), the
// first 0..2 and, under 0 or 1, the second 0..39 (X.690 encodes the first
// two as one). A leading dot is tolerated, as net-snmp writes it.
func OID(field, s string) error {
	const form = " (dotted numeric, e.g. 1.3.6.1.2.1.1.1)"
	if len(s) > MaxOIDArcs*11 {
		return bad(field, "%s is longer than %d sub-identifiers", field, MaxOIDArcs)
	}
	arcs := strings.Split(strings.TrimPrefix(s, "."), ".")
	if len(arcs) < 2 {
		return bad(field, "%s needs at least 2 sub-identifiers"+form, field)
	}
	if len(arcs) > MaxOIDArcs {
		return bad(field, "%s has %d sub-identifiers, at most %d", field, len(arcs), MaxOIDArcs)
	}
	var first uint64
	for i, a := range arcs {
		if a == "" {
			return bad(field, "%s has an empty sub-identifier at position %d"+form, field, i+1)
		}
		if len(a) > 1 && a[0] == '0' {
			return bad(field, "%s sub-identifier %d (%q) has a leading zero", field, i+1, a)
		}
		for _, c := range a {
			if c < '0' || c > '9' {
				return bad(field, "%s sub-identifier %d is not a number"+form, field, i+1)
			}
		}
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil || n > maxArc {
			return bad(field, "%s sub-identifier %d exceeds %d", field, i+1, uint64(maxArc))
		}
		switch {
		case i == 0 && n > 2:
			return bad(field, "%s must start with 0, 1 or 2", field)
		case i == 0:
			first = n
		case i == 1 && first < 2 && n > 39:
			return bad(field, "%s: the second sub-identifier must be 0..39 under %d", field, first)
		}
	}
	return nil
}

// IP accepts a literal IPv4 or IPv6 unicast address without zone: not
// unspecified (0.0.0.0, ::), not in 0.0.0.0/8, not the limited broadcast
// 255.255.255.255 and not multicast. Loopback stays valid (the simulator
// listens on 127.0.0.1).
func IP(field, s string) error {
	if len(s) > 64 {
		return bad(field, "%s must be an IPv4 or IPv6 address", field)
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return bad(field, "%s must be an IPv4 or IPv6 address", field)
	}
	a = a.Unmap()
	switch {
	case a.IsUnspecified() || (a.Is4() && a.As4()[0] == 0):
		return bad(field, "%s %s is unspecified (\"this host\"), not an OLT's address", field, s)
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return bad(field, "%s %s is the broadcast address, not an OLT's address", field, s)
	case a.IsMulticast():
		return bad(field, "%s %s is a multicast address, not an OLT's address", field, s)
	}
	return nil
}

// Port accepts a UDP port, 1..65535.
func Port(field string, p int) error {
	if p < 1 || p > 65535 {
		return bad(field, "%s must be 1..65535", field)
	}
	return nil
}

// Name requires a non-empty single-line name of bounded length.
func Name(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return bad(field, "%s is required", field)
	}
	return Text(field, v, MaxNameRunes, false)
}

// Description accepts an optional text of bounded length; tabs and line
// breaks are allowed, other control characters are not.
func Description(field, v string) error {
	return Text(field, v, MaxDescriptionRunes, true)
}

// Text refuses invalid UTF-8, control characters (NUL included: Postgres
// text cannot hold it), bidirectional overrides (they make an admin list
// lie about what it shows) and more than max characters.
func Text(field, v string, max int, multiline bool) error {
	if p := TextProblem(v, max, multiline); p != "" {
		return bad(field, "%s %s", field, p)
	}
	return nil
}

// TextProblem says what is wrong with v as Text sees it, "" if nothing.
// It reads at most max+1 characters past which it stops: a huge value
// costs no more than a long one.
func TextProblem(v string, max int, multiline bool) string {
	if !utf8.ValidString(v) {
		return "is not valid UTF-8"
	}
	n := 0
	for _, r := range v {
		n++
		if n > max {
			return fmt.Sprintf("is longer than %d characters", max)
		}
		if multiline && (r == '\t' || r == '\n' || r == '\r') {
			continue
		}
		if r == utf8.RuneError {
			return fmt.Sprintf("is not valid UTF-8 (U+FFFD, the replacement character, at character %d)", n)
		}
		if unicode.IsControl(r) || IsBidiControl(r) {
			return fmt.Sprintf("must not contain control characters (%U at character %d)", r, n)
		}
	}
	return ""
}

// IsBidiControl reports the Unicode bidirectional embedding, override and
// isolate controls (U+202A..U+202E, U+2066..U+2069) and marks.
func IsBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}

// Decoder validates the kind and the free text of an enum mapping.
func Decoder(field string, d streams.Decoder) error {
	if err := d.Validate(); err != nil {
		return bad(field, "%s: %v (kinds: %s)", field, err, strings.Join(streams.DecoderKinds, ", "))
	}
	if len(d.Enum) > MaxEnumEntries {
		return bad(field+".enum", "%s.enum has %d entries, at most %d", field, len(d.Enum), MaxEnumEntries)
	}
	keys := make([]string, 0, len(d.Enum))
	for k := range d.Enum {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad entry is the same at every try
	for _, k := range keys {
		v := d.Enum[k]
		if p := TextProblem(k, MaxEnumRunes, false); p != "" {
			return bad(field+".enum", "%s.enum: key %s %s", field, strconv.QuoteToASCII(k), p)
		}
		if p := TextProblem(v, MaxEnumRunes, false); p != "" {
			return bad(field+".enum", "%s.enum: the value of %s %s", field, strconv.QuoteToASCII(k), p)
		}
	}
	return nil
}

// ID validates an id (it becomes a subject token).
func ID(field, v string) error {
	if !streams.ValidID(v) {
		return bad(field, "%s must be 1-64 characters of A-Z a-z 0-9 _ - starting with a letter or digit", field)
	}
	return nil
}

// SNMP validates an SNMP tuning.
func SNMP(field string, t streams.SNMPTuning) error {
	if err := t.Validate(); err != nil {
		return bad(field, "%s: %s", field, err.Error())
	}
	return nil
}

// first returns the first error of checks, in order.
func first(checks ...func() error) error {
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// OLT checks an OLT event as a consumer applies it: the id, a name, a
// literal unicast address, a port 1..65535, a brand id, a bounded
// description and sealed community, a valid SNMP tuning.
func OLT(e streams.OLTUpserted) error {
	return first(
		func() error { return ID("id", e.ID) },
		func() error { return Name("name", e.Name) },
		func() error { return IP("ip", e.IP) },
		func() error { return Port("port", e.Port) },
		func() error { return ID("brand_id", e.BrandID) },
		func() error { return Description("description", e.Description) },
		func() error {
			if len(e.CommunityEnc) > MaxCommunityEncBytes {
				return bad("community_enc", "community_enc is longer than %d bytes", MaxCommunityEncBytes)
			}
			return nil
		},
		func() error { return SNMP("snmp", e.SNMP) },
	)
}

// Brand checks a brand event: the id, a name, a bounded description, an
// index scheme that resolves (a built-in one, or the definition it
// carries), a valid SNMP tuning.
func Brand(e streams.BrandUpserted) error {
	return first(
		func() error { return ID("id", e.ID) },
		func() error { return Name("name", e.Name) },
		func() error { return Description("description", e.Description) },
		func() error { return Text("profile", e.Profile, MaxNameRunes, false) },
		func() error {
			if _, err := streams.ResolveIndex(e.IndexScheme, e.Index); err != nil {
				return bad("index_scheme", "index_scheme: %v", err)
			}
			return nil
		},
		func() error { return SNMP("snmp", e.SNMP) },
	)
}

// OIDField checks what an OID means: an ONU field, or a health job's
// column, which names its table (health.<table>.<field>).
func OIDField(field, v string) error {
	if _, _, ok := streams.ParseHealthField(v); ok {
		return nil
	}
	if !oneOf(v, streams.ONUFields()) {
		return bad(field, "%s must be one of %s, or health.<table>.<field>", field, strings.Join(streams.ONUFields(), ", "))
	}
	return nil
}

// OIDEvent checks an OID event: the ids, a name, a dotted numeric OID, a
// known field, a valid decoder, index suffix and index definition.
func OIDEvent(e streams.OIDUpserted) error {
	return first(
		func() error { return ID("id", e.ID) },
		func() error { return ID("brand_id", e.BrandID) },
		func() error { return Name("name", e.Name) },
		func() error { return OID("oid", e.OID) },
		func() error { return OIDField("field", e.Field) },
		func() error { return Decoder("decoder", e.Decoder) },
		func() error {
			if err := streams.ValidIndexSuffix(e.IndexSuffix); err != nil {
				return bad("index_suffix", "%s", err.Error())
			}
			return nil
		},
		func() error {
			if e.Index == nil {
				return nil
			}
			if err := e.Index.Validate(); err != nil {
				return bad("index", "index: %v", err)
			}
			return nil
		},
	)
}

// Job checks a job event: the ids, a name, a kind, the interval, retries,
// retry delay (0: the planner's default), timeout (0: the kind's default)
// and priority within their ranges, at most MaxJobOIDs valid OID ids (the
// API also requires one; a job whose OIDs were deleted may have none).
func Job(e streams.JobUpserted) error {
	return first(
		func() error { return ID("id", e.ID) },
		func() error { return Name("name", e.Name) },
		func() error { return ID("brand_id", e.BrandID) },
		func() error {
			if !oneOf(e.Kind, Kinds()) {
				return bad("kind", "kind must be one of %s", strings.Join(Kinds(), ", "))
			}
			return nil
		},
		func() error { return IntervalSeconds("interval_seconds", e.IntervalSeconds) },
		func() error { return MaxRetries("max_retries", e.MaxRetries) },
		func() error {
			if e.RetryDelaySeconds < 0 || e.RetryDelaySeconds > MaxRetryDelaySeconds {
				return bad("retry_delay_seconds", "retry_delay_seconds must be 1..%d", MaxRetryDelaySeconds)
			}
			return nil
		},
		func() error { return TimeoutSeconds("timeout_seconds", e.TimeoutSeconds) },
		func() error { return Priority("priority", e.Priority) },
		func() error {
			if len(e.OIDIDs) > MaxJobOIDs {
				return bad("oid_ids", "oid_ids has %d OIDs, at most %d", len(e.OIDIDs), MaxJobOIDs)
			}
			for _, id := range e.OIDIDs {
				if !streams.ValidID(id) {
					return bad("oid_ids", "oid id %q is not a valid id", id)
				}
			}
			return nil
		},
	)
}

// IntervalSeconds accepts a job interval of MinIntervalSeconds..MaxIntervalSeconds.
func IntervalSeconds(field string, v int) error {
	if v < MinIntervalSeconds || v > MaxIntervalSeconds {
		return bad(field, "%s must be %d..%d", field, MinIntervalSeconds, MaxIntervalSeconds)
	}
	return nil
}

// MaxRetries accepts -1 (none), 0 (the queue class's default) or 1..MaxJobRetries.
func MaxRetries(field string, v int) error {
	if v < -1 || v > MaxJobRetries {
		return bad(field, "%s must be 1..%d, 0 for the default of the job's queue class or -1 for none", field, MaxJobRetries)
	}
	return nil
}

// TimeoutSeconds accepts 0 (the kind's default) or 1..MaxTimeoutSeconds.
func TimeoutSeconds(field string, v int) error {
	if v < 0 || v > MaxTimeoutSeconds {
		return bad(field, "%s must be 0 (default of the kind) or 1..%d", field, MaxTimeoutSeconds)
	}
	return nil
}

// Priority accepts 0..MaxPriority.
func Priority(field string, v int) error {
	if v < 0 || v > MaxPriority {
		return bad(field, "%s must be 0..%d", field, MaxPriority)
	}
	return nil
}
