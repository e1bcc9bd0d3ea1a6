package api

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/facho-olt/facho/services/api/auth"
)

// Every response carries the security headers: the API's JSON, its
// errors, the console's pages, /healthz and /metrics.
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	r, _, _ := newThrottleRig(t, auth.ThrottleConfig{})
	for _, tc := range []struct{ method, path, token string }{
		{"GET", "/api/v1/brands", staticToken},
		{"GET", "/api/v1/brands", ""},                 // 401
		{"GET", "/api/v1/no-such-thing", staticToken}, // 404
		{"POST", "/api/v1/brands", staticToken},       // 400
		{"GET", "/healthz", ""},
		{"GET", "/metrics", ""},
		{"GET", "/metrics", staticToken},
		{"GET", "/login", ""},
		{"GET", "/", ""}, // 303 to the login page
		{"GET", "/api/docs", staticToken},
	} {
		req, _ := http.NewRequest(tc.method, r.srv.URL+tc.path, strings.NewReader("{"))
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := client(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		what := tc.method + " " + tc.path + " (" + resp.Status + ")"
		if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", what, got)
		}
		if got := h.Get("Referrer-Policy"); got != "same-origin" && got != "no-referrer" {
			t.Errorf("%s: Referrer-Policy %q", what, got)
		}
		if got := h.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s: X-Frame-Options %q", what, got)
		}
		if csp := h.Values("Content-Security-Policy"); len(csp) != 1 || !strings.Contains(csp[0], "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", what, csp)
		}
	}
}

// The session cookie is Secure when the request came over TLS: here a
// trusted proxy (127.0.0.1 in the rig) says X-Forwarded-Proto: https. A
// plain request, or the header from a client that is no trusted proxy,
// leaves it as is (a browser would drop a Secure cookie over http).
func TestSessionCookieSecureBehindTLSProxy(t *testing.T) {
	const pw = "correct horse battery"
	login := func(r *rig, proto string) *http.Cookie {
		req, _ := http.NewRequest("POST", r.srv.URL+"/login", strings.NewReader(url.Values{"username": {"ada"}, "password": {pw}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if proto != "" {
			req.Header.Set("X-Forwarded-Proto", proto)
		}
		resp, err := client(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("login: %d", resp.StatusCode)
		}
		for _, c := range resp.Cookies() {
			if c.Name == SessionCookie {
				return c
			}
		}
		t.Fatal("no session cookie")
		return nil
	}
	trusted, _, _ := newThrottleRig(t, auth.ThrottleConfig{})
	if _, err := trusted.s.users.CreateUser(context.Background(), "ada", auth.Admin, pw); err != nil {
		t.Fatal(err)
	}
	if c := login(trusted, "https"); !c.Secure || !c.HttpOnly {
		t.Errorf("behind a TLS proxy: Secure %v HttpOnly %v, want both", c.Secure, c.HttpOnly)
	}
	if c := login(trusted, ""); c.Secure {
		t.Error("plain http: the cookie is Secure")
	}
	if c := login(trusted, "http"); c.Secure {
		t.Error("X-Forwarded-Proto http: the cookie is Secure")
	}

	untrusted, _, _ := newThrottleRig(t, auth.ThrottleConfig{})
	untrusted.s.throttle = auth.NewThrottle(auth.ThrottleConfig{}, nil) // no trusted proxy
	if _, err := untrusted.s.users.CreateUser(context.Background(), "ada", auth.Admin, pw); err != nil {
		t.Fatal(err)
	}
	if c := login(untrusted, "https"); c.Secure {
		t.Error("X-Forwarded-Proto from a client that is no trusted proxy made the cookie Secure")
	}
}

// /metrics is not anonymous on the API's port: 401 without credentials,
// 200 with a viewer's token (a Prometheus bearer_token).
func TestMetricsNeedAuthentication(t *testing.T) {
	r := newRig(t)
	viewerTok, _, _ := r.user("vera", auth.Viewer)
	if code, _ := r.do(client(t), "GET", "/metrics", "", "", ""); code != http.StatusUnauthorized {
		t.Fatalf("anonymous /metrics = %d, want 401", code)
	}
	code, body := r.do(client(t), "GET", "/metrics", viewerTok, "", "")
	if code != http.StatusOK || !strings.Contains(body, "facho_api_requests_total") {
		t.Fatalf("/metrics with a viewer's token = %d, want 200 with the API's metrics", code)
	}
}
