// Command oltsim-bench measures the simulator: varbinds served per second
// and per CPU-second, for one 4,096-ONU OLT and for a 1,000-OLT fleet, walked
// by gosnmp and by net-snmp's snmpbulkwalk, against baselines measured in the
// same run (raw UDP echo, gosnmp GET of one scalar). Binds 127.0.0.1 only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/rs/zerolog"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "oltsim-bench: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	scenario    string
	walkers     int
	maxRep      int
	seconds     float64
	fleetOLTs   int
	fleetSample int
	netsnmp     bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.scenario, "scenario", "all", "one (4,096-ONU OLT), fleet (1,000 x 1,024 ONUs) or all")
	fs.IntVar(&o.walkers, "walkers", 2, "concurrent walkers")
	fs.IntVar(&o.maxRep, "maxrep", 25, "GETBULK max-repetitions")
	fs.Float64Var(&o.seconds, "seconds", 2, "minimum duration of each measurement")
	fs.IntVar(&o.fleetOLTs, "fleet-olts", 1000, "OLTs in the fleet scenario")
	fs.IntVar(&o.fleetSample, "fleet-sample", 100, "OLTs walked in the fleet scenario (spread evenly)")
	fs.BoolVar(&o.netsnmp, "netsnmp", true, "also walk with snmpbulkwalk when installed")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args[1:]); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	log := zerolog.New(stderr).Level(zerolog.WarnLevel)
	b := &bench{o: o, out: stdout, log: log}
	if err := b.baselines(ctx); err != nil {
		return err
	}
	if o.scenario == "one" || o.scenario == "all" {
		if err := b.one(ctx); err != nil {
			return err
		}
	}
	if o.scenario == "fleet" || o.scenario == "all" {
		if err := b.fleet(ctx); err != nil {
			return err
		}
	}
	return nil
}
