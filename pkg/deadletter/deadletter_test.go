package deadletter_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/facho-olt/facho/pkg/deadletter"
	"github.com/facho-olt/facho/streams"
)

func TestExcerpt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		max       int
		want      string
		truncated bool
	}{
		{"short", "abc", 8, "abc", false},
		{"exact", "abcd", 4, "abcd", false},
		{"cut", "abcdef", 4, "abcd", true},
		{"rune cut in the middle is dropped", "ab€", 4, "ab", true}, // € is 3 bytes
		{"whole rune kept", "a€b", 4, "a€", true},
		{"invalid utf-8 replaced", "a\xffb", 8, "a\uFFFDb", false},
		{"NUL replaced", "a\x00b", 8, "a\uFFFDb", false},
		{"empty", "", 8, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, truncated := deadletter.Excerpt([]byte(tc.in), tc.max)
			if got != tc.want || truncated != tc.truncated {
				t.Fatalf("Excerpt(%q, %d) = %q, %v; want %q, %v", tc.in, tc.max, got, truncated, tc.want, tc.truncated)
			}
		})
	}
}

func TestBound(t *testing.T) {
	long := strings.Repeat("é", 1000) // 2000 bytes
	got := deadletter.Bound(long, 101)
	if len(got) > 101 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("Bound = %d bytes %q", len(got), got)
	}
	if got := deadletter.Bound("short\x00", 100); got != "short\uFFFD" {
		t.Fatalf("Bound = %q", got)
	}
}

func TestRecord(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	env, err := streams.Encode("poller", now, streams.VarbindBatch{ExecutionID: "e1", OLTID: "olt-1", Columns: []streams.OIDSpec{{OID: "1.3"}}})
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", 900*1024)
	for _, tc := range []struct {
		name                 string
		data                 string
		reason               string
		typ, olt, exec       string
		truncated            bool
		reasonLen, maxJSONKB int
	}{
		{"envelope: ids copied", string(env), "bad", streams.TypeVarbindBatch, "olt-1", "e1", false, 3, 8},
		{"garbage", "\x00\x01 not json", "bad", "", "", "", false, 3, 8},
		{"ids not strings", `{"id":"1","type":"t","version":1,"data":{"olt_id":7,"execution_id":["x"]}}`, "bad", "t", "", "", false, 3, 8},
		{"huge payload, huge reason", huge, huge, "", "", "", true, streams.DeadLetterReasonBytes, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dl := deadletter.Record(deadletter.Original{Consumer: "c", Stream: "S", StreamSeq: 9, Subject: "facho.varbinds.olt-1", Deliveries: 2, Data: []byte(tc.data)}, tc.reason, now)
			if dl.OriginalType != tc.typ || dl.OLTID != tc.olt || dl.ExecutionID != tc.exec {
				t.Errorf("type/olt/exec = %q %q %q", dl.OriginalType, dl.OLTID, dl.ExecutionID)
			}
			if dl.PayloadSize != len(tc.data) || len(dl.PayloadSHA256) != 64 || dl.PayloadTruncated != tc.truncated {
				t.Errorf("size %d sha %q truncated %v", dl.PayloadSize, dl.PayloadSHA256, dl.PayloadTruncated)
			}
			if len(dl.Reason) > tc.reasonLen {
				t.Errorf("reason of %d bytes", len(dl.Reason))
			}
			b, err := streams.Encode("test", now, dl)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > tc.maxJSONKB*1024 {
				t.Errorf("dead letter of %d bytes", len(b))
			}
			var back streams.Envelope
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
		})
	}
}
