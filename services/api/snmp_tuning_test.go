package api_test

import (
	"net/http"
	"testing"

	"github.com/facho-olt/facho/streams"
)

// A brand's and an OLT's SNMP tuning (issue 8) is validated, published in
// their events and shown back; a value out of range names the field. So is
// an OID's index suffix.
func TestSNMPTuningOfBrandsAndOLTs(t *testing.T) {
	f := setup(t)
	f.must("POST", "/api/v1/brands", `{"id":"huawei","name":"Huawei","index_scheme":"pon.onu","snmp":{"walk_pdu":"getnext","max_repetitions":20,"get_varbinds":30,"get_concurrency":4}}`, http.StatusCreated)
	if b := decode[streams.BrandUpserted](t, f.last(streams.SubjectBrand("huawei"))); b.SNMP != (streams.SNMPTuning{WalkPDU: "getnext", MaxRepetitions: 20, GetVarbinds: 30, GetConcurrency: 4}) {
		t.Errorf("brand event tuning %+v", b.SNMP)
	}
	out := f.must("POST", "/api/v1/olts", `{"id":"olt-a","name":"A","ip":"10.0.0.1","community":"c","brand_id":"huawei","snmp":{"get_concurrency":1}}`, http.StatusCreated)
	if s, _ := out["snmp"].(map[string]any); s["get_concurrency"] != float64(1) {
		t.Errorf("OLT response %v", out)
	}
	if o := decode[streams.OLTUpserted](t, f.last(streams.SubjectOLT("olt-a"))); o.SNMP != (streams.SNMPTuning{GetConcurrency: 1}) {
		t.Errorf("OLT event tuning %+v", o.SNMP)
	}
	f.must("POST", "/api/v1/oids", `{"id":"zte-rx","brand_id":"huawei","name":"rx","oid":"1.3.6.1.4.1.3902.1082.500.20.2.2.2.1.10","field":"rx_power","decoder":{"kind":"int"},"index_suffix":"1"}`, http.StatusCreated)
	if o := decode[streams.OIDUpserted](t, f.last(streams.SubjectOID("zte-rx"))); o.IndexSuffix != "1" {
		t.Errorf("OID event %+v", o)
	}
	if code, out, raw := f.do("POST", "/api/v1/oids", `{"brand_id":"huawei","name":"rx","oid":"1.3.6.1","field":"rx_power","decoder":{"kind":"int"},"index_suffix":"1.x"}`); code != http.StatusBadRequest || out["field"] != "index_suffix" {
		t.Errorf("bad index suffix: %d %s", code, raw)
	}
	for _, tc := range []struct{ name, path, body string }{
		{"OLT get_varbinds 61", "/api/v1/olts", `{"name":"x","ip":"10.0.0.2","community":"c","brand_id":"huawei","snmp":{"get_varbinds":61}}`},
		{"OLT get_concurrency 17", "/api/v1/olts", `{"name":"x","ip":"10.0.0.2","community":"c","brand_id":"huawei","snmp":{"get_concurrency":17}}`},
		{"brand walk_pdu", "/api/v1/brands", `{"name":"x","index_scheme":"pon.onu","snmp":{"walk_pdu":"getmany"}}`},
		{"brand max_repetitions 0..255", "/api/v1/brands", `{"name":"x","index_scheme":"pon.onu","snmp":{"max_repetitions":256}}`},
	} {
		code, out, raw := f.do("POST", tc.path, tc.body)
		if code != http.StatusBadRequest || out["field"] != "snmp" {
			t.Errorf("%s: %d %s, want 400 on field snmp", tc.name, code, raw)
		}
	}
}
