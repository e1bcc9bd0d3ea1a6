package projection

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// fastSeeds are events as Facho publishes them, of the types the
// rebuilds decode most.
func fastSeeds(t testing.TB) map[string][]byte {
	at := time.Date(2026, 11, 23, 10, 0, 0, 123456789, time.UTC)
	nr := int64(2147483647)
	due := streams.NodeDue{ExecutionID: "e1", NodeID: "n1", JobID: "j1", JobName: "get onus", OLTID: "olt-1", BrandID: "huawei", IndexScheme: "pon_onu",
		Kind: "get", Priority: 40, IntervalSeconds: 300, TimeoutSeconds: 60, MaxRetries: 2, RetryDelaySeconds: 5, ScheduledAt: at, DelaySeconds: 0.25,
		DispatchedAt: at.Add(time.Second), Attempt: 1, StopOnFailure: true, Class: streams.ClassPolling,
		Target: streams.Target{Host: "192.0.2.1", Port: 161, CommunityEnc: "sealed"},
		OIDs: []streams.OIDSpec{
			{ID: "serial", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
			{ID: "status", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.46.1.15", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}},
			{ID: "rx", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4", Field: streams.FieldRxPower, IndexSuffix: "1", Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01, Offset: -1e-3, NoReading: &nr}},
		}}
	d := 1500 * time.Millisecond
	out := map[string][]byte{}
	for name, ev := range map[string]streams.Event{
		"due":       due,
		"started":   streams.ExecutionStarted{ExecutionID: "e1", JobID: "j1", OLTID: "olt-1", PollerID: "p1", Attempt: 2, LeaseRevision: 7, StartedAt: at},
		"succeeded": streams.ExecutionSucceeded{ExecutionID: "e1", JobID: "j1", OLTID: "olt-1", PollerID: "p1", Attempt: 2, LeaseRevision: 7, StartedAt: at, FinishedAt: at.Add(d), DurationMS: d.Milliseconds(), Varbinds: 512, Batches: 2, ONUs: 3, FailedONUs: 1, FailedVarbinds: 4, ONUFailures: []streams.ONUFailure{{Instance: "4194304000.1", PonIndex: 4194304000, ONUID: 1, OIDs: []string{"1.3.6.1", "1.3.6.2"}, Error: "timeout"}}},
		"failed":    streams.ExecutionFailed{ExecutionID: "e1", JobID: "j1", OLTID: "olt-1", PollerID: "p1", Attempt: 1, LeaseRevision: 3, StartedAt: at, FinishedAt: at.Add(d), DurationMS: -5, Error: "snmp timeout"},
		"skipped":   streams.ExecutionSkipped{ExecutionID: "e1", JobID: "j1", OLTID: "olt-1", Reason: "stale", Attempt: 1},
	} {
		b, err := streams.Encode("test", at, ev)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// fastAgrees decodes b as an envelope of T with the fast path and with
// encoding/json: where the fast path accepts, encoding/json must accept
// with the same value. The fast path decodes b twice: into a zero value,
// and into d's reused envelope (DecodeOnReused's), over what the messages
// before it left there; both must accept the same and give the same. It
// reports whether the fast path accepted.
func fastAgrees[T any](t testing.TB, d *Decoders, b []byte) bool {
	t.Helper()
	var fast, slow onEnvelope[T]
	ok := d.decodeFast(b, reflect.ValueOf(&fast).Elem(), false, nil)
	r := reused[T](d)
	if d.decodeFast(b, reflect.ValueOf(&r.env).Elem(), true, &r.memo) != ok {
		t.Fatalf("the fast path accepts %q into a zero value: %v, into a reused one: %v", b, ok, !ok)
	}
	if !ok {
		// As DecodeOnReused leaves it.
		r.env = onEnvelope[T]{}
		_ = json.Unmarshal(b, &r.env)
		return false
	}
	if err := json.Unmarshal(b, &slow); err != nil {
		t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, b)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast path and encoding/json differ on %q:\n fast %+v\n json %+v", b, fast, slow)
	}
	if !reflect.DeepEqual(r.env, slow) {
		t.Fatalf("fast path into a reused value and encoding/json differ on %q:\n fast %+v\n json %+v", b, r.env, slow)
	}
	return true
}

// primeAs decodes b into d's reused value of the type name stands for, as
// DecodeOnReused would (its rawMemo then holds b's bytes).
func primeAs(t testing.TB, d *Decoders, name string, b []byte) {
	prime := func(v reflect.Value, memo *rawMemo) {
		if !d.decodeFast(b, v, true, memo) {
			t.Fatalf("%s: the fast path gave up on %s", name, b)
		}
	}
	switch name {
	case "due":
		r := reused[streams.NodeDue](d)
		prime(reflect.ValueOf(&r.env).Elem(), &r.memo)
	case "started":
		r := reused[streams.ExecutionStarted](d)
		prime(reflect.ValueOf(&r.env).Elem(), &r.memo)
	case "succeeded":
		r := reused[streams.ExecutionSucceeded](d)
		prime(reflect.ValueOf(&r.env).Elem(), &r.memo)
	case "failed":
		r := reused[streams.ExecutionFailed](d)
		prime(reflect.ValueOf(&r.env).Elem(), &r.memo)
	case "skipped":
		r := reused[streams.ExecutionSkipped](d)
		prime(reflect.ValueOf(&r.env).Elem(), &r.memo)
	default:
		t.Fatalf("no type for %s", name)
	}
}

func agreesAs(t testing.TB, d *Decoders, name string, b []byte) bool {
	switch name {
	case "due":
		return fastAgrees[streams.NodeDue](t, d, b)
	case "started":
		return fastAgrees[streams.ExecutionStarted](t, d, b)
	case "succeeded":
		return fastAgrees[streams.ExecutionSucceeded](t, d, b)
	case "failed":
		return fastAgrees[streams.ExecutionFailed](t, d, b)
	case "skipped":
		return fastAgrees[streams.ExecutionSkipped](t, d, b)
	}
	t.Fatalf("no type for %s", name)
	return false
}

// The fast path takes the events as published, and on every mutation of
// them it accepts (a byte deleted, replaced or inserted, anywhere) it
// gives what encoding/json gives; on the others encoding/json decides.
func TestFastDecodeMatchesJSON(t *testing.T) {
	d := NewDecoders()
	subst := []byte("\"\\{}[],:01-9.eE+nult fA_\x00\x1f\x7f\xc3\xff")
	for name, seed := range fastSeeds(t) {
		if !agreesAs(t, d, name, seed) {
			t.Fatalf("%s: the fast path gave up on a published event: %s", name, seed)
		}
		accepted, tried := 0, 0
		try := func(b []byte) {
			tried++
			// Over the seed: what rawMemo kept of it must not pass for
			// the mutation's bytes.
			primeAs(t, d, name, seed)
			if agreesAs(t, d, name, b) {
				accepted++
			}
		}
		for i := range seed {
			try(append(append([]byte{}, seed[:i]...), seed[i+1:]...))
			for _, c := range subst {
				r := append([]byte{}, seed...)
				r[i] = c
				try(r)
				try(append(append(append([]byte{}, seed[:i]...), c), seed[i:]...))
			}
		}
		// Whole-token edits: a key in another case, a duplicate key, a
		// null, an escape, an unknown key, a big number.
		s := string(seed)
		for _, e := range [][2]string{{`"execution_id"`, `"Execution_ID"`}, {`"olt_id":`, `"olt_id":"x","olt_id":`}, {`"olt_id":"olt-1"`, `"olt_id":null`},
			{`"olt-1"`, `"olt\u002d1"`}, {`"job_id"`, `"job_idx"`}, {`"attempt":`, `"attempt":1e0,"x":`}, {`"attempt":2`, `"attempt":99999999999999999999`},
			{`"data":{`, `"data":{"execution_id":"a",`}, {`"version":1`, `"version":1.0`}, {`"time":"`, `"time":" `}} {
			if strings.Contains(s, e[0]) {
				try([]byte(strings.Replace(s, e[0], e[1], 1)))
			}
		}
		if accepted < 100 {
			t.Errorf("%s: the fast path accepted only %d of %d mutations: the comparison proves little", name, accepted, tried)
		}
		t.Logf("%s: %d of %d mutations accepted by the fast path, each equal to encoding/json's", name, accepted, tried)
	}
}

// reuseVariants are events of the seeds' types that differ from the seeds
// and from each other in what a decode into a reused value must write
// over: fields absent (omitempty), a false after a true, slices longer
// and shorter, pointers set and not, maps with an entry more, less,
// changed, reordered or twice.
func reuseVariants(t testing.TB) map[string][][]byte {
	seeds := fastSeeds(t)
	at := time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)
	nr := int64(-1)
	enc := func(ev streams.Event) []byte {
		b, err := streams.Encode("test", at, ev)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	oid := func(id string, enum map[string]string) streams.OIDSpec {
		return streams.OIDSpec{ID: id, OID: "1.3.6.1." + id, Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: enum}}
	}
	plain := streams.NodeDue{ExecutionID: "e2", NodeID: "n1", JobID: "j1", OLTID: "olt-1", Kind: "walk", ScheduledAt: at,
		Target: streams.Target{Host: "192.0.2.2", Port: 1161}, OIDs: []streams.OIDSpec{oid("a", map[string]string{"1": "ONLINE"})}}
	chained := plain
	chained.Chain = []streams.ChainedNode{{ExecutionID: "c1", JobID: "j2", Kind: "get", OIDs: []streams.OIDSpec{oid("b", nil), oid("c", nil)}},
		{ExecutionID: "c2", JobID: "j3", OIDs: []streams.OIDSpec{}}}
	chained.StopOnFailure, chained.SNMP = true, streams.SNMPTuning{WalkPDU: streams.WalkPDUGetBulk, MaxRepetitions: 20}
	indexed := plain
	indexed.Index = &streams.IndexSpec{Parts: []streams.IndexPart{{Name: "pon", Type: "int", Fields: []streams.BitField{{Name: "slot"}}}}}
	indexed.OIDs = []streams.OIDSpec{oid("a", map[string]string{"1": "ONLINE", "2": "OFFLINE", "3": "X"}),
		{ID: "rx", OID: "1.3.6.2", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.1, NoReading: &nr},
			Index: &streams.IndexSpec{Parts: []streams.IndexPart{{Name: "onu", Type: "int"}}}}}
	due := string(seeds["due"])
	edit := func(old, new string) []byte {
		if !strings.Contains(due, old) {
			t.Fatalf("the due seed has no %s", old)
		}
		return []byte(strings.Replace(due, old, new, 1))
	}
	enum := `{"1":"ONLINE","2":"OFFLINE"}`
	failed := streams.ExecutionFailed{ExecutionID: "e3", JobID: "j1", OLTID: "olt-1", Attempt: 2, Retryable: true, Error: "x"}
	return map[string][][]byte{
		"due": {seeds["due"], enc(plain), enc(chained), enc(indexed),
			edit(`"stop_on_failure":true`, `"stop_on_failure":false`), edit(enum, `{"1":"ONLINE","1":"ONLINE"}`),
			edit(enum, `{}`), edit(enum, `{"2":"OFFLINE","1":"ONLINE"}`), edit(enum, `{"1":"ONLINE","2":"OFFLINE","1":"ONLINE"}`),
			edit(enum, `{"1":"ONLINE","2":"OFF"}`), edit(enum, `{"1":"ONLINE","3":"OFFLINE"}`), edit(`"oids":[`, `"oids":[],"x":[`),
			edit(`"priority":40`, `"priority":400`), edit(`"target":{"host":"192.0.2.1"`, `"target":{"host":"192.0.2.10"`)},
		"succeeded": {seeds["succeeded"], enc(streams.ExecutionSucceeded{ExecutionID: "e2", JobID: "j1", OLTID: "olt-1", Attempt: 1}),
			enc(streams.ExecutionSucceeded{ExecutionID: "e2", JobID: "j1", OLTID: "olt-1", ONUFailures: []streams.ONUFailure{{Instance: "1", OIDs: []string{}},
				{Instance: "2", OIDs: []string{"1.3", "1.4", "1.5"}}}})},
		"failed": {seeds["failed"], enc(failed)},
	}
}

// A decode into a reused value gives, whatever the messages before it,
// what encoding/json gives (fastAgrees), on every sequence of three of
// reuseVariants: a field absent, then present again with the bytes it had
// (rawMemo must have forgotten them), for one.
func TestFastDecodeReusedMatchesJSON(t *testing.T) {
	for name, variants := range reuseVariants(t) {
		for i, a := range variants {
			for j, b := range variants {
				for k, c := range variants {
					d := NewDecoders()
					agreesAs(t, d, name, a)
					agreesAs(t, d, name, b)
					if !agreesAs(t, d, name, c) && name != "due" {
						t.Errorf("%s %d after %d and %d: the fast path gave up", name, k, j, i)
					}
				}
			}
		}
	}
}

// DecodeOnWith and DecodeOnReused accept and refuse what DecodeOn does,
// with the same payload (TestDecodeOnAsStreams's cases and the seeds);
// DecodeOnReused decodes them one after the other.
func TestDecodeOnWithAsDecodeOn(t *testing.T) {
	d := NewDecoders()
	subj := streams.SubjectNodeDueClass("olt-1", streams.ClassPolling)
	g := string(fastSeeds(t)["due"])
	cases := []string{g, "{", `{"type":"node.due","version":1}`, `{"type":"node.due","version":1,"data":null}`,
		`{"type":"node.due","version":1,"data":{}}`, strings.Replace(g, `"version":1`, `"version":9`, 1),
		strings.Replace(g, `"priority":40`, `"priority":"40"`, 1), strings.Replace(g, `"oids":[`, `"oids":null,"x":[`, 1),
		strings.Replace(g, `"type":"node.due"`, `"type":"execution.started"`, 1)}
	for _, v := range reuseVariants(t)["due"] {
		cases = append(cases, string(v), g)
	}
	for _, data := range cases {
		for _, subject := range []string{subj, streams.SubjectNodeDueClass("olt-2", streams.ClassPolling)} {
			wenv, want, werr := DecodeOn[streams.NodeDue](subject, []byte(data))
			genv, got, gerr := DecodeOnWith[streams.NodeDue](d, subject, []byte(data))
			renv, reused, rerr := DecodeOnReused[streams.NodeDue](d, subject, []byte(data))
			for _, c := range []struct {
				how string
				env streams.Envelope
				got streams.NodeDue
				err error
			}{{"DecodeOnWith", genv, got, gerr}, {"DecodeOnReused", renv, *reused, rerr}} {
				if (werr == nil) != (c.err == nil) || (c.err != nil && (!errors.Is(c.err, streams.ErrMalformed) || c.err.Error() != werr.Error())) {
					t.Errorf("%q on %s: DecodeOn %v, %s %v", data, subject, werr, c.how, c.err)
				}
				wenv.Data = nil // DecodeOn's envelope keeps the raw data
				if !reflect.DeepEqual(c.got, want) || !reflect.DeepEqual(c.env, wenv) {
					t.Errorf("%q on %s: %s gives %+v %+v, want %+v %+v", data, subject, c.how, c.env, c.got, wenv, want)
				}
			}
		}
	}
}

func FuzzFastDecode(f *testing.F) {
	seeds := fastSeeds(f)
	for _, name := range []string{"due", "started", "succeeded", "failed", "skipped"} {
		f.Add(uint8(len(name)), seeds[name])
	}
	names := []string{"due", "started", "succeeded", "failed", "skipped"}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		// The seed before b and after it: b decoded over a published
		// event, and one decoded over what b left.
		name := names[int(which)%len(names)]
		d := NewDecoders()
		agreesAs(t, d, name, seeds[name])
		agreesAs(t, d, name, b)
		agreesAs(t, d, name, seeds[name])
	})
}

func BenchmarkDecodeOnNodeDue(b *testing.B) {
	data := fastSeeds(b)["due"]
	subj := streams.SubjectNodeDueClass("olt-1", streams.ClassPolling)
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := DecodeOn[streams.NodeDue](subj, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		d := NewDecoders()
		for b.Loop() {
			if _, _, err := DecodeOnWith[streams.NodeDue](d, subj, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reused", func(b *testing.B) {
		d := NewDecoders()
		for b.Loop() {
			if _, _, err := DecodeOnReused[streams.NodeDue](d, subj, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
