package projector

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// Deps are the projector's connections.
type Deps struct {
	JS       jetstream.JetStream
	DB       *pgxpool.Pool
	Log      zerolog.Logger
	Registry prometheus.Registerer
}

type projector struct {
	cfg     Config
	js      jetstream.JetStream
	db      *pgxpool.Pool
	log     zerolog.Logger
	metrics *metrics
	outbox  *outbox
	// health tells an outage (the database, or the schedule projection
	// behind) from a message's own failure.
	health func(ctx context.Context, cause error) error
	// barriers: how far the schedule projection must get before an
	// execution not known as dispatched is refused (trust.go).
	barriers barriers
}

// Run projects the five consumers (the varbind batches in groups) until ctx ends, then returns nil.
func Run(ctx context.Context, cfg Config, deps Deps) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("projector config: %w", err)
	}
	if deps.JS == nil || deps.DB == nil {
		return errors.New("projector: JetStream and database are required")
	}
	m, err := newMetrics(deps.Registry)
	if err != nil {
		return err
	}
	if have, need := deps.DB.Config().MaxConns, cfg.DBConns(); have < need {
		deps.Log.Warn().Int32("pool_max_conns", have).Int32("needed", need).Int("partitions", cfg.Partitions).Int("workers", cfg.Workers).
			Msg("the database pool may be too small for the varbind partitions and workers: raise pool_max_conns")
	}
	p := &projector{cfg: cfg, js: deps.JS, db: deps.DB, log: deps.Log, metrics: m}
	p.health = projectorHealth(deps.DB)
	p.outbox = &outbox{js: deps.JS, db: deps.DB, batch: cfg.OutboxBatch, timeout: cfg.PublishTimeout}

	router, err := jsrouter.New(deps.JS, jsrouter.Config{
		Source:           cfg.Source,
		SubscriberConfig: jsrouter.SubscriberConfig{NackDelay: cfg.NackDelay, FetchWait: cfg.FetchWait},
		Log:              deps.Log,
		Registry:         deps.Registry,
		// A database outage holds messages without counting toward the
		// delivery bound; see pkg/jsrouter.
		// So is a message held until the schedule projection catches up
		// (trust.go).
		Health: p.health,
	})
	if err != nil {
		return fmt.Errorf("projector: %w", err)
	}
	// Each message is applied with its consumer's checkpoint; malformed
	// ones, events on a subject not their own (projection.SubjectChecked)
	// and what the schema refuses go to the dead letters (see
	// projection.Handler).
	router.Handle(streams.StreamConfig, streams.ConsumerProjectorConfig, projection.Handler(deps.DB, projection.SubjectChecked(p.decodeConfig)))
	router.Handle(streams.StreamSchedule, streams.ConsumerProjectorSchedule, projection.Handler(deps.DB, projection.SubjectChecked(p.decodeNodeDue)))
	router.Handle(streams.StreamExec, streams.ConsumerProjectorExec, projection.Handler(deps.DB, projection.SubjectChecked(p.decodeExec)))
	// The varbind batches have a loop of their own (varbindloop.go): many
	// messages per transaction, OLTs spread over workers.
	router.Handle(streams.StreamDLQ, streams.ConsumerProjectorDLQ, projection.Handler(deps.DB, projection.SubjectChecked(p.decodeDeadLetter)))
	// The OLTs' availability (olt_availability.go).
	router.Handle(streams.StreamOLT, streams.ConsumerProjectorOLT, projection.Handler(deps.DB, projection.SubjectChecked(p.decodeAvailability)))
	// The OLTs' health readings (health.go).
	hm, err := newHealthMetrics(deps.Registry)
	if err != nil {
		return err
	}
	router.Handle(streams.StreamOLT, streams.ConsumerProjectorHealth, projection.Handler(deps.DB, projection.SubjectChecked(p.decodeHealth(hm))))

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return router.Run(ctx) })
	g.Go(func() error { return p.runVarbinds(ctx) })
	// The OLTs' traps: the traps read model, an ONU's status at once, in
	// groups (traps.go, traps_loop.go).
	g.Go(func() error { return p.runTraps(ctx) })
	g.Go(func() error { return p.runHistoryPrune(ctx, deps.Registry) })
	p.log.Info().Msg("projector running")
	if err := g.Wait(); err != nil {
		return fmt.Errorf("projector: %w", err)
	}
	p.log.Info().Msg("projector stopped")
	return nil
}
