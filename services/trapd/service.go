package trapd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/pkg/secret"
)

// Deps are the receiver's collaborators.
type Deps struct {
	JS       jetstream.JetStream
	Box      *secret.Box // opens the OLTs' sealed communities
	Log      zerolog.Logger
	Registry prometheus.Registerer
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Listening, when set, is called with the socket's address once it
	// is open (tests, `facho dev`'s banner).
	Listening func(addr net.Addr)
}

// Run receives traps until ctx ends; then it returns nil.
func Run(ctx context.Context, cfg Config, deps Deps) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("trapd config: %w", err)
	}
	if deps.JS == nil || deps.Box == nil {
		return errors.New("trapd: JetStream and the secret box are required")
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	cat, err := profiles.Load(cfg.ProfilesDir)
	if err != nil {
		return fmt.Errorf("trapd: %w", err)
	}
	lim := newLimiter(cfg.Rate, cfg.Burst, cfg.MaxSources)
	m, err := newMetrics(deps.Registry, func() float64 { return float64(lim.sources()) })
	if err != nil {
		return err
	}
	log := deps.Log.With().Str("instance", cfg.Instance).Logger()
	dir := newDirectory(deps.Box, cat, log)
	dir.onBuild = func(n int) { m.olts.Set(float64(n)) }

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan struct{})
	dirDone := make(chan error, 1)
	go func() { dirDone <- dir.follow(ctx, deps.JS, ready) }()
	select {
	case <-ctx.Done():
		return nil
	case err := <-dirDone:
		return err
	case <-ready:
	}

	conn, err := listen(cfg.Addr, cfg.ReadBuffer)
	if err != nil {
		return err
	}
	log.Info().Str("addr", conn.LocalAddr().String()).Int("readers", cfg.Readers).Msg("receiving traps")
	if deps.Listening != nil {
		deps.Listening(conn.LocalAddr())
	}
	pub := &publisher{js: deps.JS, source: cfg.Source, timeout: cfg.PublishTimeout, log: log, m: m,
		pending: make(chan pendingTrap, cfg.MaxPending)}
	r := &receiver{cfg: cfg, dir: dir, lim: lim, logs: newLogThrottle(cfg.LogEvery), log: log, m: m, pub: pub, now: deps.Now}
	settled := make(chan struct{})
	go func() { defer close(settled); pub.settle(ctx) }()
	r.serve(ctx, conn)
	<-settled
	if err := <-dirDone; err != nil {
		return err
	}
	log.Info().Msg("trap receiver stopped")
	return nil
}

// listen opens the UDP socket with a large receive buffer: a burst is
// queued by the kernel while the readers catch up.
func listen(addr string, readBuffer int) (*net.UDPConn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("trapd: address %q: %w", addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("trapd: listen on %s: %w", addr, err)
	}
	if readBuffer > 0 {
		_ = conn.SetReadBuffer(readBuffer)
	}
	return conn, nil
}
