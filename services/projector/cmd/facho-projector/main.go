// Command facho-projector builds the Postgres read models (configuration,
// executions, onu_data) from the streams and publishes ONU-change events.
package main

import (
	"context"
	"flag"
	"io"

	"github.com/facho-olt/facho/pkg/servicemain"
	"github.com/facho-olt/facho/services/projector"
)

func main() { servicemain.Main("facho-projector", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg projector.Config
	return servicemain.Binary{
		Name:     "projector",
		HTTPAddr: "127.0.0.1:9103",
		Database: servicemain.DatabaseOrPrivateCluster,
		Flags: func(fs *flag.FlagSet, _ *servicemain.Env, _ *servicemain.Common) {
			fs.DurationVar(&cfg.NackDelay, "nack-delay", 0, "redelivery delay of a message that failed (default 5s)")
			fs.DurationVar(&cfg.FetchWait, "fetch-wait", 0, "longest wait of one pull (default 1s)")
			fs.IntVar(&cfg.Workers, "workers", 0, "transactions applying varbind batches side by side, OLTs split among them (default 2)")
			fs.IntVar(&cfg.GroupMessages, "group-messages", 0, "most varbind batches fetched and applied as one group (default 256)")
		},
		Check: servicemain.CheckConfig(&cfg),
		Service: func(ctx context.Context, d servicemain.Deps) error {
			return projector.Run(ctx, cfg, projector.Deps{JS: d.JS, DB: d.DB, Log: d.Log, Registry: d.Registry})
		},
	}.Run(ctx, args, getenv, stdout, stderr)
}
