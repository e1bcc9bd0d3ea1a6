package poller

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/gosnmp/gosnmp"
)

func TestScrubCommunity(t *testing.T) {
	const meta = `a.b*c(d)[e]+$^|\1` // regex metacharacters, and distinctive
	for _, tc := range []struct {
		name, community, in, want string
	}{
		// "c": a blind replace turned "socket" into "so<community>ket".
		{"c: words keep their c", "c", "read udp 127.0.0.1:40000->127.0.0.1:161: socket: connection refused",
			"read udp 127.0.0.1:40000->127.0.0.1:161: socket: connection refused"},
		{"c: a lone c is a letter, not the community", "c", "error c at index 2", "error c at index 2"},
		{"c: gosnmp packet dump", "c", "Version:2c, Community:c, PDUType:GetBulkRequest", "Version:2c, Community:<redacted>, PDUType:GetBulkRequest"},
		{"c: community=", "c", "bad answer (community=c)", "bad answer (community=<redacted>)"},
		{"c: hex dump of the packet holds it", "c", "error parsing community string: not enough data for OctetString (9 vs 3): 040163a2",
			"error parsing community string: not enough data for OctetString (9 vs 3): <hex dump>"},
		{"c: a number holding 63 stays", "c", "request id 1263 of 63", "request id 1263 of 63"},

		{"public: a word stays", "public", "public network unreachable", "public network unreachable"},
		{"public: json", "public", `{"community": "public", "port": 161}`, `{"community": "<redacted>", "port": 161}`},
		{"public: key is case-insensitive", "public", "COMMUNITY: public", "COMMUNITY: <redacted>"},
		{"public: hex dump", "public", "unable to parse: 0406" + hex.EncodeToString([]byte("public")), "unable to parse: <hex dump>"},
		{"public: byte dump", "public", "raw [48 41 2 1 1 4 6 112 117 98 108 105 99 165]", "raw <hex dump>"},
		{"public: byte dump of other bytes stays", "public", "raw [1 2 3]", "raw [1 2 3]"},

		// A community equal to a word of the text must not reveal itself
		// by being replaced there.
		{"word: timeout stays", "timeout", "request timeout (after 1 retries): max retries exceeded",
			"request timeout (after 1 retries): max retries exceeded"},
		{"word: keyed timeout", "timeout", "community=timeout: request timeout", "community=<redacted>: request timeout"},
		{"word: long word stays", "connection", "read: connection refused", "read: connection refused"},

		{"meta: keyed value with separators", meta, "community: " + meta + " bad", "community: <redacted> bad"},
		{"meta: elsewhere it stays", meta, "oops " + meta + "!", "oops " + meta + "!"},
		{"an OLT id holding the community stays", "s3cr3t-community", "read olt s3cr3t-community-east: request timeout", "read olt s3cr3t-community-east: request timeout"},
		{"meta: what the pattern would match stays", meta, "aXb*c(d)[e]+$^|\\1 and a.bbb", "aXb*c(d)[e]+$^|\\1 and a.bbb"},
		{"meta: quoted with its own quote", `x"y-1234567`, `community="x"y-1234567" next`, `community="<redacted>" next`},

		{"any: long hex dumps go whatever they hold", "public", "data 0123456789abcdef0123", "data <hex dump>"},
		{"any: execution ids stay", "public", "exec 550e8400-e29b-41d4-a716-446655440000", "exec 550e8400-e29b-41d4-a716-446655440000"},
		{"empty community", "", "Community:, x", "Community:, x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scrubCommunity(tc.in, tc.community)
			if got != tc.want {
				t.Fatalf("scrubCommunity(%q, %q)\n got %q\nwant %q", tc.in, tc.community, got, tc.want)
			}
		})
	}
}

// What gosnmp itself says about a packet must not carry the community,
// whatever it is: its packet dump and the hex of its raw bytes.
func TestScrubCommunityInGosnmpTexts(t *testing.T) {
	for _, community := range []string{"c", "public", "timeout", `a.b*c(d)[e]+$^|\1`, "s3cr3t-community"} {
		t.Run(community, func(t *testing.T) {
			g := &gosnmp.GoSNMP{Community: community, Version: gosnmp.Version2c, MaxOids: 10}
			raw, err := g.SnmpEncodePacket(gosnmp.GetBulkRequest, []gosnmp.SnmpPDU{{Name: ".1.3.6.1.2.1.1", Type: gosnmp.Null}}, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			pkt := &gosnmp.SnmpPacket{Version: gosnmp.Version2c, Community: community, PDUType: gosnmp.GetBulkRequest}
			for _, text := range []string{
				pkt.SafeString(),
				fmt.Sprintf("error parsing community string: not enough data: %x", raw),
				fmt.Sprintf("bad packet %v", raw),
			} {
				got := scrubCommunity(text, community)
				// Only the places that held the community changed: a
				// short or common community still shows up in words, but
				// never where the community was.
				if strings.Contains(got, "Community:"+community) || strings.Contains(got, hex.EncodeToString([]byte(community))+"a5") ||
					strings.Contains(got, hex.EncodeToString(raw)) || strings.Contains(got, fmt.Sprint(raw)) {
					t.Fatalf("community left in %q", got)
				}
				if len(community) >= 8 && strings.Contains(got, community) {
					t.Fatalf("community left in %q", got)
				}
			}
		})
	}
}
