package auditor

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// appendDetails must mean what json.Marshal of the same details means
// (the jsonb column keeps the parsed value).
func TestAppendDetailsEqualsMarshal(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	for _, d := range []map[string]any{
		{},
		{"execution_id": "e1", "attempt": 2, "lease_revision": uint64(1) << 63, "started_at": at, "retryable": true, "nothing": nil},
		{"quote\"d": "a\\b\"c", "ctl": "line\nbreak\t", "utf8": "ñandú ☃", "bad": "\xff\xfe", "html": "<a&b>"},
		{"float": 1.5e300, "int64": int64(-7), "nested": map[string]any{"k": []any{"x", 1.0, false}}, "zero": time.Time{}},
	} {
		got, err := appendDetails(nil, d)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("appendDetails %s, json.Marshal %s", got, want)
		}
	}
	if _, err := appendDetails(nil, map[string]any{"ch": make(chan int)}); err == nil {
		t.Error("a channel encoded")
	}
}
