package alerter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/configrules"
	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/streams"
)

// Deps are the alerter's collaborators.
type Deps struct {
	JS       jetstream.JetStream
	DB       *pgxpool.Pool
	Log      zerolog.Logger
	Registry prometheus.Registerer
	// Box opens the sealed webhook secrets.
	Box *secret.Box
	// Now is the clock of the ticks; time.Now when nil.
	Now func() time.Time
	// Client sends to the receivers; a client with Config.Timeout when nil.
	Client *http.Client
}

type alerter struct {
	cfg  Config
	deps Deps
	m    *metrics

	mu  sync.Mutex // guards eng; held across each event's transaction
	eng *Engine

	wake  chan struct{} // an outbox row was written
	dwake chan struct{} // an outbox row was published
}

// leaderLock is the advisory lock the active replica holds.
const leaderLock = 0x6661_6368_6f61_6c72 // "fachoalr"

// Run evaluates the rules and delivers alerts until ctx ends; then it
// returns nil. Only one replica is active (a Postgres advisory lock); the
// others wait to take over.
func Run(ctx context.Context, cfg Config, deps Deps) error {
	cfg = cfg.WithDefaults()
	if cfg.RulesFile != "" && cfg.Rules.Profiles == nil && cfg.Rules.OLTs == nil {
		r, err := LoadRules(cfg.RulesFile)
		if err != nil {
			return err
		}
		r.Global = cfg.Rules.Global
		cfg.Rules = r
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("alerter config: %w", err)
	}
	if deps.JS == nil || deps.DB == nil {
		return errors.New("alerter: JetStream and database are required")
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Client == nil {
		deps.Client = &http.Client{Timeout: cfg.Timeout}
	}
	a := &alerter{cfg: cfg, deps: deps, wake: make(chan struct{}, 1), dwake: make(chan struct{}, 1)}
	m, err := newMetrics(deps.Registry, a)
	if err != nil {
		return err
	}
	a.m = m

	conn, err := a.becomeLeader(ctx)
	if err != nil || conn == nil {
		return err
	}
	defer conn.Release()
	deps.Log.Info().Msg("alerter active")

	eng, err := load(ctx, deps.DB, cfg.Rules, cfg.Limits)
	if err != nil {
		return err
	}
	a.eng = eng

	router, err := jsrouter.New(deps.JS, jsrouter.Config{
		Source:           cfg.Source,
		SubscriberConfig: jsrouter.SubscriberConfig{NackDelay: cfg.NackDelay, FetchWait: cfg.FetchWait},
		Log:              deps.Log,
		Registry:         deps.Registry,
		Health:           projection.Health(deps.DB),
	})
	if err != nil {
		return fmt.Errorf("alerter: %w", err)
	}
	router.Handle(streams.StreamOLT, streams.ConsumerAlerterOLT, a.handler(a.onAvailability))
	router.Handle(streams.StreamExec, streams.ConsumerAlerterExec, a.handler(a.onExec))
	router.Handle(streams.StreamNotify, streams.ConsumerAlerterNotify, a.handler(a.onNotify))
	router.Handle(streams.StreamConfig, streams.ConsumerAlerterConfig, a.handler(a.onConfig))
	router.Handle(streams.StreamAlert, streams.ConsumerAlerterAcks, a.handler(a.onAck))
	// The OLT's health readings (health.go).
	router.Handle(streams.StreamOLT, streams.ConsumerAlerterHealth, a.handler(a.onHealth))

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return router.Run(gctx) })
	g.Go(func() error { return a.onuLoop(gctx) })
	g.Go(func() error { return a.alertsLoop(gctx) })
	g.Go(func() error { return a.watchLeader(gctx, conn) })
	g.Go(func() error { return a.tickLoop(gctx) })
	g.Go(func() error { return a.publishLoop(gctx) })
	g.Go(func() error { return a.deliverLoop(gctx) })
	if len(cfg.AlertmanagerURLs) > 0 {
		g.Go(func() error { return a.resendLoop(gctx) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("alerter: %w", err)
	}
	return nil
}

// becomeLeader waits for the advisory lock on a connection of its own
// (nil, nil when ctx ends first).
func (a *alerter) becomeLeader(ctx context.Context) (*pgxpool.Conn, error) {
	logged := false
	for {
		conn, err := a.deps.DB.Acquire(ctx)
		if err == nil {
			var ok bool
			if err = conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(leaderLock)).Scan(&ok); err == nil && ok {
				return conn, nil
			}
			conn.Release()
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if err != nil {
			a.deps.Log.Warn().Err(err).Msg("alerter leader lock")
		} else if !logged {
			a.deps.Log.Info().Msg("another alerter is active: standing by")
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(a.cfg.LeaderRetry):
		}
	}
}

// watchLeader ends the run when the lock's connection is lost (another
// replica may then take over).
func (a *alerter) watchLeader(ctx context.Context, conn *pgxpool.Conn) error {
	t := time.NewTicker(a.cfg.LeaderRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// Unlock for a quick take-over (closing the connection would too).
			uctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, int64(leaderLock))
			cancel()
			return nil
		case <-t.C:
			if err := conn.Ping(ctx); err != nil && ctx.Err() == nil {
				return fmt.Errorf("lost the leader lock's connection: %w", err)
			}
		}
	}
}

// handler applies one message to the engine and persists the result with
// the consumer's checkpoint in one transaction; a failed transaction
// reloads the engine from the database, so memory never runs ahead of it.
func (a *alerter) handler(eval func(m jsrouter.Msg) (func(*Engine), error)) jsrouter.Handler {
	return func(ctx context.Context, m jsrouter.Msg) error {
		start := time.Now()
		fn, err := eval(m)
		if err != nil {
			return err // malformed: dead-lettered by the router
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		var out []Transition
		applied, err := projection.Apply(ctx, a.deps.DB, m.Consumer, m.Seq, func(ctx context.Context, tx pgx.Tx) error {
			if fn == nil {
				return nil
			}
			fn(a.eng)
			var dirty map[stateID]bool
			dirty, out = a.eng.Take()
			return a.eng.persist(ctx, tx, dirty, out, a.cfg.Source, len(a.cfg.AlertmanagerURLs) > 0)
		})
		if err != nil {
			a.reload(ctx)
			return fmt.Errorf("apply %s seq %d: %w", m.Consumer, m.Seq, err)
		}
		if !applied {
			m.SetOutcome(jsrouter.OutcomeSkipped)
			return nil
		}
		a.m.evalSeconds.Observe(time.Since(start).Seconds())
		a.transitions(out)
		return nil
	}
}

func (a *alerter) reload(ctx context.Context) {
	eng, err := load(ctx, a.deps.DB, a.cfg.Rules, a.cfg.Limits)
	if err != nil {
		a.deps.Log.Warn().Err(err).Msg("reload alerter state")
		a.eng.Take() // keep going from memory; the next failure retries
		return
	}
	a.eng = eng
}

func (a *alerter) transitions(out []Transition) {
	if len(out) == 0 {
		return
	}
	for _, t := range out {
		state := t.Alert.State
		if t.Update {
			state = streams.AlertStateUpdated
		}
		a.m.transitions.WithLabelValues(t.Alert.Rule, state).Inc()
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// decode helpers: each returns what to do to the engine, nil to ignore.

func (a *alerter) onAvailability(m jsrouter.Msg) (func(*Engine), error) {
	_, ev, err := streams.DecodeOn[streams.OLTAvailability](m.Subject, m.Data)
	if err != nil {
		return nil, err
	}
	if !streams.ValidAvailability(ev.State) {
		return nil, fmt.Errorf("%w: availability state %q", streams.ErrMalformed, ev.State)
	}
	return func(e *Engine) { e.OnAvailability(ev) }, nil
}

// execOutcome is what the alerter reads of an execution's end: the cause
// is read tolerantly (it is new in execution.failed).
type execOutcome struct {
	OLTID string `json:"olt_id"`
	Error string `json:"error"`
	Cause string `json:"cause"`
	Kind  string `json:"kind"`
}

func (a *alerter) onExec(m jsrouter.Msg) (func(*Engine), error) {
	env, err := streams.DecodeEnvelope(m.Data)
	if err != nil {
		return nil, err
	}
	var succeeded bool
	switch env.Type {
	case streams.TypeExecutionSucceeded:
		succeeded = true
	case streams.TypeExecutionFailed:
	default:
		return nil, nil
	}
	if err := streams.CheckSubject(m.Subject, env); err != nil {
		return nil, err
	}
	var x execOutcome
	if err := json.Unmarshal(env.Data, &x); err != nil || x.OLTID == "" {
		return nil, fmt.Errorf("%w: %s without olt_id", streams.ErrMalformed, env.Type)
	}
	if x.Kind == streams.KindHealth {
		// The OLT's health job says nothing of its ONU tables: its
		// readings feed the health rules (health.go), and its success
		// must not resolve an empty read of the ONU jobs.
		return nil, nil
	}
	at := env.Time
	return func(e *Engine) { e.OnExecution(x.OLTID, succeeded, bounded(x.Cause, 64), x.Error, at) }, nil
}

func (a *alerter) onNotify(m jsrouter.Msg) (func(*Engine), error) {
	_, n, err := streams.DecodeOn[streams.Notification](m.Subject, m.Data)
	if err != nil {
		return nil, err
	}
	ttl := a.cfg.QuotaAlertTTL
	return func(e *Engine) { e.OnNotification(n, ttl) }, nil
}

func (a *alerter) onConfig(m jsrouter.Msg) (func(*Engine), error) {
	env, err := streams.DecodeEnvelope(m.Data)
	if err != nil {
		return nil, err
	}
	switch env.Type {
	case streams.TypeOLTUpserted:
		_, u, err := streams.DecodeOn[streams.OLTUpserted](m.Subject, m.Data)
		if err != nil {
			return nil, err
		}
		// The API's field rules (package configrules): a broken event is
		// dead-lettered, as by every consumer of configuration events.
		if err := configrules.OLT(u); err != nil {
			return nil, fmt.Errorf("%w: %s %.64q refused: %v", streams.ErrMalformed, env.Type, u.ID, err)
		}
		return func(e *Engine) { e.OnOLT(u, env.Time) }, nil
	case streams.TypeOLTAutoEnabled:
		// The availability service re-enabled an auto-disabled OLT.
		_, u, err := streams.DecodeOn[streams.OLTAutoEnabled](m.Subject, m.Data)
		if err != nil {
			return nil, err
		}
		return func(e *Engine) { e.OnOLTAutoEnabled(u.ID, env.Time) }, nil
	case streams.TypeOLTDeleted:
		_, d, err := streams.DecodeOn[streams.OLTDeleted](m.Subject, m.Data)
		if err != nil {
			return nil, err
		}
		return func(e *Engine) { e.OnOLTDeleted(d.ID, env.Time) }, nil
	case streams.TypeJobUpserted:
		_, j, err := streams.DecodeOn[streams.JobUpserted](m.Subject, m.Data)
		if err != nil {
			return nil, err
		}
		return func(e *Engine) { e.OnJob(j) }, nil
	case streams.TypeJobDeleted:
		_, j, err := streams.DecodeOn[streams.JobDeleted](m.Subject, m.Data)
		if err != nil {
			return nil, err
		}
		return func(e *Engine) { e.OnJobDeleted(j.ID) }, nil
	case streams.TypeJobOLTAssigned:
		_, j, err := streams.DecodeOn[streams.JobOLTAssigned](m.Subject, m.Data)
		if err != nil {
			return nil, err
		}
		return func(e *Engine) { e.OnAssignment(j.JobID, j.OLTID, j.Enabled) }, nil
	case streams.TypeJobOLTUnassigned:
		_, j, err := streams.DecodeOn[streams.JobOLTUnassigned](m.Subject, m.Data)
		if err != nil {
			return nil, err
		}
		return func(e *Engine) { e.OnAssignment(j.JobID, j.OLTID, false) }, nil
	case streams.TypeBrandUpserted:
		_, b, err := streams.DecodeOn[streams.BrandUpserted](m.Subject, m.Data)
		if err != nil {
			return nil, err
		}
		if err := configrules.Brand(b); err != nil {
			return nil, fmt.Errorf("%w: %s %.64q refused: %v", streams.ErrMalformed, env.Type, b.ID, err)
		}
		return func(e *Engine) { e.OnBrand(b.ID, b.Profile) }, nil
	case streams.TypeSilenceUpserted:
		_, s, err := streams.DecodeOn[streams.SilenceUpserted](m.Subject, m.Data)
		if err != nil {
			return nil, err
		}
		if s.ID == "" || !s.EndsAt.After(s.StartsAt) {
			return nil, fmt.Errorf("%w: silence without id or with ends_at not after starts_at", streams.ErrMalformed)
		}
		return func(e *Engine) { e.OnSilence(s.ID, &s) }, nil
	case streams.TypeSilenceDeleted:
		_, s, err := streams.DecodeOn[streams.SilenceDeleted](m.Subject, m.Data)
		if err != nil {
			return nil, err
		}
		return func(e *Engine) { e.OnSilence(s.ID, nil) }, nil
	}
	return nil, nil
}

func (a *alerter) onAck(m jsrouter.Msg) (func(*Engine), error) {
	_, ack, err := streams.DecodeOn[streams.AlertAcknowledged](m.Subject, m.Data)
	if err != nil {
		return nil, err
	}
	return func(e *Engine) { e.OnAck(ack) }, nil
}

// tickLoop runs the engine's timed evaluations, each in a transaction of
// its own.
func (a *alerter) tickLoop(ctx context.Context) error {
	t := time.NewTicker(a.cfg.Tick)
	defer t.Stop()
	nextCleanup := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if time.Now().After(nextCleanup) {
			nextCleanup = time.Now().Add(time.Hour)
			a.cleanup(ctx)
		}
		if err := a.tick(ctx); err != nil && ctx.Err() == nil {
			a.deps.Log.Warn().Err(err).Msg("alerter tick")
		}
	}
}

// cleanup deletes outbox rows published more than OutboxRetention ago
// whose deliveries all ended (FACHO_ALERT and the alerts table keep the
// events).
func (a *alerter) cleanup(ctx context.Context) {
	tag, err := a.deps.DB.Exec(ctx, `DELETE FROM alerter_outbox o WHERE published_at < now() - $1::interval
		AND NOT EXISTS (SELECT 1 FROM alerter_deliveries d WHERE d.msg_id = o.msg_id AND d.status = 'pending')`,
		fmt.Sprintf("%d seconds", int64(a.cfg.OutboxRetention.Seconds())))
	if err != nil {
		if ctx.Err() == nil {
			a.deps.Log.Warn().Err(err).Msg("alert outbox cleanup")
		}
		return
	}
	if n := tag.RowsAffected(); n > 0 {
		a.deps.Log.Info().Int64("deleted", n).Msg("alert outbox cleanup")
	}
}

func (a *alerter) tick(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.eng.Tick(a.deps.Now())
	dirty, out := a.eng.Take()
	if len(dirty) == 0 && len(out) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, a.deps.DB, func(tx pgx.Tx) error {
		return a.eng.persist(ctx, tx, dirty, out, a.cfg.Source, len(a.cfg.AlertmanagerURLs) > 0)
	})
	if err != nil {
		a.reload(ctx)
		return err
	}
	a.transitions(out)
	return nil
}

// publishLoop publishes the outbox in order, each event with Nats-Msg-Id
// alert:<id>:<state>, so a re-publish after a crash is stored once.
func (a *alerter) publishLoop(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	cur := &outboxCursor{rescan: outboxRescan, now: time.Now}
	for {
		if err := a.publishPending(ctx, cur); err != nil && ctx.Err() == nil {
			a.deps.Log.Warn().Err(err).Msg("publish alerts")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-a.wake:
		}
	}
}

// outboxRescan is how often the publisher reads the whole outbox instead of
// the rows after its cursor.
const outboxRescan = time.Minute

// outboxCursor is where the publisher's next read of the outbox starts.
//
// Why: every row published stays in the partial index of unpublished rows
// as a dead entry until vacuum removes it, and while any transaction older
// than the update is open (the projector's, under load) not even a scan
// can mark it dead. Reading from the start then walked every row published
// since the last vacuum, heap visit included, at each read: at 3,000 OLTs
// the outbox read was Postgres's third costliest statement (115 ms and
// 8,000 blocks a call). After its cursor, a read starts at the first row it
// has not published.
//
// The active replica writes the outbox one transaction at a time, under its
// engine's lock, so rows commit in seq order and none appears behind the
// cursor. A straggler of a former leader (its last transaction committing
// after it lost the lock) could: every rescan period, and after any
// failure, the read starts from the beginning again.
type outboxCursor struct {
	after  int64         // every row up to this seq is published (0: read from the start)
	full   time.Time     // when the last read from the start began
	rescan time.Duration // how often to read from the start
	now    func() time.Time
}

// from is the seq the next read starts after.
func (c *outboxCursor) from() int64 {
	if now := c.now(); c.after == 0 || now.Sub(c.full) >= c.rescan {
		c.after, c.full = 0, now
	}
	return c.after
}

func (a *alerter) publishPending(ctx context.Context, cur *outboxCursor) (err error) {
	defer func() {
		if err != nil {
			cur.after = 0 // whatever was left unpublished is read again
		}
	}()
	for {
		rows, err := a.deps.DB.Query(ctx, `SELECT seq, msg_id, subject, payload FROM alerter_outbox
			WHERE published_at IS NULL AND seq > $1 ORDER BY seq LIMIT 500`, cur.from())
		if err != nil {
			return fmt.Errorf("read alert outbox: %w", err)
		}
		type row struct {
			seq            int64
			msgID, subject string
			payload        []byte
		}
		rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.seq, &x.msgID, &x.subject, &x.payload)
		})
		if err != nil {
			return fmt.Errorf("read alert outbox: %w", err)
		}
		if len(rs) == 0 {
			return nil
		}
		// Published in order on one connection, acknowledged together,
		// then marked with one statement.
		futures := make([]jetstream.PubAckFuture, 0, len(rs))
		seqs := make([]int64, 0, len(rs))
		for _, r := range rs {
			f, err := a.deps.JS.PublishAsync(r.subject, r.payload, jetstream.WithMsgID(r.msgID))
			if err != nil {
				return fmt.Errorf("publish %s: %w", r.msgID, err)
			}
			futures = append(futures, f)
		}
		timeout := time.After(a.cfg.Timeout)
		for i, f := range futures {
			select {
			case <-f.Ok():
				seqs = append(seqs, rs[i].seq)
			case err := <-f.Err():
				a.markPublished(ctx, seqs)
				return fmt.Errorf("publish %s: %w", rs[i].msgID, err)
			case <-timeout:
				a.markPublished(ctx, seqs)
				return fmt.Errorf("publish %s: no acknowledgement within %s", rs[i].msgID, a.cfg.Timeout)
			case <-ctx.Done():
				return nil
			}
		}
		if err := a.markPublished(ctx, seqs); err != nil {
			return err
		}
		cur.after = rs[len(rs)-1].seq
		a.kickDeliveries()
	}
}

// markPublished records that the outbox rows seqs were stored in
// FACHO_ALERT (a crash before it re-publishes them: the Nats-Msg-Id
// makes that a no-op inside the duplicate window).
func (a *alerter) markPublished(ctx context.Context, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	if _, err := a.deps.DB.Exec(ctx, `UPDATE alerter_outbox SET published_at = now() WHERE seq = ANY ($1)`, seqs); err != nil {
		return fmt.Errorf("mark %d alert events published: %w", len(seqs), err)
	}
	a.m.published.Add(float64(len(seqs)))
	return nil
}
