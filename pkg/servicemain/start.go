package servicemain

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/buildinfo"
	"github.com/facho-olt/facho/pkg/dbmigrate"
	"github.com/facho-olt/facho/pkg/pgboot"
	"github.com/facho-olt/facho/pkg/telemetry"
)

// Start-up bounds: a server that does not answer within them is reported
// rather than waited for forever.
const (
	migrateTimeout   = time.Minute
	provisionTimeout = 30 * time.Second
)

// start connects what the service needs and runs it beside the telemetry
// server until ctx ends or either of them fails.
func (b Binary) start(ctx context.Context, c Common, ch checked, log zerolog.Logger) error {
	reg := telemetry.NewRegistry()
	build := buildinfo.Get()
	log.Info().Str("version", build.Version).Str("commit", build.Commit).Str("build_date", build.Date).
		Str("go_version", build.GoVersion).Msg("starting")
	if err := telemetry.RegisterBuildInfo(reg, b.Name, build); err != nil {
		return err
	}
	deps := Deps{Box: ch.box, Log: log, Registry: reg, Health: telemetry.NewHealth()}
	if b.Database != NoDatabase {
		var minConns int32
		if b.DBConns != nil {
			minConns = b.DBConns()
		}
		pool, closeDB, err := openDatabase(ctx, c, log, minConns)
		if err != nil {
			return err
		}
		defer closeDB()
		deps.DB = pool
		// /healthz is anonymous: "database unavailable", the detail (user,
		// database, host, port) goes to the log.
		deps.Health.Add("postgres", telemetry.PublicCheck(log, "postgres", "database unavailable", pool.Ping))
	}
	clientName := "facho-" + b.Name
	if b.ClientName != nil {
		clientName = b.ClientName()
	}
	conn, err := connectNATS(ctx, c, clientName, b.Name, log)
	if err != nil {
		return err
	}
	defer conn.drain(log)
	deps.JS = conn.js
	deps.Health.Add("nats", telemetry.PublicCheck(log, "nats", "nats unavailable", conn.check))
	// Connected is not enough: without quorum JetStream stores nothing.
	deps.Health.Add("jetstream", telemetry.PublicCheck(log, "jetstream", "jetstream unavailable", newJSHealth(conn.js).check))
	return b.serve(ctx, c.HTTPAddr, c.PprofAddr, deps)
}

// openDatabase opens the pool (starting the private cluster first when
// configured) and applies the migrations, so a service never waits on
// another to create its schema (tern serialises concurrent runs). closeDB
// closes the pool and stops a cluster this call started.
func openDatabase(ctx context.Context, c Common, log zerolog.Logger, minConns int32) (pool *pgxpool.Pool, closeDB func(), err error) {
	url, stopCluster := c.DatabaseURL, func() error { return nil }
	if c.PGDataDir != "" {
		url, stopCluster, err = pgboot.Ensure(ctx, pgboot.Config{DatabaseURL: c.DatabaseURL, DataDir: c.PGDataDir, Log: log})
		if err != nil {
			return nil, nil, fmt.Errorf("database: %w", err)
		}
	}
	closeDB = func() {
		if pool != nil {
			pool.Close()
		}
		if err := stopCluster(); err != nil {
			log.Error().Err(err).Msg("stop private PostgreSQL")
		}
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		closeDB()
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	// pgx's default (4 on 2 cores) is too few for a projector: its varbind
	// holder lock keeps one, its workers one each, and every consumer
	// needs one. A pool_max_conns in the URL wins.
	if !strings.Contains(url, "pool_max_conns") {
		pcfg.MaxConns = max(pcfg.MaxConns, 12, minConns)
	}
	pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		closeDB()
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	mctx, cancel := context.WithTimeout(ctx, migrateTimeout)
	err = dbmigrate.Apply(mctx, pool, log)
	cancel()
	if err != nil {
		closeDB()
		return nil, nil, fmt.Errorf("migrate database: %w", err)
	}
	return pool, closeDB, nil
}

// serve runs the service and the telemetry server in one errgroup: the
// failure of either stops the other, and so does the service's end, since
// a binary whose service is done has nothing left to report on.
func (b Binary) serve(ctx context.Context, httpAddr, pprofAddr string, deps Deps) error {
	g, gctx := errgroup.WithContext(ctx)
	sctx, stop := context.WithCancel(gctx)
	defer stop()
	g.Go(func() error {
		defer stop()
		if err := b.Service(sctx, deps); err != nil {
			return fmt.Errorf("run %s: %w", b.Name, err)
		}
		return nil
	})
	if httpAddr != "" {
		g.Go(func() error {
			return telemetry.Serve(sctx, httpAddr, telemetry.Mux(deps.Registry, deps.Health), func(a net.Addr) {
				deps.Log.Info().Str(telemetry.KeyAddr, a.String()).Msg("telemetry listening")
			})
		})
	}
	if pprofAddr != "" {
		g.Go(func() error {
			return telemetry.Serve(sctx, pprofAddr, pprofMux(), func(a net.Addr) {
				deps.Log.Info().Str(telemetry.KeyAddr, a.String()).Msg("pprof listening")
			})
		})
	}
	return g.Wait()
}

// pprofMux serves the runtime profiles (-pprof-addr): /debug/pprof/ and
// /debug/pprof/profile?seconds=N for a CPU profile.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
