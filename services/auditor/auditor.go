// Package auditor writes the coordinator log (seed 002 CoordinatorLog):
// one row in coordinator_logs and one line in a rotating file for every
// execution lifecycle event and every audit event, and deletes rows older
// than the retention daily.
//
// It is also seed 002's Quota Manager (quota.go, check.go): the hourly
// quota_tracker per OLT, task type (the job) and hour, projected from
// NodeDue (auditor-schedule), the execution events (auditor-quota-exec),
// the OLT configuration events (auditor-config) and the audit events
// (auditor-quota-audit): an OLT disabled or deleted mid-hour interrupts its
// trackers. The hourly check, a timer idempotent on (olt, task type,
// period), closes each hour Quota.Grace after its end, once those
// consumers caught up with it, and turns a compliance below
// Quota.Threshold into a quota violation notification, from which the
// quota_violations row (auditor-notify) and the QUOTA_VIOLATION
// coordinator log row (auditor-notify-log) are projected. Notifications
// (notify.go: violations, OLT_DISABLED audit events, N consecutive
// failures of an OLT) go through an outbox: published on
// facho.notify.<kind>.<olt> and delivered to the webhooks subscribed to
// their kind, HMAC-signed, retried with backoff, every delivery recorded.
// The quotas live here rather than in the projector because the
// violations, logs and notifications that depend on them are the
// auditor's: one service owns the tables it checks and writes, and the
// projector's hot path (ONU data) is untouched.
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
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/secret"
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
	// Box opens the sealed webhook secrets; without it webhook deliveries
	// fail ("no secret key").
	Box *secret.Box
}

type auditor struct {
	cfg    Config
	deps   Deps
	m      *metrics
	file   *fileLog
	client *http.Client
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
	a := &auditor{cfg: cfg, deps: deps, m: m, file: &fileLog{w: deps.File}, client: cfg.Notify.Client}
	if a.client == nil {
		a.client = &http.Client{Timeout: cfg.Notify.Timeout}
	}
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
	// Quotas and notifications (quota.go, notify.go): their own consumers,
	// so each read model has its own checkpoints.
	for _, c := range a.quotaConsumers() {
		router.Handle(c.stream, c.name, projection.Handler(deps.DB, projection.SubjectChecked(c.decode)))
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return router.Run(gctx) })
	g.Go(func() error { return a.cleanupLoop(gctx) })
	g.Go(func() error { return a.checkLoop(gctx) })
	g.Go(func() error { return a.publishLoop(gctx) })
	g.Go(func() error { return a.deliverLoop(gctx) })
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
		qbefore := a.deps.Now().Add(-a.cfg.Quota.Retention)
		if n, err := CleanupQuotas(ctx, a.deps.DB, qbefore); err != nil && ctx.Err() == nil {
			a.deps.Log.Warn().Err(err).Msg("quota cleanup")
		} else if n > 0 {
			a.deps.Log.Info().Int64("deleted", n).Time("before", qbefore).Msg("quota cleanup")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
