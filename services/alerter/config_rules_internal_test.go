package alerter

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/streams"
)

// The alerter's configuration consumer refuses (dead-letters, as
// malformed) an OLT or brand event that breaks the API's field rules, and
// takes a valid one.
func TestConfigEventsBreakingTheRulesAreRefused(t *testing.T) {
	a := &alerter{}
	for _, tc := range []struct {
		name    string
		subject string
		ev      streams.Event
		want    string // "" : taken
	}{
		{"valid OLT", streams.SubjectOLT("olt-1"), streams.OLTUpserted{ID: "olt-1", Name: "Norte", IP: "192.0.2.1", Port: 161, BrandID: "huawei", Enabled: true}, ""},
		{"OLT name of 500,000 characters", streams.SubjectOLT("olt-1"), streams.OLTUpserted{ID: "olt-1", Name: strings.Repeat("n", 500_000), IP: "192.0.2.1", Port: 161, BrandID: "huawei"}, "longer than 200"},
		{"OLT port -1", streams.SubjectOLT("olt-1"), streams.OLTUpserted{ID: "olt-1", Name: "Norte", IP: "192.0.2.1", Port: -1, BrandID: "huawei"}, "port must be 1..65535"},
		{"valid brand", streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"}, ""},
		{"brand name with a control character", streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Hua\x07wei", IndexScheme: "pon.onu"}, "control characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := streams.Encode("test", time.Now(), tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			apply, err := a.onConfig(jsrouter.Msg{Subject: tc.subject, Data: b})
			if tc.want == "" {
				if err != nil || apply == nil {
					t.Fatalf("refused a valid event: %v", err)
				}
				return
			}
			if !errors.Is(err, streams.ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}
