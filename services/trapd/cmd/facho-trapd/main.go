// Command facho-trapd receives the OLTs' SNMP traps and informs and publishes
// them (raw, and decoded where the vendor profile maps them) on
// facho.trap.<olt_id>.
package main

import (
	"context"
	"flag"
	"io"

	"github.com/facho-olt/facho/pkg/servicemain"
	"github.com/facho-olt/facho/services/trapd"
)

func main() { servicemain.Main("facho-trapd", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg trapd.Config
	var rate int
	return servicemain.Binary{
		Name:     "trapd",
		HTTPAddr: "127.0.0.1:9109",
		Database: servicemain.NoDatabase,
		// The key opens the sealed communities the traps are checked against.
		SecretKey: true,
		Flags: func(fs *flag.FlagSet, env *servicemain.Env, _ *servicemain.Common) {
			fs.StringVar(&cfg.Addr, "trap-addr", env.String("FACHO_TRAP_ADDR", ""), "UDP address the traps are received on (FACHO_TRAP_ADDR; default :162)")
			fs.StringVar(&cfg.Instance, "instance", env.String("FACHO_TRAPD_INSTANCE", ""), "this replica's name in the trap events (FACHO_TRAPD_INSTANCE; default trapd-<host>-<pid>)")
			fs.StringVar(&cfg.ProfilesDir, "profiles-dir", env.String("FACHO_PROFILES_DIR", ""), "folder of vendor profiles added to the built-in ones (FACHO_PROFILES_DIR)")
			fs.IntVar(&cfg.Readers, "readers", env.Int("FACHO_TRAPD_READERS", 0), "goroutines reading the trap socket (FACHO_TRAPD_READERS; default 2)")
			fs.IntVar(&rate, "rate", env.Int("FACHO_TRAPD_RATE", 0), "traps per second accepted from one source address (FACHO_TRAPD_RATE; default 500)")
			fs.IntVar(&cfg.Burst, "burst", env.Int("FACHO_TRAPD_BURST", 0), "burst of traps accepted from one source address (FACHO_TRAPD_BURST; default 1000)")
		},
		Check: func() error {
			cfg.Rate = float64(rate)
			return servicemain.CheckConfig(&cfg)()
		},
		ClientName: func() string { return "facho-trapd-" + cfg.Instance },
		Service: func(ctx context.Context, d servicemain.Deps) error {
			return trapd.Run(ctx, cfg, trapd.Deps{JS: d.JS, Box: d.Box, Log: d.Log, Registry: d.Registry})
		},
	}.Run(ctx, args, getenv, stdout, stderr)
}
