// Command facho-planner runs the planner: it replays the configuration
// stream and emits NodeDue events when a job is due on an OLT.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "facho-planner: %v\n", err)
		os.Exit(1)
	}
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	natsURL := fs.String("nats-url", envOr(getenv, "FACHO_NATS_URL", "nats://127.0.0.1:4222"), "NATS server URL (FACHO_NATS_URL)")
	httpAddr := fs.String("http-addr", envOr(getenv, "FACHO_HTTP_ADDR", "127.0.0.1:9101"), "address of /metrics and /healthz (FACHO_HTTP_ADDR)")
	logLevel := fs.String("log-level", envOr(getenv, "FACHO_LOG_LEVEL", "info"), "log level (FACHO_LOG_LEVEL)")
	checkConfig := fs.Bool("check-config", false, "validate the configuration and exit")
	var cfg planner.Config
	fs.DurationVar(&cfg.Tick, "tick", 0, "how often due nodes are looked for (default 1s)")
	fs.DurationVar(&cfg.FirstRunDelay, "first-run-delay", 0, "delay before a newly enabled node first runs (default 60s)")
	fs.DurationVar(&cfg.DelayedAfter, "delayed-after", 0, "lateness from which a due node counts as delayed (default 2s)")
	fs.IntVar(&cfg.DiscoveryTimeoutSeconds, "discovery-timeout-seconds", 0, "timeout of discovery/walk jobs without one (default 300)")
	fs.IntVar(&cfg.PollTimeoutSeconds, "poll-timeout-seconds", 0, "timeout of get jobs without one (default 60)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	level, err := zerolog.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	streamOpts, err := streams.OptionsFromEnv(getenv)
	if err != nil {
		return fmt.Errorf("stream options: %w", err)
	}
	if *checkConfig {
		fmt.Fprintln(stdout, "configuration ok")
		return nil
	}

	log := telemetry.NewLogger(stdout, "planner", level)
	nc, err := nats.Connect(*natsURL, nats.Name("facho-planner"), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("connect to nats: %w", err)
	}
	defer nc.Drain()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = streams.Provision(pctx, js, streamOpts)
	cancel()
	if err != nil {
		return err
	}

	reg := telemetry.NewRegistry()
	health := telemetry.NewHealth()
	health.Add("nats", func(context.Context) error {
		if !nc.IsConnected() {
			return fmt.Errorf("nats %s", nc.Status())
		}
		return nil
	})
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return planner.Run(gctx, cfg, planner.Deps{JS: js, Log: log, Registry: reg})
	})
	g.Go(func() error {
		return telemetry.Serve(gctx, *httpAddr, telemetry.Mux(reg, health), func(a net.Addr) {
			log.Info().Str(telemetry.KeyAddr, a.String()).Msg("telemetry listening")
		})
	})
	return g.Wait()
}
