package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/services/alerter"
	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/services/projector"
)

// readModels collects every rebuildable read model: each service
// registers its own (projector.ReadModels, auditor.ReadModels). The
// shadow of onu_data prunes onu_history as the live projector does, by
// FACHO_HISTORY_RETENTION (default a year; 0 keeps it all): a rebuild must
// not bring back what retention deleted.
func readModels(log zerolog.Logger, getenv func(string) string) (*projection.Registry, error) {
	var reg projection.Registry
	retention := projector.DefaultHistoryRetention
	if v := getenv("FACHO_HISTORY_RETENTION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("FACHO_HISTORY_RETENTION %q: %w", v, err)
		}
		retention = d
	}
	pcfg := projector.Config{HistoryRetention: retention}
	if err := pcfg.WithDefaults().Validate(); err != nil {
		return nil, err
	}
	pm, err := projector.ReadModels(pcfg, log)
	if err != nil {
		return nil, err
	}
	am, err := auditor.ReadModels(auditor.Config{}, log, time.Now)
	if err != nil {
		return nil, err
	}
	if err := reg.Register(append(append(pm, am...), alerter.ReadModels()...)...); err != nil {
		return nil, err
	}
	return &reg, nil
}

func runRebuild(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	log, err := cliLogger(getenv, stderr)
	if err != nil {
		return err
	}
	reg, err := readModels(log, getenv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "replay each source stream from here: sequence, RFC 3339 time or duration ago (default: its first message)")
	dryRun := fs.Bool("dry-run", false, "compare and report, leave the live tables alone")
	partial := fs.Bool("partial", false, "swap even when a source stream lacks part of the history (expired by retention, or --from): rows only older events made are deleted")
	batch := fs.Int("batch", 0, "messages per shadow transaction (default: the read model's own, else 1000)")
	workers := fs.Int("workers", 4, "shadow transactions at once, for sources partitioned by OLT")
	dbURL := fs.String("db", getenv("DATABASE_URL"), "Postgres URL (DATABASE_URL)")
	nf := addNATSFlags(fs, getenv)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: facho rebuild READ_MODEL [flags]\n\nread models:\n")
		for _, n := range reg.Names() {
			m, _ := reg.Lookup(n)
			fmt.Fprintf(fs.Output(), "  %-18s %s\n", n, m.Description)
		}
		fmt.Fprintf(fs.Output(), "\nflags:\n")
		fs.PrintDefaults()
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if ok, err := parseFlags(fs, args); !ok {
			return err
		}
		fs.Usage()
		return fmt.Errorf("rebuild: which read model? (%s)", strings.Join(reg.Names(), ", "))
	}
	name := args[0]
	if name == "onu_history_hourly" {
		return runRebuildHourly(ctx, args[1:], getenv, stdout, stderr)
	}
	if ok, err := parseFlags(fs, args[1:]); !ok {
		return err
	}
	model, ok := reg.Lookup(name)
	if !ok {
		if name == "onu_history" {
			return fmt.Errorf("rebuild: onu_history is rebuilt with onu_data, from the same varbind stream: facho rebuild onu_data")
		}
		return fmt.Errorf("rebuild: unknown read model %q (rebuildable: %s)", name, strings.Join(reg.Names(), ", "))
	}
	pos, err := parsePosition(*from, time.Now())
	if err != nil {
		return fmt.Errorf("rebuild --from: %w", err)
	}
	*dbURL = nf.databaseURL(*dbURL)
	if *dbURL == "" {
		return fmt.Errorf("rebuild: DATABASE_URL (or --db) is required (or run it in the folder of a running facho dev)")
	}
	pcfg, err := pgxpool.ParseConfig(*dbURL)
	if err != nil {
		return fmt.Errorf("rebuild: database URL: %w", err)
	}
	// The workers, the swap and the rebuild's lock each hold a connection.
	pcfg.MaxConns = int32(max(*workers, 1) + 2)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("rebuild: database: %w", err)
	}
	defer pool.Close()
	nc, js, err := nf.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	defer rebuildGC(getenv)()
	bar := newProgress(stderr, "rebuild "+name)
	rep, err := replay.Rebuild(ctx, js, pool, model, replay.RebuildOptions{From: pos, DryRun: *dryRun, Partial: *partial, Batch: *batch, Workers: *workers, Progress: bar.update, Log: log})
	bar.finish()
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, rep.String())
	return err
}

// rebuildGC has the garbage collector run less often during a rebuild,
// unless GOGC or GOMEMLIMIT say otherwise: a rebuild allocates every
// event it decodes and folds, and with Go's default (GOGC=100) the
// collector took a fifth of the Go time of `facho rebuild executions`.
// GOGC=400 lets the heap grow to five times what is live; the 448 MiB
// soft limit (rebuildMemoryLimit) has the collector run earlier when that
// would pass it, so the process stays within about 512 MB: what a rebuild
// holds live is bounded (replay.MaxQueuedBytes of messages in flight; a
// fold of up to FoldMaxRows rows may still need more, and gets it: the
// limit is soft).
// It returns the function that puts the previous settings back.
// rebuildMemoryLimit is the Go memory limit of a rebuild (GOMEMLIMIT
// unset).
const rebuildMemoryLimit = 448 << 20

func rebuildGC(getenv func(string) string) (restore func()) {
	percent, limit := -2, int64(-1) // not changed
	if getenv("GOGC") == "" {
		percent = debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		limit = debug.SetMemoryLimit(rebuildMemoryLimit)
	}
	return func() {
		if percent != -2 {
			debug.SetGCPercent(percent)
		}
		if limit >= 0 {
			debug.SetMemoryLimit(limit)
		}
	}
}

// cliLogger logs to stderr at FACHO_LOG_LEVEL (default warn: the tools'
// output is their result) in FACHO_LOG_FORMAT (console on a terminal).
func cliLogger(getenv func(string) string, stderr io.Writer) (zerolog.Logger, error) {
	return telemetry.LoggerFromEnv(getenv, stderr, "", zerolog.WarnLevel)
}

// runRebuildHourly is `facho rebuild onu_history_hourly`: the hourly
// rollups (per ONU, and per PON) recomputed from onu_history, one
// transaction per UTC day
// (projector.RebuildHourly).
func runRebuildHourly(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rebuild onu_history_hourly", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "first day: RFC 3339 time or duration ago (default: the oldest change in onu_history)")
	to := fs.String("to", "", "last day: RFC 3339 time or duration ago (default: now)")
	dbURL := fs.String("db", getenv("DATABASE_URL"), "Postgres URL (DATABASE_URL)")
	nf := addNATSFlags(fs, getenv)
	if ok, err := parseFlags(fs, args); !ok {
		return err
	}
	now := time.Now()
	first, err := parseTimeFlag(*from, now)
	if err != nil {
		return fmt.Errorf("rebuild onu_history_hourly --from: %w", err)
	}
	last, err := parseTimeFlag(*to, now)
	if err != nil {
		return fmt.Errorf("rebuild onu_history_hourly --to: %w", err)
	}
	if last.IsZero() {
		last = now
	}
	*dbURL = nf.databaseURL(*dbURL)
	if *dbURL == "" {
		return fmt.Errorf("rebuild onu_history_hourly: DATABASE_URL (or --db) is required (or run it in the folder of a running facho dev)")
	}
	pool, err := pgxpool.New(ctx, *dbURL)
	if err != nil {
		return fmt.Errorf("rebuild onu_history_hourly: database: %w", err)
	}
	defer pool.Close()
	if first.IsZero() {
		var oldest *time.Time
		if err := pool.QueryRow(ctx, `SELECT min(at) FROM onu_history`).Scan(&oldest); err != nil {
			return fmt.Errorf("rebuild onu_history_hourly: oldest change: %w", err)
		}
		if oldest == nil {
			_, err := fmt.Fprintln(stdout, "onu_history_hourly: onu_history is empty, nothing to roll up")
			return err
		}
		first = *oldest
	}
	if first.After(last) {
		return fmt.Errorf("rebuild onu_history_hourly: --from %s is after --to %s", first.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339))
	}
	start := time.Now()
	days := uint64(last.Sub(first)/(24*time.Hour)) + 1
	bar := newProgress(stderr, "rebuild onu_history_hourly")
	rep, err := projector.RebuildHourly(ctx, pool, first, last, func(_ time.Time, r projector.HourlyRebuildReport) {
		bar.update(uint64(r.Days), days)
	})
	bar.finish()
	if err != nil {
		return fmt.Errorf("rebuild onu_history_hourly: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "onu_history_hourly: %d days (%s .. %s) recomputed from onu_history: %d rows replaced, %d written, and %d PON rows (pon_history_hourly) in %s\n",
		rep.Days, first.UTC().Format(time.DateOnly), last.UTC().Format(time.DateOnly), rep.Deleted, rep.Inserted, rep.PONRows, time.Since(start).Round(time.Millisecond))
	return err
}
