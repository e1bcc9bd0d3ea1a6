package configrules_test

import (
	"strings"
	"testing"

	"github.com/facho-olt/facho/pkg/configrules"
	"github.com/facho-olt/facho/streams"
)

func goodOLT() streams.OLTUpserted {
	return streams.OLTUpserted{ID: "olt-1", Name: "OLT 1", IP: "10.0.0.1", Port: 161, BrandID: "huawei", CommunityEnc: "v1:x", Enabled: true}
}

func TestOLT(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*streams.OLTUpserted)
		field string // "" : valid
	}{
		{"valid", func(*streams.OLTUpserted) {}, ""},
		{"ipv6", func(o *streams.OLTUpserted) { o.IP = "2001:db8::1" }, ""},
		{"port 65535", func(o *streams.OLTUpserted) { o.Port = 65535 }, ""},
		{"name of 500,000 characters", func(o *streams.OLTUpserted) { o.Name = strings.Repeat("a", 500_000) }, "name"},
		{"empty name", func(o *streams.OLTUpserted) { o.Name = "  " }, "name"},
		{"name with a NUL", func(o *streams.OLTUpserted) { o.Name = "a\x00b" }, "name"},
		{"name with a bidi override", func(o *streams.OLTUpserted) { o.Name = "a\u202eb" }, "name"},
		{"port -1", func(o *streams.OLTUpserted) { o.Port = -1 }, "port"},
		{"port 0", func(o *streams.OLTUpserted) { o.Port = 0 }, "port"},
		{"port 65536", func(o *streams.OLTUpserted) { o.Port = 65536 }, "port"},
		{"host name", func(o *streams.OLTUpserted) { o.IP = "olt.example.net" }, "ip"},
		{"broadcast", func(o *streams.OLTUpserted) { o.IP = "255.255.255.255" }, "ip"},
		{"multicast", func(o *streams.OLTUpserted) { o.IP = "224.0.0.1" }, "ip"},
		{"unspecified", func(o *streams.OLTUpserted) { o.IP = "0.0.0.0" }, "ip"},
		{"bad id", func(o *streams.OLTUpserted) { o.ID = "a.b" }, "id"},
		{"bad brand id", func(o *streams.OLTUpserted) { o.BrandID = "" }, "brand_id"},
		{"huge description", func(o *streams.OLTUpserted) { o.Description = strings.Repeat("x", 1001) }, "description"},
		{"huge sealed community", func(o *streams.OLTUpserted) { o.CommunityEnc = strings.Repeat("x", 5000) }, "community_enc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := goodOLT()
			tc.edit(&o)
			err := configrules.OLT(o)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused a valid OLT: %v", err)
				}
				return
			}
			fe, ok := configrules.AsFieldError(err)
			if !ok {
				t.Fatalf("err = %v, want a FieldError on %s", err, tc.field)
			}
			if fe.Field != tc.field {
				t.Fatalf("field = %q (%s), want %q", fe.Field, fe.Msg, tc.field)
			}
			if len(fe.Msg) > 300 {
				t.Fatalf("the reason is %d bytes: it must not echo the value", len(fe.Msg))
			}
		})
	}
}

func TestJobAndOID(t *testing.T) {
	job := streams.JobUpserted{ID: "j", Name: "poll", BrandID: "huawei", Kind: streams.KindGet, OIDIDs: []string{"rx"}, IntervalSeconds: 300}
	oid := streams.OIDUpserted{ID: "rx", BrandID: "huawei", Name: "Rx", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4", Field: streams.FieldRxPower,
		Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01}}
	brand := streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"}
	tests := []struct {
		name  string
		err   error
		field string
	}{
		{"valid job", configrules.Job(job), ""},
		{"valid oid", configrules.OIDEvent(oid), ""},
		{"valid brand", configrules.Brand(brand), ""},
		{"interval 1 s", configrules.Job(func() streams.JobUpserted { j := job; j.IntervalSeconds = 1; return j }()), "interval_seconds"},
		{"unknown kind", configrules.Job(func() streams.JobUpserted { j := job; j.Kind = "nuke"; return j }()), "kind"},
		{"priority 1000", configrules.Job(func() streams.JobUpserted { j := job; j.Priority = 1000; return j }()), "priority"},
		{"negative timeout", configrules.Job(func() streams.JobUpserted { j := job; j.TimeoutSeconds = -5; return j }()), "timeout_seconds"},
		{"oid not numeric", configrules.OIDEvent(func() streams.OIDUpserted { o := oid; o.OID = "1.3.x"; return o }()), "oid"},
		{"unknown field", configrules.OIDEvent(func() streams.OIDUpserted { o := oid; o.Field = "password"; return o }()), "field"},
		{"health column", configrules.OIDEvent(func() streams.OIDUpserted {
			o := oid
			o.Field = streams.HealthField(streams.HealthChassis, streams.HFCPUPercent)
			return o
		}()), ""},
		{"unknown health column", configrules.OIDEvent(func() streams.OIDUpserted { o := oid; o.Field = "health.chassis.password"; return o }()), "field"},
		{"unknown scheme", configrules.Brand(func() streams.BrandUpserted { b := brand; b.IndexScheme = "nope"; return b }()), "index_scheme"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.field == "" {
				if tc.err != nil {
					t.Fatalf("refused: %v", tc.err)
				}
				return
			}
			fe, ok := configrules.AsFieldError(tc.err)
			if !ok || fe.Field != tc.field {
				t.Fatalf("err = %v, want a FieldError on %s", tc.err, tc.field)
			}
		})
	}
}
