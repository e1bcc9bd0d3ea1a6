// Command facho-auditor writes the coordinator log (database and rotating
// file) from the execution and audit streams.
package main

import (
	"context"
	"flag"
	"io"
	"math"
	"strconv"

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
		// The key opens the sealed webhook secrets.
		SecretKey: true,
		Flags: func(fs *flag.FlagSet, env *servicemain.Env, _ *servicemain.Common) {
			fs.StringVar(&cfg.LogFile, "log-file", env.String("FACHO_COORDINATOR_LOG", ""), "rotating coordinator log file, - for none (FACHO_COORDINATOR_LOG; default logs/coordinator/main.log)")
			fs.IntVar(&cfg.LogMaxSizeMB, "log-max-size-mb", 0, "rotate the file at this size (default 10)")
			fs.IntVar(&cfg.LogMaxBackups, "log-max-backups", 0, "rotated files kept (default 5)")
			fs.DurationVar(&cfg.Retention, "retention", 0, "keep coordinator_logs rows this long (default 168h)")
			fs.DurationVar(&cfg.CleanupInterval, "cleanup-interval", 0, "how often old rows are deleted (default 24h)")
			fs.Float64Var(&cfg.Quota.Threshold, "quota-threshold", envFloat(env, "FACHO_QUOTA_THRESHOLD"), "an hour below this compliance is a quota violation (FACHO_QUOTA_THRESHOLD; default 0.8)")
			fs.Float64Var(&cfg.Quota.Low, "quota-low", envFloat(env, "FACHO_QUOTA_LOW"), "lowest compliance of a LOW violation (FACHO_QUOTA_LOW; default 0.70)")
			fs.Float64Var(&cfg.Quota.Medium, "quota-medium", envFloat(env, "FACHO_QUOTA_MEDIUM"), "lowest compliance of a MEDIUM violation (FACHO_QUOTA_MEDIUM; default 0.55)")
			fs.Float64Var(&cfg.Quota.High, "quota-high", envFloat(env, "FACHO_QUOTA_HIGH"), "lowest compliance of a HIGH violation; below is CRITICAL (FACHO_QUOTA_HIGH; default 0.30)")
			fs.DurationVar(&cfg.Quota.Grace, "quota-grace", env.Duration("FACHO_QUOTA_GRACE", 0), "check an hour this long after its end (FACHO_QUOTA_GRACE; default 5m)")
			fs.DurationVar(&cfg.Quota.Retention, "quota-retention", env.Duration("FACHO_QUOTA_RETENTION", 0), "keep quota trackers, their executions and sent notifications this long (FACHO_QUOTA_RETENTION; default 2160h)")
			fs.IntVar(&cfg.Notify.FailureStreak, "failure-streak", env.Int("FACHO_NOTIFY_FAILURE_STREAK", 0), "notify this many consecutive failed executions of an OLT (FACHO_NOTIFY_FAILURE_STREAK; default 3)")
			fs.IntVar(&cfg.Notify.MaxAttempts, "webhook-max-attempts", env.Int("FACHO_WEBHOOK_MAX_ATTEMPTS", 0), "a webhook delivery fails after this many attempts (FACHO_WEBHOOK_MAX_ATTEMPTS; default 6)")
			fs.DurationVar(&cfg.Notify.Backoff, "webhook-backoff", env.Duration("FACHO_WEBHOOK_BACKOFF", 0), "wait after a failed webhook attempt, doubled each time (FACHO_WEBHOOK_BACKOFF; default 10s)")
			fs.DurationVar(&cfg.Notify.MaxBackoff, "webhook-max-backoff", env.Duration("FACHO_WEBHOOK_MAX_BACKOFF", 0), "longest wait between webhook attempts (FACHO_WEBHOOK_MAX_BACKOFF; default 10m)")
			fs.DurationVar(&cfg.Notify.Timeout, "webhook-timeout", env.Duration("FACHO_WEBHOOK_TIMEOUT", 0), "timeout of one webhook request (FACHO_WEBHOOK_TIMEOUT; default 10s)")
		},
		Check: servicemain.CheckConfig(&cfg),
		Service: func(ctx context.Context, d servicemain.Deps) error {
			return auditor.Run(ctx, cfg, auditor.Deps{JS: d.JS, DB: d.DB, Log: d.Log, Registry: d.Registry, Box: d.Box})
		},
	}.Run(ctx, args, getenv, stdout, stderr)
}

// envFloat reads a fraction from the environment: 0 when unset (the
// default), NaN when unparseable (refused by the config's validation).
func envFloat(env *servicemain.Env, key string) float64 {
	v := env.String(key, "")
	if v == "" {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}
