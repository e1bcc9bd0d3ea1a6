// Command facho-planner runs the planner: it replays the configuration
// stream and emits NodeDue events when a job is due on an OLT.
package main

import (
	"context"
	"flag"
	"io"
	"strings"
	"time"

	"github.com/facho-olt/facho/pkg/servicemain"
	"github.com/facho-olt/facho/services/planner"
)

func main() { servicemain.Main("facho-planner", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg planner.Config
	return servicemain.Binary{
		Name:     "planner",
		HTTPAddr: "127.0.0.1:9101",
		Flags: func(fs *flag.FlagSet, env *servicemain.Env, _ *servicemain.Common) {
			fs.DurationVar(&cfg.Tick, "tick", 0, "how often due nodes are looked for (default 1s)")
			fs.DurationVar(&cfg.FirstRunDelay, "first-run-delay", 0, "delay before a newly enabled node first runs (default 60s)")
			fs.DurationVar(&cfg.DelayedAfter, "delayed-after", 0, "lateness from which a due node counts as delayed (default 2s)")
			fs.IntVar(&cfg.DiscoveryTimeoutSeconds, "discovery-timeout-seconds", 0, "timeout of discovery/walk jobs without one (default 300)")
			fs.IntVar(&cfg.PollTimeoutSeconds, "poll-timeout-seconds", 0, "timeout of get jobs without one (default 60)")
			fs.DurationVar(&cfg.FirstRunSpread, "first-run-spread", 0, "bound of the per-node offset spreading first runs over the interval (default 15m; negative: none)")
			fs.DurationVar(&cfg.StuckGrace, "stuck-grace", 0, "a flight without a terminal event is freed after interval + timeout + this (default 5m)")
			fs.IntVar(&cfg.DisableAfterFailures, "disable-after-failures", 0, "consecutive failed executions that disable an OLT (default 3; negative: never)")
			fs.DurationVar(&cfg.ONUFoldWait, "onu-fold-wait", 0, "how long after an OLT's discovery succeeded its gets still wait for its first known ONU, at most the get's interval past its scheduled time (default 5m)")
			fs.DurationVar(&cfg.ONUKnownRecheck, "onu-known-recheck", 0, "how often, at most, whether an OLT with held gets has an ONU known is looked up (default 1s)")
			d := planner.DefaultClassRetries()
			for _, c := range []struct {
				name string
				n    *int
				def  int
				tip  string
			}{
				{"discovery", &cfg.ClassRetries.Discovery, d.Discovery, "retries of a failed execution of a discovery job that sets no max_retries"},
				{"polling", &cfg.ClassRetries.Polling, d.Polling, "retries of a failed execution of a get, walk or bulkwalk job that sets no max_retries"},
				{"retry", &cfg.ClassRetries.Retry, d.Retry, "ceiling of the retries of any execution, its job's max_retries included"},
			} {
				up := strings.ToUpper(c.name)
				fs.IntVar(c.n, "class-"+c.name+"-max-retries", env.Int("FACHO_CLASS_"+up+"_MAX_RETRIES", c.def),
					"queue class "+c.name+": "+c.tip+", 1..10, -1 for none (0: the default); manual runs are never retried (FACHO_CLASS_"+up+"_MAX_RETRIES)")
			}
			fs.Func("retry-backoff", "retry class delays, comma-separated (default 300s,600s,1200s)", func(v string) error {
				for _, f := range strings.Split(v, ",") {
					d, err := time.ParseDuration(strings.TrimSpace(f))
					if err != nil {
						return err
					}
					cfg.RetryBackoff = append(cfg.RetryBackoff, d)
				}
				return nil
			})
			fs.StringVar(&cfg.Instance, "instance", "", "name of this replica as the leader lease holder (default planner-<random>)")
		},
		Check: servicemain.CheckConfig(&cfg),
		Service: func(ctx context.Context, d servicemain.Deps) error {
			return planner.Run(ctx, cfg, planner.Deps{JS: d.JS, Log: d.Log, Registry: d.Registry})
		},
	}.Run(ctx, args, getenv, stdout, stderr)
}
