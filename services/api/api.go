// Package api is Facho's HTTP JSON API for people and integrations:
// configuration resources that become events on FACHO_CONFIG (validated,
// published, answered at once: never blocked on SNMP work) and queries
// over the Postgres read models, and the operators' console (package
// console, served at /). Every /api/ route needs a bearer token (a user's
// API token or one of FACHO_API_TOKENS, which act as an admin) or a console
// session; each route needs a role (package auth). The routes and their
// OpenAPI description live side by side (routes in api.go, their
// documentation in openapi.go's routeDocs).
package api

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/services/api/auth"
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
	cfg      Config
	deps     Deps
	config   jetstream.Stream
	schedule jetstream.KeyValue
	leader   jetstream.KeyValue
	m        *metrics
	// health checks of /healthz: they answer "database unavailable" and
	// "nats unavailable", the detail goes to the log.
	dbCheck, natsCheck func(context.Context) error
	// users are the people of the console and the API.
	users *auth.Store
	// throttle counts failed logins and bearer tokens (429 past the
	// limits).
	throttle *auth.Throttle
	// mux records every pattern registered (the OpenAPI and security
	// tests walk them); roles holds the role each one needs ("" public).
	mux      *recordingMux
	roles    map[string]auth.Role
	docsTmpl *template.Template
	// profiles is the vendor catalogue (built-in plus cfg.ProfilesDir).
	profiles *profiles.Catalogue
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
	_, h, err := newServer(ctx, cfg, deps)
	return h, err
}

func newServer(ctx context.Context, cfg Config, deps Deps) (*server, http.Handler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("api config: %w", err)
	}
	if deps.JS == nil || deps.DB == nil || deps.Box == nil {
		return nil, nil, errors.New("api: JetStream, database and secret box are required")
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
		return nil, nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.PublishTimeout)
	defer cancel()
	stream, err := deps.JS.Stream(sctx, streams.StreamConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("api: open stream %s: %w", streams.StreamConfig, err)
	}
	s := &server{cfg: cfg, deps: deps, config: stream, m: m, users: &auth.Store{DB: deps.DB, Now: deps.Now},
		throttle: auth.NewThrottle(cfg.Throttle, deps.Now)}
	if err := deps.Registry.Register(s.throttle.Collector()); err != nil {
		return nil, nil, fmt.Errorf("register api metrics: %w", err)
	}
	if s.profiles, err = profiles.Load(cfg.ProfilesDir); err != nil {
		return nil, nil, fmt.Errorf("api: %w", err)
	}
	if err := s.registerPollerMetrics(); err != nil {
		return nil, nil, err
	}
	if s.docsTmpl, err = template.New("docs").Parse(apiDocsHTML); err != nil {
		return nil, nil, fmt.Errorf("api docs template: %w", err)
	}
	if s.schedule, err = deps.JS.KeyValue(sctx, streams.BucketSchedule); err != nil {
		return nil, nil, fmt.Errorf("api: open kv %s: %w", streams.BucketSchedule, err)
	}
	if s.leader, err = deps.JS.KeyValue(sctx, streams.BucketPlannerLeader); err != nil {
		return nil, nil, fmt.Errorf("api: open kv %s: %w", streams.BucketPlannerLeader, err)
	}
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
	h, err := s.routes()
	if err != nil {
		return nil, nil, err
	}
	return s, h, nil
}

func (s *server) routes() (http.Handler, error) {
	mux := &recordingMux{ServeMux: http.NewServeMux()}
	s.mux, s.roles = mux, map[string]auth.Role{}
	// api registers a JSON route: authenticated (bearer token or console
	// session), authorized by the role its entry in routeDocs names (by
	// default GET needs a viewer, anything else an admin). Every route
	// needs an entry in routeDocs (openapi.go): the OpenAPI test fails
	// without one.
	api := func(pattern string, h func(http.ResponseWriter, *http.Request) *apiError) {
		s.roles[pattern] = routeRole(pattern)
		mux.Handle(pattern, s.instrument(s.authenticate(s.authorize(pattern, s.handle(h)))))
	}
	api("GET /api/v1/me", s.me)
	api("GET /api/v1/openapi.json", s.openAPI)

	api("GET /api/v1/vendor-profiles", s.listVendorProfiles)
	api("GET /api/v1/vendor-profiles/{id}", s.getVendorProfile)
	// Scheduling (issue 7): workflows, the persisted schedule, the queue,
	// manual runs.
	api("GET /api/v1/workflows", s.listWorkflows)
	api("POST /api/v1/workflows", s.createWorkflow)
	api("GET /api/v1/workflows/{id}", s.getWorkflow)
	api("PUT /api/v1/workflows/{id}", s.updateWorkflow)
	api("POST /api/v1/workflows/{id}/enable", s.enableWorkflow)
	api("POST /api/v1/workflows/{id}/disable", s.enableWorkflow)
	api("DELETE /api/v1/workflows/{id}", s.deleteWorkflow)
	api("GET /api/v1/olts/{id}/nodes", s.listOLTNodes)
	api("GET /api/v1/nodes/{node_id}", s.getNode)
	api("GET /api/v1/pollers/queue/{$}", s.getQueue)
	api("POST /api/v1/pollers/nodes/{node_id}/run/{$}", s.runNode)

	api("GET /api/v1/brands", s.listBrands)
	api("POST /api/v1/brands", s.createBrand)
	api("GET /api/v1/brands/{id}", s.getBrand)
	api("PUT /api/v1/brands/{id}", s.updateBrand)
	api("PATCH /api/v1/brands/{id}", s.updateBrand)
	api("DELETE /api/v1/brands/{id}", s.deleteBrand)

	api("GET /api/v1/oids", s.listOIDs)
	api("POST /api/v1/oids", s.createOID)
	api("GET /api/v1/oids/{id}", s.getOID)
	api("PUT /api/v1/oids/{id}", s.updateOID)
	api("PATCH /api/v1/oids/{id}", s.updateOID)
	api("DELETE /api/v1/oids/{id}", s.deleteOID)

	api("GET /api/v1/olts", s.listOLTs)
	api("POST /api/v1/olts", s.createOLT)
	api("GET /api/v1/olts/{id}", s.getOLT)
	api("PUT /api/v1/olts/{id}", s.updateOLT)
	api("PATCH /api/v1/olts/{id}", s.updateOLT)
	api("DELETE /api/v1/olts/{id}", s.deleteOLT)
	api("POST /api/v1/olts/{id}/enable", s.enableOLT)
	api("POST /api/v1/olts/{id}/disable", s.enableOLT)
	api("GET /api/v1/olts/{id}/onus", s.listONUs)
	// ONU history (issue 11): one ONU now or at a past time, its changes,
	// and the search by serial across OLTs.
	api("GET /api/v1/olts/{id}/onus/{pon_index}/{onu_id}", s.getONU)
	api("GET /api/v1/olts/{id}/onus/{pon_index}/{onu_id}/history", s.getONUHistory)
	// Charts of a numeric field (history_chart.go): the hourly rollups
	// from 7 days on.
	api("GET /api/v1/olts/{id}/onus/{pon_index}/{onu_id}/chart", s.getONUChart)
	api("GET /api/v1/olts/{id}/pons/{pon_index}/chart", s.getPONChart)
	api("GET /api/v1/onus", s.searchONUs)

	api("GET /api/v1/jobs", s.listJobs)
	api("POST /api/v1/jobs", s.createJob)
	api("GET /api/v1/jobs/{id}", s.getJob)
	api("PUT /api/v1/jobs/{id}", s.updateJob)
	api("PATCH /api/v1/jobs/{id}", s.updateJob)
	api("DELETE /api/v1/jobs/{id}", s.deleteJob)
	api("POST /api/v1/jobs/{id}/enable", s.enableJob)
	api("POST /api/v1/jobs/{id}/disable", s.enableJob)
	api("GET /api/v1/jobs/{id}/olts", s.listJobAssignments)
	api("POST /api/v1/jobs/{id}/olts", s.assign)
	api("GET /api/v1/jobs/{id}/olts/{olt_id}", s.getAssignment)
	api("PUT /api/v1/jobs/{id}/olts/{olt_id}", s.updateAssignment)
	api("PATCH /api/v1/jobs/{id}/olts/{olt_id}", s.updateAssignment)
	api("DELETE /api/v1/jobs/{id}/olts/{olt_id}", s.unassign)
	api("POST /api/v1/jobs/{id}/olts/{olt_id}/enable", s.enableAssignment)
	api("POST /api/v1/jobs/{id}/olts/{olt_id}/disable", s.enableAssignment)
	api("GET /api/v1/assignments", s.listAssignments)

	api("GET /api/v1/executions", s.listExecutions)
	api("GET /api/v1/executions/{id}", s.getExecution)
	api("GET /api/v1/coordinator-logs", s.listCoordinatorLogs)
	api("GET /api/v1/events/stream", s.streamEvents)
	api("GET /api/v1/quotas", s.listQuotas)
	api("GET /api/v1/violations", s.listViolations)
	api("GET /api/v1/violations/{id}", s.getViolation)
	api("GET /api/v1/webhooks", s.listWebhooks)
	api("POST /api/v1/webhooks", s.createWebhook)
	api("GET /api/v1/webhooks/{id}", s.getWebhook)
	api("PUT /api/v1/webhooks/{id}", s.updateWebhook)
	api("PATCH /api/v1/webhooks/{id}", s.updateWebhook)
	api("DELETE /api/v1/webhooks/{id}", s.deleteWebhook)
	api("GET /api/v1/webhooks/{id}/deliveries", s.listDeliveries)
	api("GET /api/v1/pollers/{$}", s.listPollers)
	api("GET /api/v1/pollers/stats/{$}", s.getPollerStats)

	// Alerts for people: alerts, incidents, acknowledgements, silences,
	// the PON view.
	api("GET /api/v1/alerts", s.listAlerts)
	api("GET /api/v1/alerts/{id}", s.getAlert)
	api("POST /api/v1/alerts/{id}/ack", s.ackAlert)
	api("GET /api/v1/incidents", s.listIncidents)
	api("GET /api/v1/incidents/{id}", s.getIncident)
	api("GET /api/v1/silences", s.listSilences)
	api("POST /api/v1/silences", s.createSilence)
	api("DELETE /api/v1/silences/{id}", s.deleteSilence)
	api("GET /api/v1/olts/{id}/pons", s.listPONs)
	api("GET /api/v1/olts/{id}/health", s.getOLTHealth)
	// The OLT's last traps (traps.go).
	api("GET /api/v1/olts/{id}/traps", s.listTraps)

	api("GET /api/v1/users", s.listUsers)
	api("POST /api/v1/users", s.createUser)
	api("GET /api/v1/users/{id}", s.getUser)
	api("PATCH /api/v1/users/{id}", s.updateUser)
	api("DELETE /api/v1/users/{id}", s.deleteUser)
	api("GET /api/v1/tokens", s.listTokens)
	api("POST /api/v1/tokens", s.createToken)
	api("DELETE /api/v1/tokens/{id}", s.revokeToken)

	// Everything else under /api/ is a JSON 404 (after authentication, so
	// the API's shape is not probed anonymously).
	api("/api/", func(http.ResponseWriter, *http.Request) *apiError { return notFound("no such resource") })

	s.roles["GET /api/docs"] = auth.Viewer
	mux.Handle("GET /api/docs", s.instrument(s.authenticate(s.authorize("GET /api/docs", http.HandlerFunc(s.apiDocs)))))
	s.roles["GET /healthz"] = "" // public
	mux.Handle("GET /healthz", s.instrument(http.HandlerFunc(s.healthz)))
	if s.deps.Gatherer != nil {
		// Not anonymous on the public port: a viewer's token (Prometheus'
		// bearer_token) or the metrics listener of the service.
		s.roles["GET /metrics"] = auth.Viewer
		mux.Handle("GET /metrics", s.authenticate(s.authorize("GET /metrics", promhttp.HandlerFor(s.deps.Gatherer, promhttp.HandlerOpts{}))))
	}
	// The console: HTML pages at / (package console).
	if err := s.registerConsole(mux); err != nil {
		return nil, err
	}
	// Cross-origin unsafe requests (a form posted from another site with
	// the session cookie) are refused before anything else runs.
	return s.secureResponses(http.NewCrossOriginProtection().Handler(mux)), nil
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
	writeJSON(w, status, health{Status: http.StatusText(status), Checks: checks})
}
