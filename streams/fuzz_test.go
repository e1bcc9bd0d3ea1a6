package streams

import (
	"errors"
	"testing"
	"time"
)

// fuzzDecode asserts the consumer contract of Decode on any bytes: a value
// that passes Validate, or an error wrapping ErrMalformed (dead-lettered).
func fuzzDecode[T interface {
	Event
	Validate() error
}](t *testing.T, b []byte) {
	_, v, err := Decode[T](b)
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
		return
	}
	if err := v.Validate(); err != nil {
		t.Fatalf("decoded %+v does not validate: %v", v, err)
	}
}

func fuzzSeed(f *testing.F, payload Event) {
	b, err := EncodeWithID("id-1", "fuzz", time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC), payload)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

var fuzzColumns = []OIDSpec{
	{ID: "hw-serial", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Field: FieldSerial, Decoder: Decoder{Kind: "hex_serial"}},
	{ID: "hw-rx", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4", Field: FieldRxPower, Decoder: Decoder{Kind: "scaled", Scale: 0.01}},
}

func FuzzDecodeVarbindBatch(f *testing.F) {
	fuzzSeed(f, VarbindBatch{ExecutionID: "e1", JobID: "j", OLTID: "olt-a", BrandID: "huawei", IndexScheme: "pon.onu", Batch: 2,
		Columns: fuzzColumns, CollectedAt: time.Unix(1, 0).UTC(), Varbinds: []Varbind{
			{OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3.4194304000.0", Type: VTOctetString, Value: "48575443000001ff"},
			{OID: "1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4.4194304000.0", Type: VTInteger, Value: "-2150"},
			{OID: "1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4.4194304000.1", Type: VTNoSuchInstance},
		}, Last: true})
	fuzzSeed(f, VarbindBatch{ExecutionID: "e1", OLTID: "olt-a"})
	fuzzSeed(f, NodeDue{ExecutionID: "e"})
	f.Add([]byte(`{"id":"1","type":"varbind.batch","version":1,"data":null}`))
	f.Add([]byte(`{"id":"1","type":"varbind.batch","version":1,"data":{"execution_id":"e","olt_id":"o","columns":[{}],"varbinds":[{"value":"\u0000"}],"batch":1e400}}`))
	f.Add([]byte("\x00\x01not json"))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzDecode[VarbindBatch](t, b) })
}

func FuzzDecodeNodeDue(f *testing.F) {
	fuzzSeed(f, NodeDue{ExecutionID: "e1", NodeID: "n", JobID: "j", JobName: "Discovery", OLTID: "olt-a", BrandID: "huawei",
		IndexScheme: "pon.onu", Kind: KindDiscovery, Target: Target{Host: "192.0.2.1", Port: 161, CommunityEnc: "v1:abcd"},
		OIDs: fuzzColumns, Priority: 90, IntervalSeconds: 300, TimeoutSeconds: 300, MaxRetries: 3, RetryDelaySeconds: 120,
		ScheduledAt: time.Unix(1, 0).UTC(), DelaySeconds: 0.25})
	fuzzSeed(f, NodeDue{ExecutionID: "e"})
	fuzzSeed(f, VarbindBatch{ExecutionID: "e1", OLTID: "olt-a", Columns: fuzzColumns})
	f.Add([]byte(`{"id":"1","type":"node.due","version":1,"data":{"execution_id":"e","job_id":"j","olt_id":"o","target":{"host":"h","port":-1},"oids":[{}]}}`))
	f.Add([]byte(`{"id":"1","type":"node.due","version":2,"data":{}}`))
	f.Add([]byte(`{"type":"node.due","version":1,"data":{"scheduled_at":"not a time"}}`))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzDecode[NodeDue](t, b) })
}
