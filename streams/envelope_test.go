package streams

import (
	"errors"
	"testing"
	"time"
)

func TestDecodeRoundTrip(t *testing.T) {
	in := NodeDue{ExecutionID: "e", JobID: "j", OLTID: "o", Target: Target{Host: "h", Port: 161}, OIDs: []OIDSpec{{OID: "1.3"}}}
	b, err := Encode("test", time.Now(), in)
	if err != nil {
		t.Fatal(err)
	}
	env, out, err := Decode[NodeDue](b)
	if err != nil {
		t.Fatal(err)
	}
	if env.Type != TypeNodeDue || out.ExecutionID != "e" || out.Target.Port != 161 {
		t.Fatalf("round trip: %+v %+v", env, out)
	}
}

func TestDecodeMalformed(t *testing.T) {
	good, _ := Encode("t", time.Now(), OLTDeleted{ID: "x"})
	invalid, _ := Encode("t", time.Now(), NodeDue{ExecutionID: "e"})
	for name, b := range map[string][]byte{
		"garbage":      []byte("\x00\x01not json"),
		"empty object": []byte(`{}`),
		"wrong type":   good,
		"bad data":     []byte(`{"id":"1","type":"node.due","version":1,"data":"nope"}`),
		"version 2":    []byte(`{"id":"1","type":"node.due","version":2,"data":{}}`),
		"invalid":      invalid,
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := Decode[NodeDue](b); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestValidID(t *testing.T) {
	for id, ok := range map[string]bool{"olt-1": true, "a": true, "": false, "a.b": false, "a b": false, "a*": false, "a>": false, "-x": false} {
		if ValidID(id) != ok {
			t.Errorf("ValidID(%q) = %v", id, !ok)
		}
	}
}
