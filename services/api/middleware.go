package api

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
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

// authenticate requires Authorization: Bearer <one of Config.Tokens>.
func (s *server) authenticate(next http.Handler) http.Handler {
	tokens := make([][]byte, len(s.cfg.Tokens))
	for i, t := range s.cfg.Tokens {
		tokens[i] = []byte(t)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok && given != "" {
			g := []byte(strings.TrimSpace(given))
			match := 0
			for _, t := range tokens {
				// Check every token so the timing does not say which matched.
				match |= subtle.ConstantTimeCompare(g, t)
			}
			if match == 1 {
				next.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="facho"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or invalid bearer token"})
	})
}
