package telemetry

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/facho-olt/facho/pkg/buildinfo"
)

func TestRegisterBuildInfo(t *testing.T) {
	reg := NewRegistry()
	info := buildinfo.Info{Version: "1.2.3", Commit: "abc", Date: "2026-11-27T08:00:00Z", GoVersion: "go1.26"}
	if err := RegisterBuildInfo(reg, "poller", info); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP facho_build_info Build of the running binary: always 1, the build is in the labels.
# TYPE facho_build_info gauge
facho_build_info{build_date="2026-11-27T08:00:00Z",commit="abc",go_version="go1.26",service="poller",version="1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "facho_build_info"); err != nil {
		t.Error(err)
	}
	if err := RegisterBuildInfo(reg, "poller", info); err == nil {
		t.Error("a second registration was accepted")
	}
}
