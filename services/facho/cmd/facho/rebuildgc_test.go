package main

import (
	"runtime/debug"
	"testing"
)

// rebuildGC sets the collector for a rebuild unless GOGC or GOMEMLIMIT
// is set, and its restore puts the previous settings back.
func TestRebuildGC(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		env                  map[string]string
		wantPercent          int
		wantLimit            int64
		percentSet, limitSet bool
	}{
		{name: "defaults", env: map[string]string{}, wantPercent: 400, wantLimit: rebuildMemoryLimit, percentSet: true, limitSet: true},
		{name: "GOGC set", env: map[string]string{"GOGC": "100"}, wantLimit: rebuildMemoryLimit, limitSet: true},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "4GiB"}, wantPercent: 400, percentSet: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := debug.SetGCPercent(123)
			beforeLimit := debug.SetMemoryLimit(3 << 30)
			defer func() { debug.SetGCPercent(before); debug.SetMemoryLimit(beforeLimit) }()
			restore := rebuildGC(func(k string) string { return tc.env[k] })
			percent, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
			debug.SetGCPercent(percent)
			if tc.percentSet && percent != tc.wantPercent || !tc.percentSet && percent != 123 {
				t.Errorf("GC percent %d during the rebuild", percent)
			}
			if tc.limitSet && limit != tc.wantLimit || !tc.limitSet && limit != 3<<30 {
				t.Errorf("memory limit %d during the rebuild", limit)
			}
			restore()
			if p, l := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1); p != 123 || l != 3<<30 {
				t.Errorf("after restore: GC percent %d, memory limit %d; want 123 and %d", p, l, int64(3<<30))
			}
			debug.SetGCPercent(123)
		})
	}
}
