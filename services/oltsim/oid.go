package oltsim

import (
	"fmt"
	"strconv"
	"strings"
)

// oid is an SNMP object identifier as a list of sub-identifiers.
type oid []uint32

// parseOID parses a dotted OID; a leading dot is accepted.
func parseOID(s string) (oid, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, ".")
	if s == "" {
		return nil, fmt.Errorf("parse oid: empty")
	}
	parts := strings.Split(s, ".")
	out := make(oid, 0, len(parts))
	for _, p := range parts {
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("parse oid %q: %w", s, err)
		}
		out = append(out, uint32(v))
	}
	return out, nil
}

// mustOID is used only with literal OIDs written in this package's tables.
func mustOID(s string) oid {
	o, err := parseOID(s)
	if err != nil {
		return oid{0, 0}
	}
	return o
}

func (o oid) String() string {
	var b strings.Builder
	for i, v := range o {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.FormatUint(uint64(v), 10))
	}
	return b.String()
}

// compareOID compares numerically, component by component.
func compareOID(a, b oid) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

func (o oid) hasPrefix(p oid) bool {
	if len(p) > len(o) {
		return false
	}
	for i := range p {
		if o[i] != p[i] {
			return false
		}
	}
	return true
}

// join returns a new OID made of o followed by the parts.
func (o oid) join(parts ...uint32) oid {
	out := make(oid, 0, len(o)+len(parts))
	out = append(out, o...)
	return append(out, parts...)
}
