package auth

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ThrottleConfig bounds failed authentications (issue 12, security). Zero
// fields take the defaults of WithDefaults.
type ThrottleConfig struct {
	// LoginMaxFailures is how many failed console logins a username may
	// have from one client address within Window before its further
	// attempts from that address are answered 429 without checking the
	// password (default 5; negative: no limit). Failures from one address
	// never hold the user back at another: nobody can lock the admin out
	// from elsewhere. A successful login clears the count.
	LoginMaxFailures int
	// LoginMaxFailuresPerAddress is how many failed console logins one
	// client address may make within Window, whatever the usernames (a
	// spray), before its further attempts are answered 429 (default:
	// LoginMaxFailures, so 5; negative: no limit). Raise it above LoginMaxFailures when many users
	// share an address (NAT). A successful login clears the count.
	LoginMaxFailuresPerAddress int
	// TokenMaxFailures is how many requests with an unknown bearer token a
	// client IP may make within Window before its bearer requests are
	// answered 429 (default 20; negative: no limit).
	TokenMaxFailures int
	// Window is the sliding window of the counts (default 15m).
	Window time.Duration
	// MaxKeys bounds the IPs and usernames remembered by each count
	// (default 10,000); when full, expired entries go first, then the one
	// whose last failure is oldest.
	MaxKeys int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client: the client is the last address of the header that is not
	// one of them. Empty: the client is the connection's peer.
	TrustedProxies []netip.Prefix
}

// WithDefaults fills zero fields.
func (c ThrottleConfig) WithDefaults() ThrottleConfig {
	if c.LoginMaxFailures == 0 {
		c.LoginMaxFailures = 5
	}
	if c.LoginMaxFailuresPerAddress == 0 {
		c.LoginMaxFailuresPerAddress = c.LoginMaxFailures
	}
	if c.TokenMaxFailures == 0 {
		c.TokenMaxFailures = 20
	}
	if c.Window == 0 {
		c.Window = 15 * time.Minute
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = 10_000
	}
	return c
}

// Validate checks the config after defaults.
func (c ThrottleConfig) Validate() error {
	var errs []error
	if c.LoginMaxFailures > 1000 || c.LoginMaxFailuresPerAddress > 1000 || c.TokenMaxFailures > 100_000 {
		errs = append(errs, fmt.Errorf("login max failures %d and per address %d (want at most 1000 each), token max failures %d (want at most 100000)",
			c.LoginMaxFailures, c.LoginMaxFailuresPerAddress, c.TokenMaxFailures))
	}
	if c.Window < time.Second || c.Window > 24*time.Hour {
		errs = append(errs, fmt.Errorf("throttle window %s: want 1s..24h", c.Window))
	}
	if c.MaxKeys < 100 || c.MaxKeys > 10_000_000 {
		errs = append(errs, fmt.Errorf("throttle max keys %d: want 100..10000000", c.MaxKeys))
	}
	return errors.Join(errs...)
}

// ParsePrefixes reads comma-separated CIDRs or addresses (an address is
// its own /32 or /128).
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// Throttle counts failed authentications in memory, per client IP and per
// (username, client IP), in sliding windows. It is safe for concurrent use. A login
// attempt is counted when it starts (so a burst of parallel attempts
// cannot pass the check together) and cleared when it succeeds.
type Throttle struct {
	cfg     ThrottleConfig
	now     func() time.Time
	loginIP *failures
	// loginUser counts per (username, client IP): a username is never
	// blocked everywhere.
	loginUser *failures
	tokenIP   *failures
	counted   *prometheus.CounterVec
}

// Failure reasons of the counter facho_api_auth_failures_total.
const (
	ReasonBadCredentials = "bad_credentials" // wrong password, unknown user or token
	ReasonRateLimited    = "rate_limited"    // answered 429 without a check
)

// Label values of via in facho_api_auth_failures_total.
const (
	FailedLogin = "login" // the console's login form
	FailedToken = "token" // a bearer token
)

// NewThrottle returns a throttle with cfg (after defaults); now is its
// clock (time.Now when nil).
func NewThrottle(cfg ThrottleConfig, now func() time.Time) *Throttle {
	cfg = cfg.WithDefaults()
	if now == nil {
		now = time.Now
	}
	mk := func(limit int) *failures {
		return &failures{limit: limit, window: cfg.Window, maxKeys: cfg.MaxKeys, m: map[string][]time.Time{}}
	}
	return &Throttle{cfg: cfg, now: now, loginIP: mk(cfg.LoginMaxFailuresPerAddress), loginUser: mk(cfg.LoginMaxFailures), tokenIP: mk(cfg.TokenMaxFailures),
		counted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_api_auth_failures_total",
			Help: "Failed authentications by way (login: the console's form; token: a bearer token) and reason (bad_credentials; rate_limited: refused with 429 before any check).",
		}, []string{"via", "reason"})}
}

// Collector is the throttle's counter, for a registry.
func (t *Throttle) Collector() prometheus.Collector { return t.counted }

// Count adds a failed authentication to the counter.
func (t *Throttle) Count(via, reason string) { t.counted.WithLabelValues(via, reason).Inc() }

// Config is the throttle's configuration after defaults.
func (t *Throttle) Config() ThrottleConfig { return t.cfg }

// ClientIP is the request's client: the connection's peer, or, when the
// peer is a trusted proxy, the last X-Forwarded-For address that is not.
func (t *Throttle) ClientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	peer = peer.Unmap()
	if !t.trusted(peer) {
		return peer.String()
	}
	xff := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(xff) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(xff[i]))
		if err != nil {
			break // a forged or broken entry: stop at the last good hop
		}
		peer = a.Unmap()
		if !t.trusted(peer) {
			break
		}
	}
	return peer.String()
}

func (t *Throttle) trusted(a netip.Addr) bool {
	for _, p := range t.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// userKey folds a username the way logins are typed, with the client
// address: the key of the per-(user, address) count.
func userKey(ip, username string) string {
	return ip + "\x00" + strings.ToLower(strings.TrimSpace(username))
}

// SecureRequest reports whether the request reached the client's side
// over TLS: the connection is TLS, or the peer is a trusted proxy whose
// X-Forwarded-Proto (its first value: the proxy facing the client) is
// https. Session cookies are then marked Secure.
func (t *Throttle) SecureRequest(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !t.trusted(peer.Unmap()) {
		return false
	}
	first, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(first), "https")
}

// BeginLogin counts a login attempt of username from ip, unless ip, or
// username from ip, has had too many failures: then it returns how long
// until the next attempt may be made and false.
func (t *Throttle) BeginLogin(ip, username string) (time.Duration, bool) {
	now := t.now()
	u := userKey(ip, username)
	// Lock order: IP, then user (the only place holding both).
	t.loginIP.mu.Lock()
	defer t.loginIP.mu.Unlock()
	t.loginUser.mu.Lock()
	defer t.loginUser.mu.Unlock()
	wait := max(t.loginIP.waitLocked(ip, now), t.loginUser.waitLocked(u, now))
	if wait > 0 {
		return wait, false
	}
	t.loginIP.addLocked(ip, now)
	t.loginUser.addLocked(u, now)
	return 0, true
}

// LoginSucceeded clears the counts of ip and username.
func (t *Throttle) LoginSucceeded(ip, username string) {
	t.loginIP.reset(ip)
	t.loginUser.reset(userKey(ip, username))
}

// LoginNotChecked takes back the count of an attempt whose password could
// not be checked (the user database failed): it was no guess.
func (t *Throttle) LoginNotChecked(ip, username string) {
	t.loginIP.pop(ip)
	t.loginUser.pop(userKey(ip, username))
}

// LoginWait is how long ip, or username at ip, must wait before the next
// attempt (0: it may try now).
func (t *Throttle) LoginWait(ip, username string) time.Duration {
	now := t.now()
	return max(t.loginIP.wait(ip, now), t.loginUser.wait(userKey(ip, username), now))
}

// TokenWait is how long ip must wait before its next bearer request (0:
// now).
func (t *Throttle) TokenWait(ip string) time.Duration { return t.tokenIP.wait(ip, t.now()) }

// TokenFailed counts a request of ip with an unknown bearer token and
// says whether ip is now blocked.
func (t *Throttle) TokenFailed(ip string) bool {
	now := t.now()
	t.tokenIP.mu.Lock()
	defer t.tokenIP.mu.Unlock()
	t.tokenIP.addLocked(ip, now)
	return t.tokenIP.waitLocked(ip, now) > 0
}

// Keys is how many IPs and (username, IP) pairs each count remembers
// (tests, metrics).
func (t *Throttle) Keys() (loginIPs, loginUsers, tokenIPs int) {
	return t.loginIP.len(), t.loginUser.len(), t.tokenIP.len()
}

// failures are the recent failure times of each key (at most limit of
// them: older ones do not change the answer).
type failures struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	maxKeys int
	m       map[string][]time.Time
}

func (f *failures) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.m)
}

func (f *failures) wait(key string, now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waitLocked(key, now)
}

// waitLocked: with limit failures in the window, the key waits until the
// oldest of them leaves it.
func (f *failures) waitLocked(key string, now time.Time) time.Duration {
	if f.limit < 0 {
		return 0
	}
	ts := f.recentLocked(key, now)
	if len(ts) < f.limit {
		return 0
	}
	return ts[len(ts)-f.limit].Add(f.window).Sub(now)
}

// recentLocked drops the key's failures that left the window.
func (f *failures) recentLocked(key string, now time.Time) []time.Time {
	ts, ok := f.m[key]
	if !ok {
		return nil
	}
	i := 0
	for i < len(ts) && !ts[i].Add(f.window).After(now) {
		i++
	}
	if i == len(ts) {
		delete(f.m, key)
		return nil
	}
	if i > 0 {
		ts = append(ts[:0], ts[i:]...)
		f.m[key] = ts
	}
	return ts
}

func (f *failures) addLocked(key string, now time.Time) {
	if f.limit < 0 {
		return
	}
	ts := f.recentLocked(key, now)
	if ts == nil && len(f.m) >= f.maxKeys {
		f.evictLocked(now)
	}
	ts = append(ts, now)
	if len(ts) > f.limit {
		ts = append(ts[:0], ts[len(ts)-f.limit:]...)
	}
	f.m[key] = ts
}

// evictLocked makes room for one key: the expired ones go, else the one
// whose last failure is oldest.
func (f *failures) evictLocked(now time.Time) {
	var oldest string
	var at time.Time
	for k, ts := range f.m {
		last := ts[len(ts)-1]
		if !last.Add(f.window).After(now) {
			delete(f.m, k)
			continue
		}
		if oldest == "" || last.Before(at) {
			oldest, at = k, last
		}
	}
	if len(f.m) >= f.maxKeys && oldest != "" {
		delete(f.m, oldest)
	}
}

func (f *failures) pop(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ts := f.m[key]; len(ts) > 1 {
		f.m[key] = ts[:len(ts)-1]
	} else {
		delete(f.m, key)
	}
}

func (f *failures) reset(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
}
