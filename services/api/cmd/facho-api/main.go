// Command facho-api serves Facho's HTTP JSON API: configuration that
// becomes events, and queries over the read models.
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
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/dbmigrate"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/services/api"
	"github.com/facho-olt/facho/streams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "facho-api: %v\n", err)
		os.Exit(1)
	}
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

func splitTokens(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	natsURL := fs.String("nats-url", envOr(getenv, "FACHO_NATS_URL", "nats://127.0.0.1:4222"), "NATS server URL (FACHO_NATS_URL)")
	dbURL := fs.String("database-url", getenv("DATABASE_URL"), "PostgreSQL URL (DATABASE_URL)")
	httpAddr := fs.String("http-addr", envOr(getenv, "FACHO_HTTP_ADDR", "127.0.0.1:9105"), "address of /metrics and /healthz, empty for none (FACHO_HTTP_ADDR)")
	logLevel := fs.String("log-level", envOr(getenv, "FACHO_LOG_LEVEL", "info"), "log level (FACHO_LOG_LEVEL)")
	checkConfig := fs.Bool("check-config", false, "validate the configuration and exit")
	var cfg api.Config
	fs.StringVar(&cfg.Addr, "addr", envOr(getenv, "FACHO_API_ADDR", "127.0.0.1:8080"), "API listen address (FACHO_API_ADDR)")
	tokens := fs.String("tokens", getenv("FACHO_API_TOKENS"), "comma-separated bearer tokens (FACHO_API_TOKENS); prefer the environment")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	level, err := zerolog.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	cfg.Tokens = splitTokens(*tokens)
	cfg = cfg.WithDefaults()
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if *dbURL == "" {
		errs = append(errs, errors.New("DATABASE_URL is required"))
	} else if _, err := pgxpool.ParseConfig(*dbURL); err != nil {
		errs = append(errs, errors.New("DATABASE_URL does not parse")) // it may hold a password: not echoed
	}
	var box *secret.Box
	key, err := secret.ParseKey(getenv(secret.EnvKey))
	if err == nil {
		box, err = secret.NewBox(key)
	}
	if err != nil {
		errs = append(errs, err)
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

	log := telemetry.NewLogger(stdout, "api", level)
	pool, err := pgxpool.New(ctx, *dbURL)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer pool.Close()
	// The API reads the read models: make sure their schema exists even when
	// it starts before the projector (tern serialises concurrent runs).
	mctx, mcancel := context.WithTimeout(ctx, time.Minute)
	err = dbmigrate.Apply(mctx, pool, log)
	mcancel()
	if err != nil {
		return fmt.Errorf("migrate database: %w", err)
	}
	nc, err := nats.Connect(*natsURL, nats.Name("facho-api"), nats.MaxReconnects(-1))
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
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return api.Run(gctx, cfg, api.Deps{JS: js, DB: pool, Log: log, Registry: reg, Box: box, Ready: func(a net.Addr) {
			log.Info().Str(telemetry.KeyAddr, a.String()).Msg("api listening")
		}})
	})
	if *httpAddr != "" {
		health := telemetry.NewHealth()
		health.Add("nats", func(context.Context) error {
			if !nc.IsConnected() {
				return fmt.Errorf("nats %s", nc.Status())
			}
			return nil
		})
		health.Add("postgres", pool.Ping)
		g.Go(func() error {
			return telemetry.Serve(gctx, *httpAddr, telemetry.Mux(reg, health), func(a net.Addr) {
				log.Info().Str(telemetry.KeyAddr, a.String()).Msg("telemetry listening")
			})
		})
	}
	return g.Wait()
}
