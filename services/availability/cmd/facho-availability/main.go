// Command facho-availability probes the OLTs (a light sysUpTime GET) and
// publishes their availability (available, unreachable, unavailable); it
// re-enables an auto-disabled OLT that answers again.
package main

import (
	"context"
	"flag"
	"io"

	"github.com/facho-olt/facho/pkg/servicemain"
	"github.com/facho-olt/facho/services/availability"
)

func main() { servicemain.Main("facho-availability", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg availability.Config
	return servicemain.Binary{
		Name:     "availability",
		HTTPAddr: "127.0.0.1:9107",
		Database: servicemain.NoDatabase,
		// The key opens the sealed communities of the probes.
		SecretKey: true,
		Flags: func(fs *flag.FlagSet, env *servicemain.Env, _ *servicemain.Common) {
			fs.StringVar(&cfg.Instance, "instance", env.String("FACHO_AVAILABILITY_INSTANCE", ""), "this replica's name in the leader lease (FACHO_AVAILABILITY_INSTANCE; default availability-<host>-<pid>)")
			fs.DurationVar(&cfg.Recheck, "recheck", env.Duration("FACHO_AVAILABILITY_RECHECK", 0), "probe period of an unreachable or unavailable OLT (FACHO_AVAILABILITY_RECHECK; default 15s)")
			fs.DurationVar(&cfg.ProbeInterval, "probe-interval", env.Duration("FACHO_AVAILABILITY_PROBE_INTERVAL", 0), "probe period of an available OLT (FACHO_AVAILABILITY_PROBE_INTERVAL; default 60s)")
			fs.DurationVar(&cfg.UnavailableAfter, "unavailable-after", env.Duration("FACHO_AVAILABILITY_UNAVAILABLE_AFTER", 0), "an OLT unreachable this long is unavailable: no work is dispatched to it (FACHO_AVAILABILITY_UNAVAILABLE_AFTER; default 45s)")
			fs.DurationVar(&cfg.ProbeTimeout, "probe-timeout", env.Duration("FACHO_AVAILABILITY_PROBE_TIMEOUT", 0), "SNMP timeout of one probe (FACHO_AVAILABILITY_PROBE_TIMEOUT; default 2s)")
			fs.IntVar(&cfg.ProbeRetries, "probe-retries", env.Int("FACHO_AVAILABILITY_PROBE_RETRIES", 0), "SNMP retries of one probe (FACHO_AVAILABILITY_PROBE_RETRIES; default 1)")
			fs.IntVar(&cfg.Workers, "workers", env.Int("FACHO_AVAILABILITY_WORKERS", 0), "probes in flight at most (FACHO_AVAILABILITY_WORKERS; default 16)")
			fs.IntVar(&cfg.RecoverProbes, "recover-probes", env.Int("FACHO_AVAILABILITY_RECOVER_PROBES", 0), "consecutive answered probes that re-enable an auto-disabled OLT, -1 never (FACHO_AVAILABILITY_RECOVER_PROBES; default 3)")
		},
		Check:      servicemain.CheckConfig(&cfg),
		ClientName: func() string { return "facho-availability-" + cfg.Instance },
		Service: func(ctx context.Context, d servicemain.Deps) error {
			return availability.Run(ctx, cfg, availability.Deps{JS: d.JS, Box: d.Box, Log: d.Log, Registry: d.Registry})
		},
	}.Run(ctx, args, getenv, stdout, stderr)
}
