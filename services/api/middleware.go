package api

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/services/api/auth"
)

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_api_requests_total", Help: "API requests by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "facho_api_request_duration_seconds", Help: "API request latency by route.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register api metrics: %w", err)
		}
	}
	return m, nil
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

// Unwrap lets http.ResponseController reach the connection (Flush and
// write deadlines of the event stream).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Flush passes a flush through (server-sent events).
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// instrument counts requests by route pattern (never by raw path: ids
// would explode the label set) and code, and times them.
func (s *server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		s.m.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
		s.m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

// SessionCookie names the console's session cookie.
const SessionCookie = "facho_session"

// CSRFHeader carries a session's CSRF token on unsafe requests made with
// the session cookie (forms send it as the field "csrf").
const CSRFHeader = "X-CSRF-Token"

// authenticate finds who makes the request: a principal already in the
// context (the console calling the API in-process), a bearer token (one of
// Config.Tokens: an admin; or a user's API token), or the console's
// session cookie (unsafe methods then need the session's CSRF token).
// Without one it answers 401.
func (s *server) authenticate(next http.Handler) http.Handler {
	tokens := make([][]byte, len(s.cfg.Tokens))
	for i, t := range s.cfg.Tokens {
		tokens[i] = []byte(t)
	}
	deny := func(w http.ResponseWriter, msg string) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="facho"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": msg})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := auth.FromContext(r.Context()); ok {
			next.ServeHTTP(w, r)
			return
		}
		if given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			ip := s.throttle.ClientIP(r)
			if wait := s.throttle.TokenWait(ip); wait > 0 {
				s.throttle.Count(auth.FailedToken, auth.ReasonRateLimited)
				w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
				writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": "too many requests with unknown bearer tokens from this address: retry later"})
				return
			}
			denyToken := func(w http.ResponseWriter, msg string) {
				s.throttle.Count(auth.FailedToken, auth.ReasonBadCredentials)
				if s.throttle.TokenFailed(ip) {
					s.deps.Log.Warn().Str("client_ip", ip).Int("max_failures", s.throttle.Config().TokenMaxFailures).
						Dur("window", s.throttle.Config().Window).Msg("bearer tokens rate limited: too many unknown tokens")
				}
				deny(w, msg)
			}
			g := strings.TrimSpace(given)
			if g == "" {
				denyToken(w, "missing or invalid bearer token")
				return
			}
			if strings.HasPrefix(g, auth.TokenPrefix) {
				ctx, cancel := s.query(r)
				p, err := s.users.TokenPrincipal(ctx, g)
				cancel()
				if err != nil {
					if !errors.Is(err, auth.ErrNotFound) {
						s.deps.Log.Warn().Err(err).Msg("check api token")
						writeError(w, unavailable("user database"))
						return
					}
					denyToken(w, "missing or invalid bearer token")
					return
				}
				next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
				return
			}
			gb := []byte(g)
			match := 0
			for _, t := range tokens {
				// Check every token so the timing does not say which matched.
				match |= subtle.ConstantTimeCompare(gb, t)
			}
			if match == 1 {
				p := auth.Principal{Username: "token", Role: auth.Admin, Via: auth.ViaStaticToken}
				next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
				return
			}
			denyToken(w, "missing or invalid bearer token")
			return
		}
		p, status := s.sessionPrincipal(r)
		switch status {
		case http.StatusOK:
			next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
		case http.StatusForbidden:
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "missing or wrong CSRF token"})
		case http.StatusServiceUnavailable:
			writeError(w, unavailable("user database"))
		default:
			deny(w, "missing or invalid bearer token")
		}
	})
}

// sessionPrincipal reads the session cookie: 200 with its principal, 401
// without a live session, 403 for an unsafe method without the session's
// CSRF token, 503 when the database does not answer.
func (s *server) sessionPrincipal(r *http.Request) (auth.Principal, int) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return auth.Principal{}, http.StatusUnauthorized
	}
	ctx, cancel := s.query(r)
	p, err := s.users.Session(ctx, c.Value)
	cancel()
	if errors.Is(err, auth.ErrNotFound) {
		return p, http.StatusUnauthorized
	}
	if err != nil {
		s.deps.Log.Warn().Err(err).Msg("check session")
		return p, http.StatusServiceUnavailable
	}
	if !safeMethod(r.Method) {
		given := r.Header.Get(CSRFHeader)
		if given == "" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			given = r.PostFormValue("csrf")
		}
		if subtle.ConstantTimeCompare([]byte(given), []byte(p.CSRF)) != 1 {
			return p, http.StatusForbidden
		}
	}
	return p, http.StatusOK
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// authorize answers 403 unless the principal's role allows the route.
func (s *server) authorize(pattern string, next http.Handler) http.Handler {
	need := routeRole(pattern)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := auth.FromContext(r.Context())
		if !ok {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "not authenticated"})
			return
		}
		if !p.Role.Allows(need) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf("needs the %s role, %s has %s", need, p.Username, p.Role)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// recordingMux is a ServeMux that remembers every pattern registered.
type recordingMux struct {
	*http.ServeMux
	patterns []string
}

func (m *recordingMux) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

func (m *recordingMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// Security headers of every response (the API's JSON, the console's HTML,
// /healthz, /metrics, errors).
const (
	// frameAncestors forbids framing (clickjacking); the console's own
	// policy already carries it, others get it alone.
	frameAncestors = "frame-ancestors 'none'"
	referrerPolicy = "same-origin"
)

// secureResponses sets X-Content-Type-Options: nosniff, Referrer-Policy,
// X-Frame-Options: DENY and a Content-Security-Policy with frame-ancestors
// 'none' on every response, and marks the session cookie Secure when the
// request came over TLS, directly or per a trusted proxy's
// X-Forwarded-Proto (auth.Throttle.SecureRequest).
func (s *server) secureResponses(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", referrerPolicy)
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(&headerGuard{ResponseWriter: w, secure: s.throttle.SecureRequest(r)}, r)
	})
}

// headerGuard completes the headers a handler set, just before they are
// written: the CSP keeps frame-ancestors 'none' whatever the handler set,
// and the session cookie is Secure on a secure request.
type headerGuard struct {
	http.ResponseWriter
	secure  bool
	written bool
}

// Unwrap lets http.ResponseController reach the connection.
func (g *headerGuard) Unwrap() http.ResponseWriter { return g.ResponseWriter }

func (g *headerGuard) complete() {
	if g.written {
		return
	}
	g.written = true
	h := g.ResponseWriter.Header()
	switch csp := h.Get("Content-Security-Policy"); {
	case csp == "":
		h.Set("Content-Security-Policy", frameAncestors)
	case !strings.Contains(csp, "frame-ancestors"):
		h.Set("Content-Security-Policy", csp+"; "+frameAncestors)
	}
	if !g.secure {
		return
	}
	cookies := h.Values("Set-Cookie")
	for i, c := range cookies {
		if strings.HasPrefix(c, SessionCookie+"=") && !hasAttr(c, "Secure") {
			cookies[i] = c + "; Secure"
		}
	}
}

// hasAttr reports whether the Set-Cookie value c has attribute attr.
func hasAttr(c, attr string) bool {
	for _, a := range strings.Split(c, ";")[1:] {
		name, _, _ := strings.Cut(strings.TrimSpace(a), "=")
		if strings.EqualFold(name, attr) {
			return true
		}
	}
	return false
}

func (g *headerGuard) WriteHeader(code int) {
	g.complete()
	g.ResponseWriter.WriteHeader(code)
}

func (g *headerGuard) Write(b []byte) (int, error) {
	g.complete()
	return g.ResponseWriter.Write(b)
}

// Flush passes a flush through (server-sent events).
func (g *headerGuard) Flush() {
	g.complete()
	_ = http.NewResponseController(g.ResponseWriter).Flush()
}
