// Package api is Facho's HTTP JSON API for people and integrations:
// configuration resources that become events on FACHO_CONFIG (validated,
// published, answered at once: never blocked on SNMP work) and queries
// over the Postgres read models. Every /api/ route needs a bearer token.
package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// Deps are the API's collaborators.
type Deps struct {
	JS       jetstream.JetStream
	DB       *pgxpool.Pool
	Log      zerolog.Logger
	Registry prometheus.Registerer
	// Gatherer serves /metrics; Registry is used when it is also a
	// Gatherer (a *prometheus.Registry).
	Gatherer prometheus.Gatherer
	// Box seals SNMP communities before they leave the handler.
	Box *secret.Box
	// Now is the clock of event envelopes; time.Now when nil.
	Now func() time.Time
	// Ready, when set, receives the bound address.
	Ready func(net.Addr)
}

type server struct {
	cfg    Config
	deps   Deps
	config jetstream.Stream
	m      *metrics
	// health checks of /healthz: they answer "database unavailable" and
	// "nats unavailable", the detail goes to the log.
	dbCheck, natsCheck func(context.Context) error
}

// Run serves the API on cfg.Addr until ctx is cancelled, then shuts down
// gracefully and returns nil.
func Run(ctx context.Context, cfg Config, deps Deps) error {
	cfg = cfg.WithDefaults()
	h, err := NewHandler(ctx, cfg, deps)
	if err != nil {
		return err
	}
	return telemetry.Serve(ctx, cfg.Addr, h, deps.Ready)
}

// NewHandler builds the API's handler (Run serves it; tests use it with
// httptest).
func NewHandler(ctx context.Context, cfg Config, deps Deps) (http.Handler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("api config: %w", err)
	}
	if deps.JS == nil || deps.DB == nil || deps.Box == nil {
		return nil, errors.New("api: JetStream, database and secret box are required")
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	if deps.Gatherer == nil {
		if g, ok := deps.Registry.(prometheus.Gatherer); ok {
			deps.Gatherer = g
		}
	}
	m, err := newMetrics(deps.Registry)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.PublishTimeout)
	defer cancel()
	stream, err := deps.JS.Stream(sctx, streams.StreamConfig)
	if err != nil {
		return nil, fmt.Errorf("api: open stream %s: %w", streams.StreamConfig, err)
	}
	s := &server{cfg: cfg, deps: deps, config: stream, m: m}
	s.dbCheck = telemetry.PublicCheck(deps.Log, "postgres", "database unavailable", deps.DB.Ping)
	s.natsCheck = telemetry.PublicCheck(deps.Log, "nats", "nats unavailable", func(context.Context) error {
		nc := deps.JS.Conn()
		if nc == nil {
			return errors.New("no nats connection")
		}
		if !nc.IsConnected() {
			return fmt.Errorf("nats connection %s", nc.Status())
		}
		return nil
	})
	return s.routes(), nil
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	api := func(pattern string, h func(http.ResponseWriter, *http.Request) *apiError) {
		mux.Handle(pattern, s.instrument(s.authenticate(s.handle(h))))
	}
	api("POST /api/v1/brands", s.createBrand)
	api("POST /api/v1/oids", s.createOID)
	api("POST /api/v1/olts", s.createOLT)
	api("PUT /api/v1/olts/{id}", s.updateOLT)
	api("DELETE /api/v1/olts/{id}", s.deleteOLT)
	api("POST /api/v1/jobs", s.createJob)
	api("PUT /api/v1/jobs/{id}", s.updateJob)
	api("DELETE /api/v1/jobs/{id}", s.deleteJob)
	api("POST /api/v1/jobs/{id}/olts", s.assign)
	api("DELETE /api/v1/jobs/{id}/olts/{olt_id}", s.unassign)
	api("GET /api/v1/olts", s.listOLTs)
	api("GET /api/v1/olts/{id}/onus", s.listONUs)
	api("GET /api/v1/executions", s.listExecutions)
	api("GET /api/v1/brands", s.listBrands)
	api("GET /api/v1/oids", s.listOIDs)
	api("GET /api/v1/jobs", s.listJobs)
	api("GET /api/v1/coordinator-logs", s.listCoordinatorLogs)
	// Everything else under /api/ is a JSON 404 (after authentication, so
	// the API's shape is not probed anonymously).
	api("/api/", func(http.ResponseWriter, *http.Request) *apiError { return notFound("no such resource") })

	mux.Handle("GET /healthz", s.instrument(http.HandlerFunc(s.healthz)))
	if s.deps.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.deps.Gatherer, promhttp.HandlerOpts{}))
	}
	return mux
}

// handle adapts a handler returning an *apiError.
func (s *server) handle(h func(http.ResponseWriter, *http.Request) *apiError) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			if err.Status >= 500 {
				s.deps.Log.Warn().Str("route", r.Pattern).Str("error", err.Msg).Msg("request failed")
			}
			writeError(w, err)
		}
	})
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{"postgres": "ok", "nats": "ok"}
	status := http.StatusOK
	if err := s.dbCheck(ctx); err != nil {
		checks["postgres"], status = err.Error(), http.StatusServiceUnavailable
	}
	if err := s.natsCheck(ctx); err != nil {
		checks["nats"], status = err.Error(), http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]any{"status": http.StatusText(status), "checks": checks})
}
