package projector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/telemetry"
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
}

// applyFunc applies one decoded message inside the projection transaction.
type applyFunc func(ctx context.Context, tx pgx.Tx) error

// Run projects the four consumers until ctx ends, then returns nil.
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
	p := &projector{cfg: cfg, js: deps.JS, db: deps.DB, log: deps.Log, metrics: m}
	p.outbox = &outbox{js: deps.JS, db: deps.DB, batch: cfg.OutboxBatch, timeout: cfg.PublishTimeout, log: deps.Log, metrics: m}

	router, err := jsrouter.New(deps.JS, jsrouter.Config{
		Source:           cfg.Source,
		SubscriberConfig: jsrouter.SubscriberConfig{NackDelay: cfg.NackDelay, FetchWait: cfg.FetchWait},
		Log:              deps.Log,
		Registry:         deps.Registry,
	})
	if err != nil {
		return fmt.Errorf("projector: %w", err)
	}
	router.Handle(streams.StreamConfig, streams.ConsumerProjectorConfig, p.handler(streams.ConsumerProjectorConfig, p.decodeConfig))
	router.Handle(streams.StreamSchedule, streams.ConsumerProjectorSchedule, p.handler(streams.ConsumerProjectorSchedule, p.decodeNodeDue))
	router.Handle(streams.StreamExec, streams.ConsumerProjectorExec, p.handler(streams.ConsumerProjectorExec, p.decodeExec))
	router.Handle(streams.StreamVarbinds, streams.ConsumerProjectorVarbinds, p.handler(streams.ConsumerProjectorVarbinds, p.decodeVarbinds))

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return router.Run(ctx) })
	g.Go(func() error { return p.outbox.loop(ctx, cfg.OutboxFlushEvery) })
	p.log.Info().Msg("projector running")
	if err := g.Wait(); err != nil {
		return fmt.Errorf("projector: %w", err)
	}
	p.log.Info().Msg("projector stopped")
	return nil
}

// handler decodes a message (malformed => dead letter), applies it with
// its checkpoint and, after commit, publishes the ONU events it produced.
func (p *projector) handler(consumer string, decode func(m jsrouter.Msg) (applyFunc, error)) jsrouter.Handler {
	return func(ctx context.Context, m jsrouter.Msg) error {
		fn, err := decode(m)
		if err != nil {
			return p.deadLetter(ctx, consumer, m.Seq, err)
		}
		start := time.Now()
		applied, err := projection.Apply(ctx, p.db, consumer, m.Seq, fn)
		if err != nil {
			return p.deadLetter(ctx, consumer, m.Seq, permanentAsMalformed(err))
		}
		p.metrics.applySeconds.WithLabelValues(consumer).Observe(time.Since(start).Seconds())
		result := "applied"
		if !applied {
			result = "skipped"
			p.log.Debug().Str(telemetry.KeyConsumer, consumer).Uint64(telemetry.KeyStreamSeq, m.Seq).Msg("already applied; skipped")
		}
		p.metrics.events.WithLabelValues(consumer, result).Inc()
		if consumer == streams.ConsumerProjectorVarbinds {
			// The events are committed in the outbox: a failed publish is
			// retried by the outbox loop, not by redelivering the batch.
			p.outbox.flushLogged(ctx)
		}
		return nil
	}
}

// deadLetter lets a malformed message go to the dead-letter subject (the
// router does that for errors wrapping streams.ErrMalformed) after moving
// the checkpoint past it, so the checkpoint still says how far the consumer
// got. If the checkpoint cannot be written the error is transient: the
// message comes back and is dead-lettered then.
func (p *projector) deadLetter(ctx context.Context, consumer string, seq uint64, err error) error {
	if !errors.Is(err, streams.ErrMalformed) {
		return err
	}
	if _, cerr := projection.Apply(ctx, p.db, consumer, seq, func(context.Context, pgx.Tx) error { return nil }); cerr != nil {
		return fmt.Errorf("checkpoint past malformed message: %w", cerr)
	}
	return err
}

// permanentAsMalformed marks errors that no retry can fix (the data does
// not fit the schema: SQLSTATE classes 22 data exception and 23 integrity
// violation) as malformed, so they are dead-lettered instead of blocking
// the consumer forever.
// The same holds for a value pgx cannot encode into its column type (e.g.
// an integer out of range), which pgx reports before sending anything.
func permanentAsMalformed(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && len(pgErr.Code) == 5 && (pgErr.Code[:2] == "22" || pgErr.Code[:2] == "23") {
		return fmt.Errorf("%w: %v", streams.ErrMalformed, err)
	}
	if strings.Contains(err.Error(), "failed to encode args") {
		return fmt.Errorf("%w: %v", streams.ErrMalformed, err)
	}
	return err
}
