// Package auditor writes the coordinator log (seed 002 CoordinatorLog):
// one row in coordinator_logs and one line in a rotating file for every
// execution lifecycle event and every audit event, and deletes rows older
// than the retention daily.
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

	"github.com/facho-olt/facho/pkg/deadletter"
	"github.com/facho-olt/facho/pkg/telemetry"
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
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
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
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return a.consume(gctx, streams.StreamExec, streams.ConsumerAuditorExec, fromExec)
	})
	g.Go(func() error {
		return a.consume(gctx, streams.StreamAudit, streams.ConsumerAuditorAudit, fromAudit)
	})
	g.Go(func() error { return a.cleanupLoop(gctx) })
	return g.Wait()
}

// consume pulls from a durable consumer provisioned by streams.Provision
// and writes one entry per message, acking after the commit.
func (a *auditor) consume(ctx context.Context, stream, durable string, toEntry func(streams.Envelope) (Entry, error)) error {
	log := a.deps.Log.With().Str(telemetry.KeyConsumer, durable).Logger()
	cons, err := a.deps.JS.Consumer(ctx, stream, durable)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("auditor: open consumer %s/%s: %w", stream, durable, err)
	}
	for ctx.Err() == nil {
		batch, err := cons.Fetch(a.cfg.FetchBatch, jetstream.FetchMaxWait(a.cfg.FetchWait))
		if err != nil {
			log.Warn().Err(err).Msg("fetch")
			sleep(ctx, time.Second)
			continue
		}
		failed := false
		for msg := range batch.Messages() {
			if !a.handle(ctx, log, stream, durable, msg, toEntry) {
				failed = true
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && ctx.Err() == nil {
			log.Debug().Err(err).Msg("fetch batch")
		}
		if failed {
			// The database is likely down: do not spin on new messages.
			sleep(ctx, min(a.cfg.NakDelay, time.Second))
		}
	}
	return nil
}

// handle processes one message; false means a transient failure (NAKed).
func (a *auditor) handle(ctx context.Context, log zerolog.Logger, stream, durable string, msg jetstream.Msg, toEntry func(streams.Envelope) (Entry, error)) bool {
	meta, err := msg.Metadata()
	if err != nil {
		log.Warn().Err(err).Str(telemetry.KeySubject, msg.Subject()).Msg("message without metadata")
		_ = msg.Term()
		return true
	}
	seq := meta.Sequence.Stream
	log = log.With().Uint64(telemetry.KeyStreamSeq, seq).Str(telemetry.KeySubject, msg.Subject()).Logger()
	deadLetter := func(reason string) bool {
		if err := deadletter.Publish(ctx, a.deps.JS, durable, a.cfg.Source, msg, reason); err != nil {
			log.Error().Err(err).Msg("dead letter")
			_ = msg.NakWithDelay(a.cfg.NakDelay)
			return false
		}
		a.m.entries.WithLabelValues(durable, "dead_letter").Inc()
		log.Warn().Str("reason", reason).Msg("message sent to the dead letters")
		return true
	}
	env, err := streams.DecodeEnvelope(msg.Data())
	var e Entry
	if err == nil {
		e, err = toEntry(env)
	}
	var skip errSkip
	switch {
	case errors.As(err, &skip):
		a.m.entries.WithLabelValues(durable, "skipped").Inc()
		log.Debug().Str("type", skip.typ).Msg("event without coordinator log")
		_ = msg.Ack()
		return true
	case errors.Is(err, streams.ErrMalformed):
		return deadLetter(err.Error())
	case err != nil:
		return deadLetter(err.Error())
	}
	e.SourceStream, e.SourceSeq = stream, seq
	e = sanitize(e)
	inserted, err := insert(ctx, a.deps.DB, durable, e)
	switch {
	case errors.Is(err, errPermanent):
		return deadLetter(err.Error())
	case err != nil:
		a.m.entries.WithLabelValues(durable, "retry").Inc()
		log.Warn().Err(err).Msg("write coordinator log; retry later")
		_ = msg.NakWithDelay(a.cfg.NakDelay)
		return false
	}
	// The file gets the line once: a redelivered message that is already in
	// the database was already written.
	if inserted {
		if err := a.file.write(e); err != nil {
			a.m.fileErrors.Inc()
			log.Error().Err(err).Msg("coordinator log file")
		}
		a.m.entries.WithLabelValues(durable, "written").Inc()
	} else {
		a.m.entries.WithLabelValues(durable, "duplicate").Inc()
	}
	if err := msg.Ack(); err != nil {
		log.Warn().Err(err).Msg("ack")
	}
	return true
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

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
