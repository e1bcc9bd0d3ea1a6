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
		Flags: func(fs *flag.FlagSet, env *servicemain.Env, _ *servicemain.Common) {
			fs.DurationVar(&cfg.NackDelay, "nack-delay", 0, "redelivery delay of a message that failed (default 5s)")
			fs.DurationVar(&cfg.FetchWait, "fetch-wait", 0, "longest wait of one pull (default 1s)")
			fs.IntVar(&cfg.Workers, "workers", env.Int("FACHO_PROJECTOR_WORKERS", 4), "transactions applying a group of varbind batches side by side, each for its share of the OLTs (1..64) (FACHO_PROJECTOR_WORKERS)")
			fs.IntVar(&cfg.TrapsKeep, "traps-keep", env.Int("FACHO_TRAPS_KEEP", 0), "traps kept per OLT in the traps read model, the newest (FACHO_TRAPS_KEEP; default 1000)")
			fs.DurationVar(&cfg.HistoryRetention, "history-retention", env.Duration("FACHO_HISTORY_RETENTION", projector.DefaultHistoryRetention), "keep onu_history and its hourly rollups this long (by their time); one projector drops each UTC day once all of it is older, every 10m; 0 keeps them forever (FACHO_HISTORY_RETENTION)")
			fs.IntVar(&cfg.Partitions, "partitions", env.Int("FACHO_PROJECTOR_PARTITIONS", 1), "split the varbind projection's OLTs into this many partitions, led by the projector replicas in fair shares, so replicas add throughput (1..8; the same on every replica; 1: one replica leads, the others stand by) (FACHO_PROJECTOR_PARTITIONS)")
			fs.IntVar(&cfg.InFlightMessages, "in-flight-messages", env.Int("FACHO_PROJECTOR_IN_FLIGHT_MESSAGES", 1024), "most varbind batches fetched and not yet committed, over every worker: bounds the projector's memory (at least -group-messages) (FACHO_PROJECTOR_IN_FLIGHT_MESSAGES)")
			fs.IntVar(&cfg.GroupMessages, "group-messages", env.Int("FACHO_PROJECTOR_GROUP_MESSAGES", 256), "most varbind batches fetched and applied as one group (1..4096) (FACHO_PROJECTOR_GROUP_MESSAGES)")
		},
		Check:   servicemain.CheckConfig(&cfg),
		DBConns: func() int32 { return cfg.WithDefaults().DBConns() },
		Service: func(ctx context.Context, d servicemain.Deps) error {
			return projector.Run(ctx, cfg, projector.Deps{JS: d.JS, DB: d.DB, Log: d.Log, Registry: d.Registry})
		},
	}.Run(ctx, args, getenv, stdout, stderr)
}
