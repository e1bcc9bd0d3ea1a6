package poller

import (
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// redactedMark replaces whatever was scrubbed. It says nothing of the
// value it replaces, not even its length.
const redactedMark = "<redacted>"

// hexDumpMark replaces a dump of raw packet bytes.
const hexDumpMark = "<hex dump>"

// communityKey finds a community quoted as a key and value:
// "Community:public" (gosnmp's packet dump), "community=public",
// `"community": "public"`. The value starts at the end of the match.
var communityKey = regexp.MustCompile(`(?i)community"?[ \t]*[:=][ \t]*`)

// hexRun is a run of hexadecimal digits: gosnmp quotes the raw bytes of a
// packet it cannot decode with %x, and the community is in those bytes.
var hexRun = regexp.MustCompile(`[0-9A-Fa-f]+`)

// byteList is a Go %v dump of a []byte ("[4 6 112 117 ...]").
var byteList = regexp.MustCompile(`\[(?:\d{1,3} )+\d{1,3}\]`)

// longHexDump is the length from which a hex run is a packet dump whatever
// it contains (no decimal number, OID component or id in our texts is
// that long without a separator).
const longHexDump = 16

// scrubCommunity removes an SNMP community from a text that may quote it:
// an error of gosnmp or of the network stack. It never replaces plain
// substrings of short or common values, which would mangle the text and
// reveal the community by what was replaced ("so<community>ket" says the
// community is "c"). It scrubs only where a community can appear:
//
//   - after a community key ("Community:x", "community=x", "community": "x"):
//     the value, whatever it is, up to the next separator (or the whole
//     community when the text has it there);
//   - raw packet bytes: a hex dump of 16 digits or more, or a shorter one
//     that holds the community's bytes, and a []byte dump that holds them;
//
// The community found anywhere else is left alone, however distinctive:
// nothing but the places above quotes a community, so it is some other
// text that happens to hold it (an OLT id, a description), and replacing
// it there would mangle that text and reveal the community.
func scrubCommunity(s, community string) string {
	s = scrubKeyed(s, community)
	s = scrubHexDumps(s, community)
	s = scrubByteLists(s, community)
	return s
}

func scrubKeyed(s, community string) string {
	var b strings.Builder
	last := 0
	for _, m := range communityKey.FindAllStringIndex(s, -1) {
		if m[0] < last {
			continue // inside a value already scrubbed
		}
		start, end := valueSpan(s, m[1], community)
		if end == start {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(redactedMark)
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// valueSpan is the value that starts at s[at]: inside its quotes when
// quoted, otherwise up to the next separator, or further when the
// community itself (which may hold separators) is there.
func valueSpan(s string, at int, community string) (start, end int) {
	rest := s[at:]
	if rest == "" {
		return at, at
	}
	if q := rest[0]; q == '"' || q == '\'' {
		n := strings.IndexByte(rest[1:], q)
		if n < 0 {
			n = len(rest) - 1
		}
		if community != "" && len(community) > n && strings.HasPrefix(rest[1:], community) {
			n = len(community) // the community holds the quote
		}
		return at + 1, at + 1 + n
	}
	start = at
	n := strings.IndexFunc(rest, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(",;)]}>", r)
	})
	if n < 0 {
		n = len(rest)
	}
	if community != "" && strings.HasPrefix(rest, community) && !wordByteAt(rest, len(community)) {
		// The community itself, which may hold separators or be
		// followed by one this scan does not know (a colon).
		n = len(community)
	}
	return start, start + n
}

// wordByteAt says whether s[i] is part of a word (a letter, a digit, an
// underscore or a byte of a multi-byte character).
func wordByteAt(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func scrubHexDumps(s, community string) string {
	enc := ""
	if community != "" {
		enc = hex.EncodeToString([]byte(community))
	}
	return hexRun.ReplaceAllStringFunc(s, func(run string) string {
		if len(run) >= longHexDump {
			return hexDumpMark
		}
		if enc != "" && len(run) >= len(enc)+4 && holdsBytes(strings.ToLower(run), enc) {
			return hexDumpMark
		}
		return run
	})
}

// holdsBytes says whether the hex digits run hold enc at a byte boundary.
func holdsBytes(run, enc string) bool {
	for i := 0; i+len(enc) <= len(run); i += 2 {
		if run[i:i+len(enc)] == enc {
			return true
		}
	}
	return false
}

func scrubByteLists(s, community string) string {
	if community == "" {
		return s
	}
	parts := make([]string, len(community))
	for i := 0; i < len(community); i++ {
		parts[i] = strconv.Itoa(int(community[i]))
	}
	want := " " + strings.Join(parts, " ") + " "
	return byteList.ReplaceAllStringFunc(s, func(list string) string {
		if strings.Contains(" "+list[1:len(list)-1]+" ", want) {
			return hexDumpMark
		}
		return list
	})
}
