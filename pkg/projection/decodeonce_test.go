package projection

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// DecodeOn accepts and refuses what streams.DecodeOn does, with the same
// payload when it accepts.
func TestDecodeOnAsStreams(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	due := streams.NodeDue{ExecutionID: "e1", NodeID: "n1", JobID: "j1", OLTID: "olt-1", Kind: "get", Priority: 40, ScheduledAt: at,
		Class: streams.ClassPolling, Target: streams.Target{Host: "192.0.2.1", Port: 161}, OIDs: []streams.OIDSpec{{ID: "x", OID: "1.3.6"}}}
	good, err := streams.Encode("t", at, due)
	if err != nil {
		t.Fatal(err)
	}
	noClass := due
	noClass.Class = ""
	legacy, err := streams.Encode("t", at, noClass)
	if err != nil {
		t.Fatal(err)
	}
	started, err := streams.Encode("t", at, streams.ExecutionStarted{ExecutionID: "e1", JobID: "j1", OLTID: "olt-1"})
	if err != nil {
		t.Fatal(err)
	}
	invalid := due
	invalid.OIDs = nil
	noOIDs, err := streams.Encode("t", at, invalid)
	if err != nil {
		t.Fatal(err)
	}
	g := string(good)
	subj := streams.SubjectNodeDueClass("olt-1", streams.ClassPolling)
	for _, c := range []struct {
		name, subject, data string
	}{
		{"good", subj, g},
		{"legacy subject", streams.SubjectNodeDue("olt-1"), string(legacy)},
		{"class on legacy subject", streams.SubjectNodeDue("olt-1"), g},
		{"other olt", streams.SubjectNodeDueClass("olt-2", streams.ClassPolling), g},
		{"other type", subj, string(started)},
		{"invalid", subj, string(noOIDs)},
		{"not json", subj, "{"},
		{"no data", subj, `{"type":"node.due","version":1}`},
		{"null data", subj, `{"type":"node.due","version":1,"data":null}`},
		{"empty data", subj, `{"type":"node.due","version":1,"data":{}}`},
		{"no type", subj, strings.Replace(g, `"type":"`, `"typo":"`, 1)},
		{"version 0", subj, strings.Replace(g, `"version":1`, `"version":0`, 1)},
		{"version 9", subj, strings.Replace(g, `"version":1`, `"version":9`, 1)},
		{"bad field type", subj, strings.Replace(g, `"priority":40`, `"priority":"40"`, 1)},
		{"bad envelope field", subj, strings.Replace(g, `"version":1`, `"version":"1"`, 1)},
		{"upper-case keys", subj, strings.Replace(strings.Replace(g, `"data":`, `"DATA":`, 1), `"olt_id":`, `"OLT_ID":`, 1)},
	} {
		_, want, werr := streams.DecodeOn[streams.NodeDue](c.subject, []byte(c.data))
		_, got, gerr := DecodeOn[streams.NodeDue](c.subject, []byte(c.data))
		if (werr == nil) != (gerr == nil) || (gerr != nil && !errors.Is(gerr, streams.ErrMalformed)) {
			t.Errorf("%s: streams.DecodeOn %v, DecodeOn %v", c.name, werr, gerr)
			continue
		}
		if werr == nil && (got.ExecutionID != want.ExecutionID || got.OLTID != want.OLTID || !got.ScheduledAt.Equal(want.ScheduledAt) || len(got.OIDs) != len(want.OIDs)) {
			t.Errorf("%s: payload %+v, want %+v", c.name, got, want)
		}
	}
}
