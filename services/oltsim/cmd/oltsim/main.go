// Command oltsim runs a fleet of simulated GPON OLTs answering SNMP v2c, with
// an HTTP control endpoint.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/facho-olt/facho/services/oltsim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "oltsim: %v\n", err)
		os.Exit(1)
	}
}

// fleetFile is the YAML fleet file: a list of OLTs; an entry with count N
// expands into N OLTs named <name>-<i>, on consecutive ports, seeds seed+i.
type fleetFile struct {
	OLTs []fleetEntry `yaml:"olts"`
}

type fleetEntry struct {
	oltsim.OLTConfig `yaml:",inline"`
	Count            int `yaml:"count"`
}

type options struct {
	fleet, profile, recording, listen, shape, community, name, httpAddr, logLevel string
	olts, maxResponseBytes                                                        int
	seed                                                                          int64
	faults                                                                        oltsim.Faults
	life                                                                          oltsim.Life
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.fleet, "fleet", "", "YAML fleet file (overrides the per-OLT flags)")
	fs.StringVar(&o.profile, "profile", "huawei-ma5800", "vendor profile: "+strings.Join(oltsim.ProfileNames(), ", "))
	fs.StringVar(&o.recording, "recording", "", "serve this .snmprec file instead of a profile")
	fs.IntVar(&o.olts, "olts", 1, "number of OLTs")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:16100", "address of the first OLT; the others take consecutive ports (port 0: any free port)")
	fs.StringVar(&o.shape, "shape", "1x2x16", "slots x PON ports per slot x ONUs per port")
	fs.StringVar(&o.community, "community", "", "SNMP community (default $OLTSIM_COMMUNITY or public)")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the first OLT; OLT i uses seed+i")
	fs.StringVar(&o.name, "name", "olt", "OLT name prefix (<name>-<i>)")
	fs.IntVar(&o.maxResponseBytes, "max-response-bytes", 0, "largest response message (0: 65000)")
	fs.StringVar(&o.httpAddr, "http", "127.0.0.1:8161", "HTTP control address (empty: off)")
	fs.StringVar(&o.logLevel, "log-level", envDefault(getenv, "FACHO_LOG_LEVEL", "info"), "log level: trace, debug, info, warn, error (FACHO_LOG_LEVEL); FACHO_LOG_FORMAT=json|console sets the format (default: console on a terminal)")
	fs.DurationVar(&o.faults.Latency, "latency", 0, "injected latency per request")
	fs.DurationVar(&o.faults.Jitter, "jitter", 0, "random extra latency in [0, jitter)")
	fs.Float64Var(&o.faults.LossPercent, "loss", 0, "percent of requests dropped")
	fs.DurationVar(&o.faults.SlowdownPerConcurrent, "slowdown-per-concurrent", 0, "extra latency per concurrent request")
	fs.IntVar(&o.faults.MaxRPS, "max-rps", 0, "requests per second per OLT; excess dropped (0: no cap)")
	fs.Float64Var(&o.faults.MalformedPercent, "malformed", 0, "percent of responses sent corrupted")
	fs.IntVar(&o.faults.MaxVarbinds, "max-varbinds", 0, "requests with more varbinds than this get no answer (0: no limit)")
	fs.BoolVar(&o.faults.OIDNotIncreasing, "oid-not-increasing", false, "answer GETNEXT/GETBULK with the OIDs asked (a broken agent: walks cannot go on)")
	fs.DurationVar(&o.life.Interval, "life-interval", 0, "interval of simulated life ticks (0: off)")
	fs.Float64Var(&o.life.OfflinePercent, "life-offline", 0, "percent chance per tick an online ONU goes offline")
	fs.Float64Var(&o.life.OnlinePercent, "life-online", 0, "percent chance per tick an offline ONU comes back")
	fs.Float64Var(&o.life.RxDriftDBm, "life-rx-drift", 0, "max Rx drift per tick, dB")
	if err := fs.Parse(args[1:]); err != nil {
		return o, err
	}
	if o.community == "" {
		o.community = getenv("OLTSIM_COMMUNITY")
	}
	if o.community == "" {
		o.community = "public"
	}
	return o, nil
}

// nthAddr returns host:port+i, keeping port 0 as 0.
func nthAddr(listen string, i int) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listen %q: %w", listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("listen %q: %w", listen, err)
	}
	if p != 0 {
		p += i
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

func fleetFromFlags(o options) (oltsim.FleetConfig, error) {
	var cfg oltsim.FleetConfig
	shape, err := oltsim.ParseShape(o.shape)
	if err != nil {
		return cfg, err
	}
	profile := o.profile
	if o.recording != "" {
		profile = ""
	}
	for i := 0; i < o.olts; i++ {
		addr, err := nthAddr(o.listen, i)
		if err != nil {
			return cfg, err
		}
		cfg.OLTs = append(cfg.OLTs, oltsim.OLTConfig{
			Name: fmt.Sprintf("%s-%d", o.name, i), Listen: addr, Community: o.community,
			Profile: profile, Recording: o.recording, Shape: shape, Seed: o.seed + int64(i),
			MaxResponseBytes: o.maxResponseBytes, Faults: o.faults, Life: o.life,
		})
	}
	return cfg, nil
}

func fleetFromFile(path, community string) (oltsim.FleetConfig, error) {
	var cfg oltsim.FleetConfig
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read fleet file: %w", err)
	}
	var ff fleetFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&ff); err != nil {
		return cfg, fmt.Errorf("parse fleet file %s: %w", path, err)
	}
	for _, e := range ff.OLTs {
		c := e.OLTConfig
		if c.Community == "" {
			c.Community = community
		}
		if c.Listen == "" {
			c.Listen = "127.0.0.1:0"
		}
		if e.Count <= 1 {
			cfg.OLTs = append(cfg.OLTs, c)
			continue
		}
		for i := 0; i < e.Count; i++ {
			ci := c
			ci.Name = fmt.Sprintf("%s-%d", c.Name, i)
			ci.Seed = c.Seed + int64(i)
			if ci.Listen, err = nthAddr(c.Listen, i); err != nil {
				return cfg, err
			}
			cfg.OLTs = append(cfg.OLTs, ci)
		}
	}
	return cfg, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	lvl, err := zerolog.ParseLevel(o.logLevel)
	if err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	out, err := logWriter(stderr, getenv("FACHO_LOG_FORMAT"))
	if err != nil {
		return err
	}
	log := zerolog.New(out).Level(lvl).With().Timestamp().Str("service", "oltsim").Logger()

	var cfg oltsim.FleetConfig
	if o.fleet != "" {
		cfg, err = fleetFromFile(o.fleet, o.community)
	} else {
		cfg, err = fleetFromFlags(o)
	}
	if err != nil {
		return err
	}
	fleet, err := oltsim.Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer fleet.Close()
	for _, olt := range fleet.OLTs() {
		i := olt.Info()
		fmt.Fprintf(stdout, "olt %s %s %s onus=%d\n", i.Name, i.Addr, i.Profile+i.Recording, i.ONUs)
		log.Debug().Str("olt", i.Name).Str("addr", i.Addr).Msg("olt listening")
	}

	errc := make(chan error, 1)
	var srv *http.Server
	if o.httpAddr != "" {
		ln, err := net.Listen("tcp", o.httpAddr)
		if err != nil {
			return fmt.Errorf("http listen: %w", err)
		}
		srv = &http.Server{Handler: fleet.Handler(), ReadHeaderTimeout: 5 * time.Second}
		fmt.Fprintf(stdout, "http %s\n", ln.Addr())
		log.Info().Str("addr", ln.Addr().String()).Msg("http control listening")
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("http serve: %w", err)
			}
		}()
	}
	select {
	case <-ctx.Done():
		log.Info().Msg("shutting down")
	case err = <-errc:
	}
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if e := srv.Shutdown(sctx); e != nil && err == nil {
			err = fmt.Errorf("http shutdown: %w", e)
		}
	}
	if e := fleet.Close(); e != nil && err == nil {
		err = e
	}
	return err
}

// envDefault is the variable's value, else def.
func envDefault(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// logWriter is stderr in the FACHO_LOG_FORMAT of every Facho process: json,
// console, or (unset) console on a terminal and JSON elsewhere.
func logWriter(stderr io.Writer, format string) (io.Writer, error) {
	switch format {
	case "json":
		return stderr, nil
	case "console":
	case "":
		f, ok := stderr.(*os.File)
		if !ok {
			return stderr, nil
		}
		if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			return stderr, nil
		}
	default:
		return nil, fmt.Errorf("FACHO_LOG_FORMAT %q: want json or console", format)
	}
	return zerolog.ConsoleWriter{Out: stderr, TimeFormat: "15:04:05"}, nil
}
