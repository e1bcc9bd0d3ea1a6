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
	"github.com/facho-olt/facho/pkg/profiles"
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
	// maxDeliver is each poller consumer's MaxDeliver by name (<= 0:
	// unlimited): the last delivery of a NodeDue whose OLT is busy ends it
	// as skipped.
	maxDeliver map[string]int
	// cancels follows the planner's cancellations (facho_cancel).
	cancels *cancels
	// interrupts ends attempts whose lease expired (interrupt.go); nil
	// until started.
	interrupts *interrupts
	// profiles are the vendor profiles whose bounds apply to the nodes of
	// their brands (bounds.go); nil: the ceiling alone.
	profiles *profiles.Catalogue
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
	// One consumer per queue class, plus the pre-class durable that the
	// polling slots drain (streams.SubjectNodeDue).
	classCons := make(map[string]jetstream.Consumer, len(streams.Classes()))
	for _, c := range streams.Classes() {
		name := streams.ConsumerPollerClass(c)
		cons, err := deps.JS.Consumer(ctx, streams.StreamSchedule, name)
		if err != nil {
			return fmt.Errorf("poller consumer %s/%s: %w", streams.StreamSchedule, name, err)
		}
		classCons[c] = cons
	}
	legacy, err := deps.JS.Consumer(ctx, streams.StreamSchedule, streams.ConsumerPoller)
	if err != nil {
		return fmt.Errorf("poller consumer %s/%s: %w", streams.StreamSchedule, streams.ConsumerPoller, err)
	}
	cons := classCons[streams.ClassPolling]
	maxDeliver := map[string]int{streams.ConsumerPoller: legacy.CachedInfo().Config.MaxDeliver}
	for _, c := range classCons {
		maxDeliver[c.CachedInfo().Config.Durable] = c.CachedInfo().Config.MaxDeliver
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
	catalogue, err := profiles.Load(cfg.ProfilesDir)
	if err != nil {
		return fmt.Errorf("poller: bounds of the vendor profiles: %w", err)
	}
	retry := deps.Retry
	if retry == nil {
		retry = DefaultRetryPolicy{}
	}
	p := &poller{
		cfg: cfg, js: deps.JS, box: deps.Box, retry: retry, leases: leases, exec: exec, metrics: m, stats: stats, profiles: catalogue,
		maxBatchBytes: batchByteBudget(deps.JS), maxDeliver: maxDeliver,
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
	return p.run(ctx, classCons, legacy)
}

func (p *poller) run(ctx context.Context, classCons map[string]jetstream.Consumer, legacy jetstream.Consumer) error {
	// Operations run on work, not ctx: shutdown first stops fetching, then
	// waits ShutdownGrace before cancelling what is still running.
	work, cancelWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelWork(errShutdown)
	// The watcher outlives the fetching: operations in their shutdown
	// grace can still be interrupted.
	if err := p.cancels.watch(work); err != nil {
		return err
	}
	// Each class has its own workers on its own consumer: a class at its
	// limit leaves the others' messages to their workers. slots caps the
	// process (Config.Workers) on top of the class limits.
	slots := make(chan struct{}, p.cfg.Workers)
	var wg sync.WaitGroup
	for _, class := range streams.Classes() {
		for i := 0; i < p.cfg.Classes.Of(class).Concurrency; i++ {
			var extra jetstream.Consumer
			if class == streams.ClassPolling {
				extra = legacy // pre-class NodeDue: polling slots drain them
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.worker(ctx, work, class, classCons[class], extra, slots)
			}()
		}
	}
	p.log.Info().Int("workers", p.cfg.Workers).Int("discovery", p.cfg.Classes.Discovery.Concurrency).
		Int("polling", p.cfg.Classes.Polling.Concurrency).Int("retry", p.cfg.Classes.Retry.Concurrency).
		Int("high", p.cfg.Classes.High.Concurrency).Dur("lease_ttl_ms", p.leases.TTL()).Msg("poller started")
	<-ctx.Done()

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	grace := time.NewTimer(p.cfg.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		p.log.Warn().Dur("grace_ms", p.cfg.ShutdownGrace).Msg("cancelling in-flight operations")
		cancelWork(errShutdown)
		<-done
	}
	p.log.Info().Msg("poller stopped")
	return nil
}

// worker pulls one NodeDue at a time of its class: no prefetch, so the
// AckWait clock of a NodeDue starts only when a worker is free to run it.
// extra, when set (the pre-class consumer), is asked first without waiting.
// A NodeDue runs once it holds one of slots, the process's cap
// (Config.Workers; never waited on with the default cap, the sum of the
// class limits).
func (p *poller) worker(ctx, work context.Context, class string, cons, extra jetstream.Consumer, slots chan struct{}) {
	for ctx.Err() == nil {
		if extra != nil && p.fetchRun(ctx, work, class, extra, true, slots) {
			continue
		}
		p.fetchRun(ctx, work, class, cons, false, slots)
	}
}

// fetchRun fetches at most one NodeDue from cons (waiting up to
// FetchWait unless noWait) and runs it under a slot; it tells whether one
// came.
func (p *poller) fetchRun(ctx, work context.Context, class string, cons jetstream.Consumer, noWait bool, slots chan struct{}) bool {
	fctx, cancel := context.WithTimeout(ctx, p.cfg.FetchWait)
	defer cancel()
	var batch jetstream.MessageBatch
	var err error
	if noWait {
		batch, err = cons.FetchNoWait(1)
	} else {
		batch, err = cons.Fetch(1, jetstream.FetchContext(fctx))
	}
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn().Err(err).Str("class", class).Msg("fetch node due")
			sleep(ctx, p.cfg.FetchWait)
		}
		return false
	}
	got := false
	for msg := range batch.Messages() {
		got = true
		if !p.takeSlot(ctx, msg, slots) {
			_ = msg.Nak() // stopping: another poller takes it
			continue
		}
		start := time.Now()
		p.metrics.busy.Add(1)
		p.handle(work, msg)
		p.metrics.busy.Add(-1)
		p.metrics.busySeconds.Add(time.Since(start).Seconds())
		<-slots
	}
	err = batch.Error()
	if err != nil && ctx.Err() == nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) {
		p.log.Warn().Err(err).Str("class", class).Msg("fetch node due")
		sleep(ctx, p.cfg.FetchWait)
	}
	return got
}

// takeSlot waits for a free slot of the process's cap, marking msg in
// progress meanwhile so it is not redelivered; false if ctx ends first.
func (p *poller) takeSlot(ctx context.Context, msg jetstream.Msg, slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	tick := time.NewTicker(p.cfg.ProgressInterval)
	defer tick.Stop()
	for {
		select {
		case slots <- struct{}{}:
			return true
		case <-ctx.Done():
			return false
		case <-tick.C:
			_ = msg.InProgress()
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
