// Command facho-poller takes NodeDue events, holds per-OLT leases and polls
// OLTs over SNMP v2c. Configuration: flags, with environment fallbacks.
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
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/services/poller"
	"github.com/facho-olt/facho/streams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "facho-poller: %v\n", err)
		os.Exit(1)
	}
}

// settings is everything the command line and environment say.
type settings struct {
	natsURL     string
	secretKey   string
	httpAddr    string
	logLevel    string
	checkConfig bool
	streams     streams.Options
	poller      poller.Config
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (settings, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	var s settings
	var parseErrs []error
	envDur := func(name string, def time.Duration) time.Duration {
		v := getenv(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			parseErrs = append(parseErrs, fmt.Errorf("%s: %w", name, err))
		}
		return d
	}
	envInt := func(name string, def int) int {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			parseErrs = append(parseErrs, fmt.Errorf("%s: %w", name, err))
		}
		return n
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&s.natsURL, "nats", env("FACHO_NATS_URL", "nats://127.0.0.1:4222"), "NATS URL (FACHO_NATS_URL)")
	fs.StringVar(&s.httpAddr, "http", env("FACHO_HTTP_ADDR", "127.0.0.1:9102"), "address of /metrics and /healthz (FACHO_HTTP_ADDR); empty disables")
	fs.StringVar(&s.logLevel, "log-level", env("FACHO_LOG_LEVEL", "info"), "log level (FACHO_LOG_LEVEL)")
	fs.BoolVar(&s.checkConfig, "check-config", false, "validate the configuration and exit")
	fs.StringVar(&s.poller.PollerID, "poller-id", env("FACHO_POLLER_ID", ""), "lease holder id of this instance (FACHO_POLLER_ID); default: random")
	fs.IntVar(&s.poller.Workers, "workers", envInt("FACHO_POLLER_WORKERS", 4), "parallel operations (FACHO_POLLER_WORKERS)")
	fs.DurationVar(&s.poller.SNMPTimeout, "snmp-timeout", envDur("FACHO_SNMP_TIMEOUT", 2*time.Second), "timeout of one SNMP request (FACHO_SNMP_TIMEOUT)")
	fs.IntVar(&s.poller.SNMPRetries, "snmp-retries", envInt("FACHO_SNMP_RETRIES", 1), "retries of one SNMP request, -1 for none (FACHO_SNMP_RETRIES)")
	fs.IntVar(&s.poller.MaxRepetitions, "max-repetitions", envInt("FACHO_SNMP_MAX_REPETITIONS", 10), "GETBULK max-repetitions (FACHO_SNMP_MAX_REPETITIONS)")
	fs.IntVar(&s.poller.BatchSize, "batch-size", envInt("FACHO_POLLER_BATCH_SIZE", 500), "varbinds per batch event (FACHO_POLLER_BATCH_SIZE)")
	fs.DurationVar(&s.poller.LeaseBusyDelay, "lease-busy-delay", envDur("FACHO_LEASE_BUSY_DELAY", time.Second), "redelivery delay of a NodeDue whose OLT is busy (FACHO_LEASE_BUSY_DELAY)")
	fs.DurationVar(&s.poller.ShutdownGrace, "shutdown-grace", envDur("FACHO_SHUTDOWN_GRACE", 10*time.Second), "time in-flight operations get on shutdown (FACHO_SHUTDOWN_GRACE)")
	// Stream options come from the same variables every service reads
	// (streams.OptionsFromEnv), so no service re-provisions them differently;
	// the flags only override them for this instance's provisioning.
	streamOpts, err := streams.OptionsFromEnv(getenv)
	if err != nil {
		parseErrs = append(parseErrs, err)
	}
	s.streams = streamOpts
	fs.DurationVar(&s.streams.LeaseTTL, "lease-ttl", streamOpts.LeaseTTL, "OLT lease TTL, provisioned on the lease bucket (FACHO_LEASE_TTL)")
	fs.DurationVar(&s.streams.PollerAckWait, "ack-wait", streamOpts.PollerAckWait, "AckWait of the poller consumer (FACHO_POLLER_ACK_WAIT)")
	fs.IntVar(&s.streams.Replicas, "replicas", streamOpts.Replicas, "JetStream replicas (FACHO_STREAM_REPLICAS)")
	if err := fs.Parse(args[1:]); err != nil {
		return s, err
	}
	// Read from the environment only: a key on the command line shows in ps.
	s.secretKey = getenv(secret.EnvKey)
	if err := errors.Join(parseErrs...); err != nil {
		return s, err
	}
	return s, nil
}

// validate checks everything that can be checked without connecting.
func (s settings) validate() (*secret.Box, zerolog.Level, error) {
	var errs []error
	lvl, err := zerolog.ParseLevel(s.logLevel)
	if err != nil {
		errs = append(errs, fmt.Errorf("log level: %w", err))
	}
	var box *secret.Box
	if key, err := secret.ParseKey(s.secretKey); err != nil {
		errs = append(errs, err)
	} else if box, err = secret.NewBox(key); err != nil {
		errs = append(errs, err)
	}
	if err := s.poller.WithDefaults().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := s.streams.WithDefaults().Validate(); err != nil {
		errs = append(errs, err)
	}
	if s.natsURL == "" {
		errs = append(errs, errors.New("nats url is empty"))
	}
	return box, lvl, errors.Join(errs...)
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	s, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	box, lvl, err := s.validate()
	if s.checkConfig {
		if err != nil {
			return fmt.Errorf("invalid configuration: %w", err)
		}
		fmt.Fprintln(stdout, "configuration ok")
		return nil
	}
	if err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	log := telemetry.NewLogger(stderr, "poller", lvl)
	s.poller = s.poller.WithDefaults()

	nc, err := nats.Connect(s.natsURL, nats.Name("facho-poller "+s.poller.PollerID), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("connect %s: %w", s.natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = streams.Provision(pctx, js, s.streams)
	cancel()
	if err != nil {
		return err
	}

	reg := telemetry.NewRegistry()
	health := telemetry.NewHealth()
	health.Add("nats", func(context.Context) error {
		if !nc.IsConnected() {
			return errors.New("not connected")
		}
		return nil
	})
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return poller.Run(gctx, s.poller, poller.Deps{JS: js, Log: log, Registry: reg, Box: box})
	})
	if s.httpAddr != "" {
		g.Go(func() error {
			return telemetry.Serve(gctx, s.httpAddr, telemetry.Mux(reg, health), func(a net.Addr) {
				log.Info().Str(telemetry.KeyAddr, a.String()).Msg("metrics listening")
			})
		})
	}
	return g.Wait()
}
