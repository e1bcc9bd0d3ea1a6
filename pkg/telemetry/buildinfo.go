package telemetry

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/buildinfo"
)

// RegisterBuildInfo adds facho_build_info{service,version,commit,build_date,
// go_version} = 1 to reg, so a dashboard tells which build every instance
// runs (and sees a mixed-version fleet during an upgrade).
func RegisterBuildInfo(reg prometheus.Registerer, service string, info buildinfo.Info) error {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "facho_build_info",
		Help: "Build of the running binary: always 1, the build is in the labels.",
		ConstLabels: prometheus.Labels{
			"service":    service,
			"version":    info.Version,
			"commit":     info.Commit,
			"build_date": info.Date,
			"go_version": info.GoVersion,
		},
	})
	g.Set(1)
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("register facho_build_info: %w", err)
	}
	return nil
}
