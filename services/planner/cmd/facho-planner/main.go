// Command facho-planner runs the planner: it replays the configuration
// stream and emits NodeDue events when a job is due on an OLT.
package main

import (
	"context"
	"flag"
	"io"

	"github.com/facho-olt/facho/pkg/servicemain"
	"github.com/facho-olt/facho/services/planner"
)

func main() { servicemain.Main("facho-planner", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg planner.Config
	return servicemain.Binary{
		Name:     "planner",
		HTTPAddr: "127.0.0.1:9101",
		Flags: func(fs *flag.FlagSet, _ *servicemain.Env, _ *servicemain.Common) {
			fs.DurationVar(&cfg.Tick, "tick", 0, "how often due nodes are looked for (default 1s)")
			fs.DurationVar(&cfg.FirstRunDelay, "first-run-delay", 0, "delay before a newly enabled node first runs (default 60s)")
			fs.DurationVar(&cfg.DelayedAfter, "delayed-after", 0, "lateness from which a due node counts as delayed (default 2s)")
			fs.IntVar(&cfg.DiscoveryTimeoutSeconds, "discovery-timeout-seconds", 0, "timeout of discovery/walk jobs without one (default 300)")
			fs.IntVar(&cfg.PollTimeoutSeconds, "poll-timeout-seconds", 0, "timeout of get jobs without one (default 60)")
		},
		Check: servicemain.CheckConfig(&cfg),
		Service: func(ctx context.Context, d servicemain.Deps) error {
			return planner.Run(ctx, cfg, planner.Deps{JS: d.JS, Log: d.Log, Registry: d.Registry})
		},
	}.Run(ctx, args, getenv, stdout, stderr)
}
