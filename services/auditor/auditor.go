// Package auditor writes the coordinator log (seed 002 CoordinatorLog):
// one row in coordinator_logs and one line in a rotating file for every
// execution lifecycle event and every audit event, and deletes rows older
// than the retention daily.
//
// Its two durable consumers run on pkg/jsrouter like every Facho consumer,
// and each message is applied with its consumer's checkpoint
// (pkg/projection); UNIQUE (source_stream, source_seq) keeps a row single
// even when the checkpoint is reset.
package auditor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// Deps are the auditor's collaborators.
type Deps struct {
	JS       jetstream.JetStream
	DB       *pgxpool.Pool
	Log      zerolog.Logger
	Registry prometheus.Registerer
	// Now is the clock of the cleanup; time.Now when nil.
	Now func() time.Time
	// File replaces the rotating file of Config.LogFile when set (tests).
	File io.Writer
}

type auditor struct {
	cfg  Config
	deps Deps
	m    *metrics
	file *fileLog
}

// Run consumes the auditor's two durable consumers and runs the daily
// cleanup until ctx is cancelled; then it returns nil.
func Run(ctx context.Context, cfg Config, deps Deps) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("auditor config: %w", err)
	}
	if deps.JS == nil || deps.DB == nil {
		return errors.New("auditor: JetStream and database are required")
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	m, err := newMetrics(deps.Registry)
	if err != nil {
		return err
	}
	a := &auditor{cfg: cfg, deps: deps, m: m, file: &fileLog{w: deps.File}}
	if deps.File == nil && cfg.LogFile != "-" {
		lj := &lumberjack.Logger{Filename: cfg.LogFile, MaxSize: cfg.LogMaxSizeMB, MaxBackups: cfg.LogMaxBackups}
		defer lj.Close()
		a.file.w = lj
	}

	router, err := jsrouter.New(deps.JS, jsrouter.Config{
		Source:           cfg.Source,
		SubscriberConfig: jsrouter.SubscriberConfig{NackDelay: cfg.NackDelay, FetchWait: cfg.FetchWait},
		Log:              deps.Log,
		Registry:         deps.Registry,
		// A database outage holds messages without counting toward the
		// delivery bound; see pkg/jsrouter.
		Health: projection.Health(deps.DB),
	})
	if err != nil {
		return fmt.Errorf("auditor: %w", err)
	}
	router.Handle(streams.StreamExec, streams.ConsumerAuditorExec, projection.Handler(deps.DB, projection.SubjectChecked(a.decoder(fromExec))))
	router.Handle(streams.StreamAudit, streams.ConsumerAuditorAudit, projection.Handler(deps.DB, projection.SubjectChecked(a.decoder(fromAudit))))

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return router.Run(gctx) })
	g.Go(func() error { return a.cleanupLoop(gctx) })
	if err := g.Wait(); err != nil {
		return fmt.Errorf("auditor: %w", err)
	}
	return nil
}

// cleanupLoop deletes rows older than the retention at start and then every
// CleanupInterval.
func (a *auditor) cleanupLoop(ctx context.Context) error {
	t := time.NewTicker(a.cfg.CleanupInterval)
	defer t.Stop()
	for {
		before := a.deps.Now().Add(-a.cfg.Retention)
		n, err := Cleanup(ctx, a.deps.DB, before)
		if err != nil && ctx.Err() == nil {
			a.deps.Log.Warn().Err(err).Msg("coordinator log cleanup")
		} else if n > 0 {
			a.m.deleted.Add(float64(n))
			a.deps.Log.Info().Int64("deleted", n).Time("before", before).Msg("coordinator log cleanup")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
