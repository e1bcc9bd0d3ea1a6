package telemetry

import (
	"testing"

	"github.com/facho-olt/facho/pkg/buildinfo"
)

func TestRegisterBuildInfo(t *testing.T) {
	reg := NewRegistry()
	info := buildinfo.Info{Version: "1.2.3", Commit: "abc", Date: "2026-11-27T08:00:00Z", GoVersion: "go1.26"}
	if err := RegisterBuildInfo(reg, "poller", info); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if f.GetName() != "facho_build_info" {
			continue
		}
		found = true
		if len(f.GetMetric()) != 1 {
			t.Fatalf("facho_build_info has %d series, want 1", len(f.GetMetric()))
		}
		m := f.GetMetric()[0]
		if m.GetGauge().GetValue() != 1 {
			t.Errorf("facho_build_info = %v, want 1", m.GetGauge().GetValue())
		}
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		want := map[string]string{"service": "poller", "version": "1.2.3", "commit": "abc", "build_date": "2026-11-27T08:00:00Z", "go_version": "go1.26"}
		if len(got) != len(want) {
			t.Errorf("labels %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("label %s = %q, want %q", k, got[k], v)
			}
		}
	}
	if !found {
		t.Fatal("no facho_build_info")
	}
	if err := RegisterBuildInfo(reg, "poller", info); err == nil {
		t.Error("a second registration was accepted")
	}
}
