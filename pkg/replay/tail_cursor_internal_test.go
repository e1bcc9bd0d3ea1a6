package replay

import (
	"reflect"
	"testing"
)

func TestTailCursorText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want TailCursor
		bad  bool
	}{
		{"", TailCursor{}, false},
		{"FACHO_EXEC-2", TailCursor{"FACHO_EXEC": 2}, false},
		{"FACHO_ONU-7,FACHO_EXEC-0", TailCursor{"FACHO_ONU": 7, "FACHO_EXEC": 0}, false},
		{"nonsense", nil, true},
		{"FACHO_ONU-", nil, true},
		{"-3", nil, true},
		{"FACHO_ONU--3", nil, true},
		{"FACHO_ONU-1,", nil, true},
		{string(make([]byte, maxCursorText+1)), nil, true},
	} {
		got, err := ParseTailCursor(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseTailCursor(%.40q) = %v, %v", tc.in, got, err)
		}
	}
	c := TailCursor{"FACHO_ONU": 7, "FACHO_EXEC": 12, "FACHO_NOTIFY": 0}
	if s := c.String(); s != "FACHO_EXEC-12,FACHO_NOTIFY-0,FACHO_ONU-7" {
		t.Errorf("String = %q", s)
	}
	if back, err := ParseTailCursor(c.String()); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("round trip: %v %v", back, err)
	}
}

func TestResumeAt(t *testing.T) {
	for _, tc := range []struct {
		name           string
		first, last    uint64
		from           TailCursor
		max            uint64
		want           uint64
		gapFrom, gapTo uint64
	}{
		{"no cursor: new events only", 1, 50, nil, 100, 50, 0, 0},
		{"resumed within the bound", 1, 50, TailCursor{"S": 40}, 100, 40, 0, 0},
		{"nothing missed", 1, 50, TailCursor{"S": 50}, 100, 50, 0, 0},
		{"a position past the end (stream recreated)", 1, 50, TailCursor{"S": 90}, 100, 50, 0, 0},
		{"older than the bound", 1, 500, TailCursor{"S": 10}, 100, 400, 11, 400},
		{"removed by retention", 200, 250, TailCursor{"S": 10}, 100, 199, 11, 199},
		{"no bound", 1, 500, TailCursor{"S": 10}, 0, 10, 0, 0},
		{"another stream's cursor", 1, 50, TailCursor{"T": 3}, 100, 50, 0, 0},
	} {
		got, gap := resumeAt(tc.first, tc.last, tc.from, "S", tc.max)
		var gf, gt uint64
		if gap != nil {
			gf, gt = gap.From, gap.To
		}
		if got != tc.want || gf != tc.gapFrom || gt != tc.gapTo {
			t.Errorf("%s: after %d gap %d..%d, want %d gap %d..%d", tc.name, got, gf, gt, tc.want, tc.gapFrom, tc.gapTo)
		}
	}
}
