package poller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// Deps are the poller's connections to the outside world.
type Deps struct {
	JS       jetstream.JetStream
	Log      zerolog.Logger
	Registry prometheus.Registerer // nil: metrics are not exported
	Box      *secret.Box           // opens NodeDue.Target.CommunityEnc
	// Retry decides what follows a failed attempt; nil means
	// DefaultRetryPolicy.
	Retry RetryPolicy
}

// errShutdown is the cancellation cause of operations cut short by Run's
// context ending (after Config.ShutdownGrace).
var errShutdown = errors.New("interrupted: poller shutting down")

// poller is one running instance.
type poller struct {
	cfg     Config
	js      jetstream.JetStream
	log     zerolog.Logger
	box     *secret.Box
	retry   RetryPolicy
	leases  *lease.Manager
	exec    jetstream.Stream
	metrics *metrics
	stats   *pollerStats // seed 004's per-slot stats (stats.go)
	// maxBatchBytes cuts a varbind batch before it nears the server's
	// maximum payload (see batchByteBudget).
	maxBatchBytes int
	// oltKVBucket is streams.BucketOLTSNMP, opened on first use by a
	// get (getonus.go).
	oltKVMu     sync.Mutex
	oltKVBucket jetstream.KeyValue
	// maxDeliver is the consumer's MaxDeliver (<= 0: unlimited): the last
	// delivery of a NodeDue whose OLT is busy ends it as skipped.
	maxDeliver int
	// cancels follows the planner's cancellations (facho_cancel).
	cancels *cancels
}

// Run takes NodeDue from the poller consumer until ctx ends, then stops
// fetching, gives in-flight operations Config.ShutdownGrace to finish,
// cancels the rest, releases their leases and returns nil.
func Run(ctx context.Context, cfg Config, deps Deps) error {
	err := run(ctx, cfg, deps)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil // stopped while starting: a clean stop, not a failure
	}
	return err
}

func run(ctx context.Context, cfg Config, deps Deps) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("poller config: %w", err)
	}
	if deps.JS == nil || deps.Box == nil {
		return errors.New("poller: JetStream and secret box are required")
	}
	reg := deps.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg, cfg.PollerID, cfg.Workers)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	stats, err := newPollerStats(cfg, reg, time.Now, host, os.Getpid())
	if err != nil {
		return err
	}
	cons, err := deps.JS.Consumer(ctx, streams.StreamSchedule, streams.ConsumerPoller)
	if err != nil {
		return fmt.Errorf("poller consumer %s/%s: %w", streams.StreamSchedule, streams.ConsumerPoller, err)
	}
	if cfg.ProgressInterval == 0 {
		// Heartbeat three times per AckWait so one lost heartbeat does not
		// trigger a redelivery to another poller.
		cfg.ProgressInterval = max(cons.CachedInfo().Config.AckWait/3, 100*time.Millisecond)
	}
	exec, err := deps.JS.Stream(ctx, streams.StreamExec)
	if err != nil {
		return fmt.Errorf("poller exec stream: %w", err)
	}
	leases, err := lease.Open(ctx, deps.JS, streams.BucketLeases, cfg.PollerID)
	if err != nil {
		return fmt.Errorf("poller: %w", err)
	}
	log := deps.Log.With().Str(telemetry.KeyPoller, cfg.PollerID).Str(telemetry.KeyConsumer, streams.ConsumerPoller).Logger()
	cancels, err := openCancels(ctx, deps.JS, log)
	if err != nil {
		return fmt.Errorf("poller: %w", err)
	}
	retry := deps.Retry
	if retry == nil {
		retry = DefaultRetryPolicy{}
	}
	p := &poller{
		cfg: cfg, js: deps.JS, box: deps.Box, retry: retry, leases: leases, exec: exec, metrics: m, stats: stats,
		maxBatchBytes: batchByteBudget(deps.JS), maxDeliver: cons.CachedInfo().Config.MaxDeliver,
		log: log, cancels: cancels,
	}
	// Executions of dead pollers end INTERRUPTED (interrupt.go).
	stopInterrupts, err := p.startInterrupts(ctx, reg)
	if err != nil {
		return err
	}
	defer stopInterrupts()
	// Deferred after the workers are done: the key is deleted last.
	stopStats, err := p.startStats(ctx)
	if err != nil {
		return err
	}
	defer stopStats()
	return p.run(ctx, cons)
}

func (p *poller) run(ctx context.Context, cons jetstream.Consumer) error {
	// Operations run on work, not ctx: shutdown first stops fetching, then
	// waits ShutdownGrace before cancelling what is still running.
	work, cancelWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelWork(errShutdown)
	// The watcher outlives the fetching: operations in their shutdown
	// grace can still be interrupted.
	if err := p.cancels.watch(work); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for i := 0; i < p.cfg.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.worker(ctx, work, cons)
		}()
	}
	p.log.Info().Int("workers", p.cfg.Workers).Dur("lease_ttl", p.leases.TTL()).Msg("poller started")
	<-ctx.Done()

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	grace := time.NewTimer(p.cfg.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		p.log.Warn().Dur("grace", p.cfg.ShutdownGrace).Msg("cancelling in-flight operations")
		cancelWork(errShutdown)
		<-done
	}
	p.log.Info().Msg("poller stopped")
	return nil
}

// worker pulls one NodeDue at a time: no prefetch, so the AckWait clock of
// a NodeDue starts only when a worker is free to run it.
func (p *poller) worker(ctx, work context.Context, cons jetstream.Consumer) {
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, p.cfg.FetchWait)
		batch, err := cons.Fetch(1, jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				return
			}
			p.log.Warn().Err(err).Msg("fetch node due")
			sleep(ctx, p.cfg.FetchWait)
			continue
		}
		for msg := range batch.Messages() {
			start := time.Now()
			p.metrics.busy.Add(1)
			p.handle(work, msg)
			p.metrics.busy.Add(-1)
			p.metrics.busySeconds.Add(time.Since(start).Seconds())
		}
		err = batch.Error()
		cancel()
		if err != nil && ctx.Err() == nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) {
			p.log.Warn().Err(err).Msg("fetch node due")
			sleep(ctx, p.cfg.FetchWait)
		}
	}
}

// batchByteBudget is half the connection's maximum payload (1 MB by
// default): a batch over the limit is refused by the server on every
// attempt, and the other half leaves room for the columns and envelope.
func batchByteBudget(js jetstream.JetStream) int {
	if nc := js.Conn(); nc != nil && nc.MaxPayload() > 0 {
		return int(nc.MaxPayload() / 2)
	}
	return 512 << 10
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
