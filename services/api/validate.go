package api

import (
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/facho-olt/facho/streams"
)

// IndexSchemes are the brand index schemes the poller and projector decode.
var IndexSchemes = []string{"pon.onu", "fiberhome"}

// Kinds are the job kinds.
var Kinds = []string{streams.KindDiscovery, streams.KindGet, streams.KindWalk, streams.KindBulkWalk}

// Fields are the ONU fields an OID can feed.
var Fields = []string{streams.FieldSerial, streams.FieldDescription, streams.FieldStatus, streams.FieldRxPower}

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// validOID: dotted numeric, at least two arcs, first arc 0..2, no empty
// arcs (a leading dot is tolerated, as net-snmp writes it).
func validOID(s string) bool {
	s = strings.TrimPrefix(s, ".")
	arcs := strings.Split(s, ".")
	if len(arcs) < 2 || len(s) > 1024 {
		return false
	}
	for i, a := range arcs {
		if a == "" || len(a) > 10 {
			return false
		}
		n, err := strconv.ParseUint(a, 10, 32)
		if err != nil {
			return false
		}
		if i == 0 && n > 2 {
			return false
		}
	}
	return true
}

// validIP accepts a literal IPv4 or IPv6 address without zone.
func validIP(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Zone() == ""
}

// checkName requires a non-empty name of bounded length.
func checkName(field, v string) *apiError {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return badField(field, "%s is required", field)
	case utf8.RuneCountInString(v) > 200:
		return badField(field, "%s is longer than 200 characters", field)
	}
	return nil
}

// checkID validates an id given in a body or path (it becomes a subject
// token).
// newOrCheckedID returns a fresh id for an empty one, else checks it.
func newOrCheckedID(id string) (string, *apiError) {
	if id == "" {
		return newID(), nil
	}
	return id, checkID("id", id)
}

func checkID(field, v string) *apiError {
	if !streams.ValidID(v) {
		return badField(field, "%s must be 1-64 characters of A-Z a-z 0-9 _ - starting with a letter or digit", field)
	}
	return nil
}
