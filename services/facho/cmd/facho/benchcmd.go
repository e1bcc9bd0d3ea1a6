package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/services/facho/bench"
	"github.com/facho-olt/facho/services/oltsim"
)

// runBench is `facho bench`: the whole pipeline against a simulated fleet,
// with the baselines of the same run (see services/facho/bench).
func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	olts := fs.Int("olts", 1000, "simulated Huawei OLTs")
	shapeText := fs.String("shape", "1x16x64", "simulated OLT shape: SLOTSxPORTSxONUS (default 1,024 ONUs)")
	cycles := fs.Int("cycles", 3, "discovery + GET cycles measured")
	interval := fs.Duration("interval", 5*time.Minute, "interval of the discovery and GET jobs (at least 10s)")
	pollers := fs.Int("pollers", 2, "poller processes")
	workers := fs.Int("workers", 4, "workers per poller (FACHO_POLLER_WORKERS)")
	projWorkers := fs.Int("projector-workers", 0, "FACHO_PROJECTOR_WORKERS of the projector (default: its own, 4)")
	projectors := fs.Int("projectors", 1, "projector replicas")
	projPartitions := fs.Int("projector-partitions", 0, "FACHO_PROJECTOR_PARTITIONS of the projectors (default: the projector's, 1: one replica leads)")
	reps := fs.Int("max-repetitions", 25, "GETBULK max-repetitions of the pollers and of the same-setting baselines")
	baselineOLTs := fs.Int("baseline-olts", 0, "OLTs the baselines walk (default: min(olts, 50))")
	timeout := fs.Duration("timeout", 0, "give up waiting for the cycles after this (default cycles x interval + 20m); partial figures are reported")
	profile := fs.Int("profile-seconds", 30, "CPU profile of every service over the first N seconds of the first cycle (0: none, at most 50)")
	spread := fs.Duration("first-run-spread", -time.Second, "the planner's -first-run-spread: negative (the default) makes the fleet's runs fall due together, the worst case, to measure capacity; 15m spreads them as production does")
	burst := fs.Bool("burst-every-cycle", false, "make every cycle fall due together, not only the first (the bench disables and enables the jobs once a cycle is walked and committed): steady cycles then measure capacity, not the load runs spread as the previous cycle's ends offer")
	rxDrift := fs.Float64("rx-drift", 0, "changes-heavy cycles: the simulator moves every ONU's Rx by up to this many dB twice an interval, so every reading changes (0: quiet cycles after the first)")
	churn := fs.Float64("status-churn", 0, "percent of the ONUs whose status changes every interval: the simulator takes ONUs offline and back, and the alerter's evaluation of the changes is measured (0: none)")
	profileCycle := fs.Int("profile-cycle", 1, "the cycle whose first -profile-seconds are profiled (2: a steady cycle, without the first one's inserts)")
	profileDir := fs.String("profile-dir", "", "keep the CPU profiles in this folder (one per service; nats.pprof: the embedded NATS server)")
	jsonPath := fs.String("json", "", "also write the result as JSON to this file")
	binDir := fs.String("bin", "", "folder of prebuilt facho-planner, facho-poller, facho-projector, facho-auditor, facho-api and oltsim (default: go build them)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: facho bench [flags]\n\nRuns the simulator, embedded JetStream, Postgres and every service binary as\nproduction does, then prints walk and end-to-end figures beside gosnmp,\nsnmpbulkwalk and snmp_exporter on the same tables.\n\nflags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nenvironment:\n  DATABASE_URL  server where the bench creates and drops a database of its own;\n                unset or not answering: a private cluster in a temporary folder\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	shape, err := oltsim.ParseShape(*shapeText)
	if err != nil {
		return err
	}
	tty := false
	if f, ok := stderr.(*os.File); ok {
		tty = isatty.IsTerminal(f.Fd())
	}
	log, err := telemetry.LoggerFromEnv(getenv, stderr, "bench", zerolog.WarnLevel)
	if err != nil {
		return err
	}
	cfg := bench.Config{
		OLTs: *olts, Shape: shape, Cycles: *cycles, Interval: *interval, Pollers: *pollers, Workers: *workers,
		MaxRepetitions: *reps, ProjectorWorkers: *projWorkers, Projectors: *projectors, ProjectorPartitions: *projPartitions, BaselineOLTs: *baselineOLTs, Timeout: *timeout, ProfileSeconds: *profile, ProfileDir: *profileDir, ProfileCycle: *profileCycle,
		FirstRunSpread: *spread, BurstEveryCycle: *burst, RxDriftDBm: *rxDrift, StatusChurnPercent: *churn,
		DatabaseURL: getenv("DATABASE_URL"), BinDir: *binDir, Progress: stderr, TTY: tty,
		Log: log,
	}
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	res.WriteTable(stdout)
	if *jsonPath != "" {
		f, err := os.Create(*jsonPath)
		if err != nil {
			return fmt.Errorf("json: %w", err)
		}
		if err := res.WriteJSON(f); err != nil {
			f.Close()
			return fmt.Errorf("json: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("json: %w", err)
		}
	}
	return nil
}
