package servicemain

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// drainWait bounds the wait for a drained connection to close; nats.go
// closes it itself after its own drain timeout (30s).
const drainWait = 40 * time.Second

// natsConn is the service's NATS connection.
type natsConn struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	closed chan struct{}
}

// connectNATS connects as identity (reconnecting forever once
// connected) and provisions the streams, consumers and KV buckets with
// c.Streams, or checks they exist when the service does not provision.
func connectNATS(ctx context.Context, c Common, name, identity string, log zerolog.Logger) (*natsConn, error) {
	closed := make(chan struct{})
	// A request the server refuses is never answered: while provisioning,
	// a permissions violation ends the wait at once, with its reason.
	var refused atomic.Pointer[context.CancelCauseFunc]
	auth, err := c.NATS.Options(identity)
	if err != nil {
		return nil, fmt.Errorf("connect to nats: %w", err)
	}
	opts := append(auth, nats.Name(name), nats.MaxReconnects(-1),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		// Permission violations and slow consumers arrive here; they
		// name a subject, never a credential.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if f := refused.Load(); f != nil && errors.Is(err, nats.ErrPermissionViolation) {
				(*f)(err)
			}
			ev := log.Error().Err(err)
			if sub != nil {
				ev = ev.Str(telemetry.KeySubject, sub.Subject)
			}
			ev.Msg("nats async error")
		}))
	// The URL is not quoted in errors: it may hold credentials.
	nc, err := nats.Connect(c.NATSURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats: %w", err)
	}
	conn := &natsConn{nc: nc, closed: closed}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	conn.js = js
	cctx, cancelCause := context.WithCancelCause(ctx)
	refused.Store(&cancelCause)
	pctx, cancel := context.WithTimeout(cctx, provisionTimeout)
	if c.provisions() {
		err = streams.Provision(pctx, js, c.Streams)
		if err != nil {
			err = fmt.Errorf("provision streams: %w", err)
		}
	} else {
		err = checkProvisioned(pctx, js, c.Streams)
	}
	cancel()
	refused.Store(nil)
	if cause := context.Cause(cctx); err != nil && errors.Is(cause, nats.ErrPermissionViolation) {
		err = fmt.Errorf("%w: %w (only the admin identity provisions: facho streams provision)", err, cause)
	}
	cancelCause(nil)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return conn, nil
}

// provisions reports whether the service creates or updates the streams.
func (c Common) provisions() bool {
	switch c.Provision {
	case ProvisionYes:
		return true
	case ProvisionNo:
		return false
	}
	return !c.NATS.Authenticated()
}

// checkProvisioned checks that every stream, durable consumer and KV
// bucket exists, with read-only requests every identity may make.
func checkProvisioned(ctx context.Context, js jetstream.JetStream, o streams.Options) error {
	const hint = "provision them with the admin identity: facho streams provision"
	for _, sc := range streams.StreamConfigs(o) {
		if _, err := js.Stream(ctx, sc.Name); err != nil {
			return fmt.Errorf("stream %s: %w (%s)", sc.Name, err, hint)
		}
	}
	for _, cd := range streams.ConsumerConfigs(o) {
		if _, err := js.Consumer(ctx, cd.Stream, cd.Config.Durable); err != nil {
			return fmt.Errorf("consumer %s/%s: %w (%s)", cd.Stream, cd.Config.Durable, err, hint)
		}
	}
	if _, err := js.KeyValue(ctx, streams.BucketLeases); err != nil {
		return fmt.Errorf("kv bucket %s: %w (%s)", streams.BucketLeases, err, hint)
	}
	return nil
}

// check is the nats health check.
func (c *natsConn) check(context.Context) error {
	if !c.nc.IsConnected() {
		return fmt.Errorf("nats %s", c.nc.Status())
	}
	return nil
}

// JetStream health: how long one probe may take, how long a /healthz
// request waits for it (the other checks share the request's 2 s), and how
// long its result is served before the next probe (a /healthz scraped
// every second costs one request every few seconds).
const (
	jsHealthTimeout = 2 * time.Second
	jsHealthWait    = time.Second
	jsHealthTTL     = 5 * time.Second
)

// jsHealth checks that JetStream answers, not only that the connection is
// up: the account info (refused or unanswered without a meta leader, that
// is without quorum, or with JetStream off) and the info of the
// configuration stream every service depends on (unanswered while the
// stream has no leader). A probe runs in its own goroutine, bounded by
// timeout; its result is cached for ttl; a check waits at most wait for a
// probe and otherwise returns the previous result.
type jsHealth struct {
	js                 jetstream.JetStream
	timeout, wait, ttl time.Duration
	now                func() time.Time

	mu      sync.Mutex
	at      time.Time // of the last result; zero before the first
	err     error
	probing chan struct{} // closed when the probe in flight ends
}

func newJSHealth(js jetstream.JetStream) *jsHealth {
	return &jsHealth{js: js, timeout: jsHealthTimeout, wait: jsHealthWait, ttl: jsHealthTTL, now: time.Now}
}

func (h *jsHealth) check(ctx context.Context) error {
	h.mu.Lock()
	if !h.at.IsZero() && h.now().Sub(h.at) < h.ttl {
		err := h.err
		h.mu.Unlock()
		return err
	}
	if h.probing == nil {
		h.probing = make(chan struct{})
		go h.probe(h.probing)
	}
	done := h.probing
	h.mu.Unlock()

	timer := time.NewTimer(h.wait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	case <-ctx.Done():
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at.IsZero() {
		return errors.New("jetstream: no answer yet")
	}
	return h.err
}

// probe asks JetStream and records the result.
func (h *jsHealth) probe(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	var err error
	if _, aerr := h.js.AccountInfo(ctx); aerr != nil {
		err = fmt.Errorf("jetstream account info: %w", aerr)
	} else if _, serr := h.js.Stream(ctx, streams.StreamConfig); serr != nil {
		err = fmt.Errorf("jetstream stream %s info: %w", streams.StreamConfig, serr)
	}
	h.mu.Lock()
	h.at, h.err, h.probing = h.now(), err, nil
	h.mu.Unlock()
	close(done)
}

// drain flushes what is still buffered and closes the connection, waiting
// for it so that nothing published is lost at exit.
func (c *natsConn) drain(log zerolog.Logger) {
	if err := c.nc.Drain(); err != nil {
		c.nc.Close()
		return
	}
	select {
	case <-c.closed:
	case <-time.After(drainWait):
		log.Warn().Msg("nats connection not closed after drain; closing")
		c.nc.Close()
	}
}
