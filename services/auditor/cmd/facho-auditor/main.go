// Command facho-auditor writes the coordinator log (database and rotating
// file) from the execution and audit streams.
package main

import (
	"context"
	"flag"
	"io"

	"github.com/facho-olt/facho/pkg/servicemain"
	"github.com/facho-olt/facho/services/auditor"
)

func main() { servicemain.Main("facho-auditor", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg auditor.Config
	return servicemain.Binary{
		Name:     "auditor",
		HTTPAddr: "127.0.0.1:9104",
		Database: servicemain.RequireDatabase,
		Flags: func(fs *flag.FlagSet, env *servicemain.Env, _ *servicemain.Common) {
			fs.StringVar(&cfg.LogFile, "log-file", env.String("FACHO_COORDINATOR_LOG", ""), "rotating coordinator log file, - for none (FACHO_COORDINATOR_LOG; default logs/coordinator/main.log)")
			fs.IntVar(&cfg.LogMaxSizeMB, "log-max-size-mb", 0, "rotate the file at this size (default 10)")
			fs.IntVar(&cfg.LogMaxBackups, "log-max-backups", 0, "rotated files kept (default 5)")
			fs.DurationVar(&cfg.Retention, "retention", 0, "keep coordinator_logs rows this long (default 168h)")
			fs.DurationVar(&cfg.CleanupInterval, "cleanup-interval", 0, "how often old rows are deleted (default 24h)")
		},
		Check: servicemain.CheckConfig(&cfg),
		Service: func(ctx context.Context, d servicemain.Deps) error {
			return auditor.Run(ctx, cfg, auditor.Deps{JS: d.JS, DB: d.DB, Log: d.Log, Registry: d.Registry})
		},
	}.Run(ctx, args, getenv, stdout, stderr)
}
