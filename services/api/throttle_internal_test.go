package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/streams"
)

// clock is a settable clock for the throttle's windows.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newThrottleRig is a real API server (HTTP, JetStream, Postgres) behind
// a trusted proxy at 127.0.0.1, so a test names the client in
// X-Forwarded-For.
func newThrottleRig(t *testing.T, th auth.ThrottleConfig) (*rig, *clock, *prometheus.Registry) {
	t.Helper()
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	k, _ := secret.NewKey()
	key, _ := secret.ParseKey(k)
	box, err := secret.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	th.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}
	clk := &clock{t: time.Now()}
	reg := prometheus.NewRegistry()
	logs := &lockedBuffer{}
	s, h, err := newServer(context.Background(), Config{Tokens: []string{staticToken}, Throttle: th},
		Deps{JS: env.JS, DB: db, Box: box, Log: zerolog.New(logs).Level(zerolog.DebugLevel), Registry: reg, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &rig{t: t, s: s, srv: srv, logs: logs}, clk, reg
}

// login posts the login form as the client at ip.
func (r *rig) login(ip, username, password string) *http.Response {
	r.t.Helper()
	req, _ := http.NewRequest("POST", r.srv.URL+"/login", strings.NewReader(url.Values{"username": {username}, "password": {password}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", ip)
	resp, err := client(r.t).Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (r *rig) loginStatus(ip, username, password string) int {
	return r.login(ip, username, password).StatusCode
}

// Failed console logins are limited per (username, client address) and
// per client address (5 in 15 minutes by default): the next attempt is 429
// with Retry-After and its password is not even checked; failures at one
// address never lock the user out at another (nobody can lock the admin
// out from elsewhere); a success clears the counts; the window slides; a
// counter and a log line (never the password) record it.
func TestLoginRateLimit(t *testing.T) {
	r, clk, reg := newThrottleRig(t, auth.ThrottleConfig{})
	ctx := context.Background()
	const pw = "correct horse battery"
	for _, name := range []string{"alice", "bob", "carol"} {
		if _, err := r.s.users.CreateUser(ctx, name, auth.Operator, pw); err != nil {
			t.Fatal(err)
		}
	}

	// alice's password guessed 5 times from one address.
	for i := range 5 {
		if got := r.loginStatus("192.0.2.5", "alice", "guess-"+strconv.Itoa(i)); got != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, got)
		}
	}
	resp := r.login("192.0.2.5", "Alice", pw) // the right password, the name in capitals
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("6th attempt on alice from the guessing address: %d, want 429", resp.StatusCode)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 890 || ra > 900 {
		t.Fatalf("Retry-After %q, want about 900 s", resp.Header.Get("Retry-After"))
	}
	// alice herself, at her own address, is not locked out.
	if got := r.loginStatus("192.0.2.99", "alice", pw); got != http.StatusSeeOther {
		t.Fatalf("alice from another address: %d, want 303", got)
	}
	// bob, from a fresh address, is not held back by alice's count.
	if got := r.loginStatus("192.0.2.100", "bob", pw); got != http.StatusSeeOther {
		t.Fatalf("bob: %d, want 303", got)
	}

	// Per address: one address tries 5 usernames; the 6th attempt (bob,
	// right password) is refused.
	for i := range 5 {
		if got := r.loginStatus("198.51.100.7", "nobody-"+strconv.Itoa(i), "x"); got != http.StatusUnauthorized {
			t.Fatalf("spray %d: %d", i, got)
		}
	}
	if got := r.loginStatus("198.51.100.7", "bob", pw); got != http.StatusTooManyRequests {
		t.Fatalf("6th attempt from 198.51.100.7: %d, want 429", got)
	}

	// A success clears the counts: carol fails 4 times, logs in, and may
	// fail 5 more times before a 429.
	for i := range 4 {
		r.loginStatus("203.0.113.5", "carol", "bad-"+strconv.Itoa(i))
	}
	if got := r.loginStatus("203.0.113.5", "carol", pw); got != http.StatusSeeOther {
		t.Fatalf("carol after 4 failures: %d, want 303", got)
	}
	for i := range 5 {
		if got := r.loginStatus("203.0.113.5", "carol", "worse-"+strconv.Itoa(i)); got != http.StatusUnauthorized {
			t.Fatalf("carol failure %d after the success: %d, want 401", i+1, got)
		}
	}
	if got := r.loginStatus("203.0.113.5", "carol", pw); got != http.StatusTooManyRequests {
		t.Fatalf("carol 6th: %d, want 429", got)
	}

	// The window slides: 15 minutes later alice logs in from the address
	// that guessed.
	clk.add(15*time.Minute + time.Second)
	if got := r.loginStatus("192.0.2.5", "alice", pw); got != http.StatusSeeOther {
		t.Fatalf("alice after the window: %d, want 303", got)
	}

	limited := testutil.ToFloat64(r.s.throttle.Collector().(*prometheus.CounterVec).WithLabelValues(auth.FailedLogin, auth.ReasonRateLimited))
	bad := testutil.ToFloat64(r.s.throttle.Collector().(*prometheus.CounterVec).WithLabelValues(auth.FailedLogin, auth.ReasonBadCredentials))
	if limited != 3 || bad != 19 {
		t.Fatalf("facho_api_auth_failures_total login: rate_limited %v (want 3), bad_credentials %v (want 19)", limited, bad)
	}
	if n, err := testutil.GatherAndCount(reg, "facho_api_auth_failures_total"); err != nil || n == 0 {
		t.Fatalf("counter not registered: %d, %v", n, err)
	}
	logs := r.logs.String()
	for _, want := range []string{`"message":"login blocked: too many failures"`, `"client_ip":"192.0.2.5"`, `"user":"alice"`, `"message":"login refused: rate limited"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s", want)
		}
	}
	for _, secret := range []string{pw, "guess-", "bad-0", "worse-"} {
		if strings.Contains(logs, secret) {
			t.Errorf("log carries a password (%q)", secret)
		}
	}
}

// Requests with unknown bearer tokens are limited per client IP: past the
// limit every bearer request of that address is 429, valid tokens too,
// while other addresses go on.
func TestBadTokenRateLimit(t *testing.T) {
	r, _, _ := newThrottleRig(t, auth.ThrottleConfig{TokenMaxFailures: 3, Window: time.Minute})
	req := func(ip, token string) *http.Response {
		q, _ := http.NewRequest("GET", r.srv.URL+"/api/v1/brands", nil)
		q.Header.Set("Authorization", "Bearer "+token)
		q.Header.Set("X-Forwarded-For", ip)
		resp, err := http.DefaultClient.Do(q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for i, tok := range []string{"wrong-token-0123456789", auth.TokenPrefix + "nope", "also-wrong-0123456789"} {
		if got := req("192.0.2.1", tok).StatusCode; got != http.StatusUnauthorized {
			t.Fatalf("bad token %d: %d", i, got)
		}
	}
	resp := req("192.0.2.1", staticToken)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("after 3 bad tokens: %d (Retry-After %q), want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := req("192.0.2.2", staticToken).StatusCode; got != http.StatusOK {
		t.Fatalf("another address: %d, want 200", got)
	}
	if !strings.Contains(r.logs.String(), "bearer tokens rate limited") || strings.Contains(r.logs.String(), "wrong-token") {
		t.Fatalf("log: %s", r.logs.String())
	}
}
