package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{
		GoVersion: "go1.99",
		Main:      debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
		},
	}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{
			name:    "linker values win",
			version: "1.0.0", commit: "deadbeef", date: "2026-11-27T08:00:00Z", bi: vcs,
			want: Info{Version: "1.0.0", Commit: "deadbeef", Date: "2026-11-27T08:00:00Z", GoVersion: "go1.99"},
		},
		{
			name: "toolchain values",
			bi:   vcs,
			want: Info{Version: "v1.2.3", Commit: "abc123", Date: "2026-01-02T03:04:05Z", GoVersion: "go1.99"},
		},
		{
			name: "devel build without vcs",
			bi:   &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "(devel)"}},
			want: Info{Version: "devel", Commit: Unknown, Date: Unknown, GoVersion: "go1.99"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolve(tc.version, tc.commit, tc.date, tc.bi); got != tc.want {
				t.Errorf("resolve = %+v, want %+v", got, tc.want)
			}
		})
	}
	got := resolve("", "", "", nil)
	if got.Version != "devel" || got.Commit != Unknown || !strings.HasPrefix(got.GoVersion, "go") {
		t.Errorf("without build info: %+v", got)
	}
	if s := (Info{Version: "1.0.0", Commit: "c", Date: "d", GoVersion: "go1"}).String(); s != "facho 1.0.0 (commit c, built d, go1)" {
		t.Errorf("String = %q", s)
	}
}
