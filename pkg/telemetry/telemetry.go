// Package telemetry gives every service the same logger, /metrics, /healthz
// and graceful HTTP shutdown.
package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Fixed log keys, so log queries work across services.
const (
	KeyService   = "service"
	KeyOLT       = "olt_id"
	KeyJob       = "job_id"
	KeyExecution = "execution_id"
	KeyConsumer  = "consumer"
	KeyStreamSeq = "stream_seq"
	KeySubject   = "subject"
	KeyPoller    = "poller_id"
	KeyAddr      = "addr"
)

// NewLogger returns a JSON logger tagged with the service name.
func NewLogger(w io.Writer, service string, level zerolog.Level) zerolog.Logger {
	return zerolog.New(w).Level(level).With().Timestamp().Str(KeyService, service).Logger()
}

// NewRegistry returns a registry with the Go and process collectors, one per
// service (never the global one).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Health collects named readiness checks.
type Health struct {
	mu     sync.Mutex
	checks map[string]func(context.Context) error
}

// NewHealth returns an empty Health.
func NewHealth() *Health { return &Health{checks: map[string]func(context.Context) error{}} }

// Add registers a check.
func (h *Health) Add(name string, check func(context.Context) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checks[name] = check
}

// ServeHTTP answers 200 when every check passes, 503 otherwise, with a
// JSON body naming each check's result.
func (h *Health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	h.mu.Lock()
	checks := make(map[string]func(context.Context) error, len(h.checks))
	for k, v := range h.checks {
		checks[k] = v
	}
	h.mu.Unlock()
	res := map[string]string{}
	status := http.StatusOK
	for name, c := range checks {
		if err := c(ctx); err != nil {
			res[name] = err.Error()
			status = http.StatusServiceUnavailable
		} else {
			res[name] = "ok"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": http.StatusText(status), "checks": res})
}

// Mux returns a mux with /metrics and /healthz mounted.
func Mux(reg *prometheus.Registry, health *Health) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.Handle("GET /healthz", health)
	return mux
}

// Serve runs an HTTP server on addr until ctx ends, then shuts it down
// gracefully. ready, if not nil, receives the bound address.
func Serve(ctx context.Context, addr string, h http.Handler, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	// Timeouts everywhere: a slow or idle client cannot hold a connection.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}
	// Long-lived responses (server-sent events) end when the shutdown
	// begins (UntilShutdown), so it does not wait on their clients.
	stopping := make(chan struct{})
	srv.BaseContext = func(net.Listener) context.Context {
		return context.WithValue(context.Background(), shutdownKey{}, (<-chan struct{})(stopping))
	}
	srv.RegisterOnShutdown(func() { close(stopping) })
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown %s: %w", addr, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", addr, err)
	}
	return nil
}

// shutdownKey holds, in a request's context, the channel Serve closes when
// its shutdown begins.
type shutdownKey struct{}

// UntilShutdown returns a context that ends with ctx, or as soon as the
// server serving the request (Serve) begins to shut down. A handler that
// streams for as long as its client listens (server-sent events) uses it,
// so a shutdown ends the stream at once instead of waiting for the client
// to leave. Outside Serve it is ctx with a cancel.
func UntilShutdown(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(ctx)
	stopping, ok := ctx.Value(shutdownKey{}).(<-chan struct{})
	if !ok {
		return out, cancel
	}
	go func() {
		select {
		case <-stopping:
			cancel()
		case <-out.Done():
		}
	}()
	return out, cancel
}
