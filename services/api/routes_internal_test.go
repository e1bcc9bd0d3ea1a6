package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/streams"
)

const staticToken = "static-admin-token-0123456789"

type rig struct {
	t    *testing.T
	s    *server
	srv  *httptest.Server
	logs *lockedBuffer
}

// lockedBuffer is the log of the server's goroutines, read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newRig(t *testing.T) *rig {
	t.Helper()
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	k, _ := secret.NewKey()
	key, _ := secret.ParseKey(k)
	box, err := secret.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	s, h, err := newServer(context.Background(), Config{Tokens: []string{staticToken}},
		Deps{JS: env.JS, DB: db, Box: box, Log: zerolog.New(logs), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &rig{t: t, s: s, srv: srv, logs: logs}
}

var paramRE = regexp.MustCompile(`\{[a-z_]+(\.\.\.)?\}`)

// concrete turns a pattern into a method and a path to request.
func concrete(pattern string) (string, string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "GET", pattern
	}
	path = strings.TrimSuffix(path, "{$}")
	path = paramRE.ReplaceAllString(path, "x1")
	if strings.HasSuffix(path, "/") && path != "/" && method == "GET" && !strings.HasPrefix(path, "/api/v1/") {
		path += "x"
	}
	return method, path
}

// The OpenAPI document lists every registered API route, and every
// registered route (console pages too) has a documented role.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	r := newRig(t)
	patterns, roles := r.s.mux.patterns, r.s.roles
	raw, _ := json.Marshal(r.s.openAPIDocument())
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.0.3" {
		t.Fatalf("openapi version %v", doc["openapi"])
	}
	paths, _ := doc["paths"].(map[string]any)
	docs := routeDocs()
	for _, p := range patterns {
		method, path, ok := strings.Cut(p, " ")
		if _, public := roles[p]; !public {
			t.Errorf("route %q has no role", p)
		}
		if !strings.HasPrefix(path, "/api/") && path != "/healthz" && path != "/metrics" {
			continue // a console page (package console documents it)
		}
		d, documented := docs[p]
		if !documented {
			t.Errorf("route %q is not documented: add it to routeDocs (openapi.go)", p)
			continue
		}
		if !ok || d.HTML {
			continue
		}
		oaPath := pathParamRE.ReplaceAllString(strings.TrimSuffix(path, "{$}"), "{$1}")
		ops, _ := paths[oaPath].(map[string]any)
		op, _ := ops[strings.ToLower(method)].(map[string]any)
		if op == nil {
			t.Errorf("route %q is missing from openapi.json (path %s)", p, oaPath)
			continue
		}
		if op["summary"] == "" || op["responses"] == nil {
			t.Errorf("route %q: no summary or responses", p)
		}
	}
	for p := range docs {
		if !contains(patterns, p) {
			t.Errorf("routeDocs documents %q, which is not registered", p)
		}
	}
	if len(paths) < 30 {
		t.Errorf("only %d paths in the document", len(paths))
	}
}

func contains(xs []string, v string) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

// client is an HTTP client with its own cookies, not following redirects.
func client(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (r *rig) user(name string, role auth.Role) (string, *http.Client, string) {
	r.t.Helper()
	ctx := context.Background()
	store := r.s.users
	const pw = "correct horse battery"
	u, err := store.CreateUser(ctx, name, role, pw)
	if err != nil {
		r.t.Fatal(err)
	}
	tok, _, err := store.CreateToken(ctx, u.ID, "test")
	if err != nil {
		r.t.Fatal(err)
	}
	c := client(r.t)
	resp, err := c.PostForm(r.srv.URL+"/login", url.Values{"username": {name}, "password": {pw}})
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		r.t.Fatalf("login %s = %d", name, resp.StatusCode)
	}
	// The session's CSRF token, from a page's form.
	body := r.get(c, "/tokens", "")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		r.t.Fatalf("no csrf token in the page")
	}
	return tok, c, m[1]
}

func (r *rig) get(c *http.Client, path, token string) string {
	r.t.Helper()
	req, _ := http.NewRequest("GET", r.srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// do sends a request as a client with a token or session cookie (and
// CSRF token, when given).
func (r *rig) do(c *http.Client, method, path, token, csrf string, body string) (int, string) {
	r.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, r.srv.URL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if csrf != "" {
		req.Header.Set(CSRFHeader, csrf)
	}
	if strings.HasPrefix(body, "{") {
		req.Header.Set("Content-Type", "application/json")
	} else if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, "" // a stream that does not end: its status is enough
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The security walk: every registered route, without credentials, with a
// viewer's token and with a viewer's session; CSRF refused without the
// token; no secret in a page or the log.
func TestSecurityWalk(t *testing.T) {
	r := newRig(t)
	viewerTok, viewerWeb, viewerCSRF := r.user("vera", auth.Viewer)
	_, adminWeb, adminCSRF := r.user("ada", auth.Admin)
	anon := client(t)
	for _, p := range r.s.mux.patterns {
		need, ok := r.s.roles[p]
		if !ok {
			t.Errorf("%s: no role recorded", p)
			continue
		}
		method, path := concrete(p)
		if path == "/events" {
			path += "?topic=logs"
		}
		isAPI := strings.HasPrefix(path, "/api/") || path == "/metrics" // /metrics: a bearer token, like the API
		t.Run(p, func(t *testing.T) {
			code, _ := r.do(anon, method, path, "", "", "")
			switch {
			case need == "" && p == "POST /login":
				if code != http.StatusUnauthorized { // no such user
					t.Errorf("anonymous login without credentials = %d, want 401", code)
				}
			case need == "":
				if code == http.StatusUnauthorized || code == http.StatusForbidden {
					t.Errorf("public route anonymous = %d", code)
				}
			case isAPI && code != http.StatusUnauthorized:
				t.Errorf("anonymous = %d, want 401", code)
			case !isAPI && method == "GET" && code != http.StatusSeeOther:
				t.Errorf("anonymous page = %d, want 303 to the login page", code)
			case !isAPI && method != "GET" && code != http.StatusUnauthorized && code != http.StatusForbidden:
				t.Errorf("anonymous %s = %d, want 401", method, code)
			}
			if need == "" || path == "/logout" {
				return
			}
			body := ""
			if method != "GET" && method != "DELETE" {
				body = "{}"
			}
			if isAPI {
				code, _ = r.do(client(t), method, path, viewerTok, "", body)
			} else {
				code, _ = r.do(viewerWeb, method, path, "", viewerCSRF, "csrf="+url.QueryEscape(viewerCSRF))
			}
			if need == auth.Viewer {
				if code == http.StatusUnauthorized || code == http.StatusForbidden {
					t.Errorf("viewer = %d on a viewer route", code)
				}
			} else if code != http.StatusForbidden {
				t.Errorf("viewer = %d, want 403 (needs %s)", code, need)
			}
		})
	}

	// A session's unsafe request without the CSRF token is refused, with
	// it accepted; a cross-origin one is refused even with it.
	brand := `{"id":"huawei","name":"Huawei","index_scheme":"pon.onu"}`
	if code, _ := r.do(adminWeb, "POST", "/api/v1/brands", "", "", brand); code != http.StatusForbidden {
		t.Errorf("session POST without CSRF token = %d, want 403", code)
	}
	if code, _ := r.do(adminWeb, "POST", "/olts/batch", "", "", "action=disable&id=x"); code != http.StatusForbidden {
		t.Errorf("console POST without CSRF token = %d, want 403", code)
	}
	req, _ := http.NewRequest("POST", r.srv.URL+"/api/v1/brands", strings.NewReader(brand))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(CSRFHeader, adminCSRF)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := adminWeb.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST = %v %v, want 403", resp.StatusCode, err)
	}
	if code, out := r.do(adminWeb, "POST", "/api/v1/brands", "", adminCSRF, brand); code != http.StatusCreated {
		t.Errorf("session POST with CSRF token = %d %s", code, out)
	}

	// No secret in any page or in the log.
	const community = "community-s3cr3t-xyz"
	olt := `{"id":"olt-a","name":"A","ip":"10.0.0.1","community":"` + community + `","brand_id":"huawei"}`
	if code, out := r.do(client(t), "POST", "/api/v1/olts", staticToken, "", olt); code != http.StatusCreated {
		t.Fatalf("create olt = %d %s", code, out)
	}
	_, tokPage := r.do(adminWeb, "POST", "/tokens", "", "", "csrf="+url.QueryEscape(adminCSRF)+"&name=ci")
	secretTok := regexp.MustCompile(`facho_[A-Za-z0-9_-]{20,}`).FindString(tokPage)
	if secretTok == "" {
		t.Fatalf("the new token is not shown once:\n%s", tokPage)
	}
	var pages strings.Builder
	for _, path := range []string{"/olts", "/olts/olt-a", "/olts/olt-a/edit", "/brands", "/tokens", "/users", "/logs", "/api/v1/olts/olt-a", "/api/v1/olts", "/api/docs", "/api/v1/tokens", "/api/v1/users"} {
		_, b := r.do(adminWeb, "GET", path, "", "", "")
		pages.WriteString(b)
	}
	for _, sec := range []string{community, secretTok, viewerTok, staticToken, "correct horse battery"} {
		if strings.Contains(pages.String(), sec) {
			t.Errorf("a page shows a secret %.8s…", sec)
		}
		if strings.Contains(r.logs.String(), sec) {
			t.Errorf("the log shows a secret %.8s…", sec)
		}
	}
	var n int
	if err := r.s.deps.DB.QueryRow(context.Background(), `SELECT count(*) FROM users WHERE password_hash LIKE '$argon2id$%'`).Scan(&n); err != nil || n != 2 {
		t.Errorf("argon2id hashes: %d %v", n, err)
	}
}

func TestRouteRole(t *testing.T) {
	for _, c := range []struct {
		pattern string
		want    auth.Role
	}{
		{"GET /api/v1/olts", auth.Viewer},
		{"POST /api/v1/olts", auth.Admin},
		{"DELETE /api/v1/olts/{id}", auth.Admin},
		{"POST /api/v1/olts/{id}/disable", auth.Operator},
		{"POST /api/v1/pollers/nodes/{node_id}/run/", auth.Operator},
		{"POST /api/v1/tokens", auth.Viewer},
		{"GET /api/v1/users", auth.Admin},
		{"/api/", auth.Viewer},
		{"GET /api/v1/alerts", auth.Viewer},
		{"POST /api/v1/alerts/{id}/ack", auth.Operator},
		{"POST /api/v1/silences", auth.Operator},
		{"DELETE /api/v1/silences/{id}", auth.Operator},
	} {
		if got := routeRole(c.pattern); got != c.want {
			t.Errorf("routeRole(%q) = %q, want %q", c.pattern, got, c.want)
		}
	}
}
