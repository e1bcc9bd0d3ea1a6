package streams

import "testing"

func TestSNMPTuning(t *testing.T) {
	tests := []struct {
		name string
		t    SNMPTuning
		ok   bool
	}{
		{"zero: defaults", SNMPTuning{}, true},
		{"all set", SNMPTuning{WalkPDU: WalkPDUGetNext, MaxRepetitions: 25, GetVarbinds: 40, GetConcurrency: 4}, true},
		{"bounds", SNMPTuning{WalkPDU: WalkPDUGetBulk, MaxRepetitions: MaxMaxRepetitions, GetVarbinds: MaxGetVarbinds, GetConcurrency: MaxGetConcurrency}, true},
		{"unknown walk pdu", SNMPTuning{WalkPDU: "getmany"}, false},
		{"negative repetitions", SNMPTuning{MaxRepetitions: -1}, false},
		{"too many repetitions", SNMPTuning{MaxRepetitions: MaxMaxRepetitions + 1}, false},
		{"get pdu over 60", SNMPTuning{GetVarbinds: MaxGetVarbinds + 1}, false},
		{"concurrency over 16", SNMPTuning{GetConcurrency: MaxGetConcurrency + 1}, false},
	}
	for _, tc := range tests {
		if err := tc.t.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v", tc.name, err)
		}
	}
	brand := SNMPTuning{WalkPDU: WalkPDUGetNext, MaxRepetitions: 20, GetVarbinds: 30, GetConcurrency: 2}
	got := brand.Over(SNMPTuning{GetConcurrency: 1, GetVarbinds: 10})
	if want := (SNMPTuning{WalkPDU: WalkPDUGetNext, MaxRepetitions: 20, GetVarbinds: 10, GetConcurrency: 1}); got != want {
		t.Errorf("Over = %+v, want %+v", got, want)
	}
	// A node with a bad tuning is malformed.
	n := NodeDue{ExecutionID: "e", JobID: "j", OLTID: "o", Target: Target{Host: "h", Port: 161}, OIDs: []OIDSpec{{OID: "1.3"}},
		SNMP: SNMPTuning{GetVarbinds: 99}}
	if n.Validate() == nil {
		t.Error("NodeDue with get_varbinds 99 validated")
	}
}

func TestValidIndexSuffix(t *testing.T) {
	for s, ok := range map[string]bool{"": true, "1": true, "1.2": true, "0": true, "4294967295": true,
		"4294967296": false, "01": false, "1.": false, ".1": false, "a": false, "1.2.3.4.5.6.7.8.9": false} {
		if err := ValidIndexSuffix(s); (err == nil) != ok {
			t.Errorf("ValidIndexSuffix(%q) = %v", s, err)
		}
	}
}
