// Package buildinfo tells which build of Facho is running: the version,
// the git commit and the build date, stamped at link time by the release
// script (deploy/release) with
//
//	-ldflags "-X github.com/facho-olt/facho/pkg/buildinfo.version=V
//	          -X github.com/facho-olt/facho/pkg/buildinfo.commit=C
//	          -X github.com/facho-olt/facho/pkg/buildinfo.date=D"
//
// and otherwise read from what the Go toolchain recorded in the binary
// (runtime/debug.ReadBuildInfo: the module version and, when built with
// VCS stamping, vcs.revision and vcs.time).
//
// Data flow: linker (-X) or toolchain build info → Get → `facho version`,
// the "starting" log line of every service and the facho_build_info gauge
// (pkg/telemetry.RegisterBuildInfo).
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set by the linker (-X); the linker can only set package-level strings,
// so these are the package's only variables and nothing assigns them.
var (
	version string
	commit  string
	date    string
)

// Unknown is the value of a field that neither the linker nor the
// toolchain recorded.
const Unknown = "unknown"

// Info is one binary's build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"build_date"`
	GoVersion string `json:"go_version"`
}

// Get returns the running binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, date, bi)
}

// resolve prefers the linker's values, then the toolchain's, then Unknown.
func resolve(version, commit, date string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.Date == "" {
					info.Date = s.Value
				}
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.Commit == "" {
		info.Commit = Unknown
	}
	if info.Date == "" {
		info.Date = Unknown
	}
	return info
}

// String is the one-line form `facho version` prints.
func (i Info) String() string {
	return "facho " + i.Version + " (commit " + i.Commit + ", built " + i.Date + ", " + i.GoVersion + ")"
}
