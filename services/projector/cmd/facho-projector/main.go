// Command facho-projector builds the Postgres read models (configuration,
// executions, onu_data) from the streams and publishes ONU-change events.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/dbmigrate"
	"github.com/facho-olt/facho/pkg/pgboot"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/services/projector"
	"github.com/facho-olt/facho/streams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "facho-projector: %v\n", err)
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
	dbURL := fs.String("database-url", getenv("DATABASE_URL"), "PostgreSQL URL (DATABASE_URL)")
	pgDataDir := fs.String("pg-data-dir", getenv("FACHO_PG_DATA_DIR"), "start a private PostgreSQL cluster here when DATABASE_URL is empty or does not answer (FACHO_PG_DATA_DIR)")
	httpAddr := fs.String("http-addr", envOr(getenv, "FACHO_HTTP_ADDR", "127.0.0.1:9103"), "address of /metrics and /healthz (FACHO_HTTP_ADDR)")
	logLevel := fs.String("log-level", envOr(getenv, "FACHO_LOG_LEVEL", "info"), "log level (FACHO_LOG_LEVEL)")
	checkConfig := fs.Bool("check-config", false, "validate the configuration and exit")
	var cfg projector.Config
	fs.DurationVar(&cfg.NackDelay, "nack-delay", 0, "redelivery delay of a message that failed (default 5s)")
	fs.DurationVar(&cfg.FetchWait, "fetch-wait", 0, "longest wait of one pull (default 1s)")
	fs.DurationVar(&cfg.OutboxFlushEvery, "outbox-flush-every", 0, "retry interval of unpublished ONU events (default 5s)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	level, err := zerolog.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	cfg = cfg.WithDefaults()
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch {
	case *dbURL == "" && *pgDataDir == "":
		errs = append(errs, errors.New("DATABASE_URL or FACHO_PG_DATA_DIR is required"))
	case *dbURL != "":
		if _, err := pgxpool.ParseConfig(*dbURL); err != nil {
			errs = append(errs, errors.New("DATABASE_URL does not parse")) // may hold a password: not echoed
		}
	}
	if err := errors.Join(errs...); err != nil {
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

	log := telemetry.NewLogger(stdout, "projector", level)
	url, stopPG, err := pgboot.Ensure(ctx, pgboot.Config{DatabaseURL: *dbURL, DataDir: *pgDataDir, Log: log})
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer func() {
		if err := stopPG(); err != nil {
			log.Error().Err(err).Msg("stop private PostgreSQL")
		}
	}()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer pool.Close()
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = dbmigrate.Apply(mctx, pool, log)
	cancel()
	if err != nil {
		return fmt.Errorf("migrate database: %w", err)
	}
	nc, err := nats.Connect(*natsURL, nats.Name("facho-projector"), nats.MaxReconnects(-1))
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
	health.Add("postgres", pool.Ping)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return projector.Run(gctx, cfg, projector.Deps{JS: js, DB: pool, Log: log, Registry: reg})
	})
	g.Go(func() error {
		return telemetry.Serve(gctx, *httpAddr, telemetry.Mux(reg, health), func(a net.Addr) {
			log.Info().Str(telemetry.KeyAddr, a.String()).Msg("telemetry listening")
		})
	})
	return g.Wait()
}
