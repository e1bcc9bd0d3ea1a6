package planner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// A configuration event that breaks the API's field rules is refused as
// malformed and plans nothing: the node keeps the OLT it had.
func TestBrokenConfigEventsPlanNothing(t *testing.T) {
	k := NodeKey{JobID: "j1", OLTID: "olt-a"}
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		ev   streams.Event
		want string
	}{
		{"a 500,000-character OLT name", streams.OLTUpserted{ID: "olt-a", Name: strings.Repeat("n", 500_000), IP: "10.0.0.9", Port: 161, BrandID: "huawei", CommunityEnc: "v1:x", Enabled: true}, "longer than 200"},
		{"OLT port -1", streams.OLTUpserted{ID: "olt-a", Name: "A", IP: "10.0.0.9", Port: -1, BrandID: "huawei", CommunityEnc: "v1:x", Enabled: true}, "port must be 1..65535"},
		{"OLT at a broadcast address", streams.OLTUpserted{ID: "olt-a", Name: "A", IP: "255.255.255.255", Port: 161, BrandID: "huawei", CommunityEnc: "v1:x", Enabled: true}, "broadcast"},
		{"job every second", streams.JobUpserted{ID: "j1", Name: "disc", BrandID: "huawei", Kind: streams.KindDiscovery, OIDIDs: []string{"o1"}, IntervalSeconds: 1, Priority: 90, Enabled: true}, "interval_seconds must be 10.."},
		{"OID that is not one", streams.OIDUpserted{ID: "o1", BrandID: "huawei", Name: "serial", OID: "1.3.x", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}}, "not a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newState(timeouts{discovery: 300, poll: 60})
			for _, ev := range baseEvents() {
				if _, err := s.apply(env(t, at, ev)); err != nil {
					t.Fatal(err)
				}
			}
			_, err := s.apply(env(t, at, tc.ev))
			if !errors.Is(err, streams.ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a refusal saying %q", err, tc.want)
			}
			spec, ok := s.nodeSpec(k)
			if !ok {
				t.Fatal("the node is no longer plannable")
			}
			if spec.Target.Host != "10.0.0.1" || spec.Target.Port != 161 || spec.IntervalSeconds != 300 || len(spec.OIDs) != 1 || spec.OIDs[0].OID != "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3" {
				t.Fatalf("the refused event changed the node: %+v", spec)
			}
		})
	}
}
