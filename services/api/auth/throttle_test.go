package auth

import (
	"crypto/tls"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Parallel attempts cannot pass the check together: each is counted when
// it begins, so 50 at once from one address let exactly 5 through.
func TestThrottleCountsAttemptsAsTheyBegin(t *testing.T) {
	th := NewThrottle(ThrottleConfig{}, nil)
	var ok atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, allowed := th.BeginLogin("10.0.0.1", "admin"); allowed {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 5 {
		t.Fatalf("%d attempts let through, want 5", ok.Load())
	}
}

// Failures count per (user, address) and per address: an address that
// failed for the admin blocks neither the admin elsewhere nor, under its
// own per-address limit, another user at that address.
func TestThrottlePerUserAndAddress(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cfg         ThrottleConfig
		failures    int    // of admin at 10.0.0.1
		ip, user    string // the next attempt
		wantAllowed bool
	}{
		{"defaults: admin elsewhere", ThrottleConfig{}, 5, "10.0.0.2", "admin", true},
		{"defaults: admin at the address", ThrottleConfig{}, 5, "10.0.0.1", "admin", false},
		{"defaults: another user at the address (per-address limit)", ThrottleConfig{}, 5, "10.0.0.1", "bob", false},
		{"NAT: another user at the address", ThrottleConfig{LoginMaxFailuresPerAddress: 20}, 5, "10.0.0.1", "bob", true},
		{"NAT: admin at the address", ThrottleConfig{LoginMaxFailuresPerAddress: 20}, 5, "10.0.0.1", "ADMIN ", false},
		{"NAT: spray past the per-address limit", ThrottleConfig{LoginMaxFailures: 100, LoginMaxFailuresPerAddress: 20}, 20, "10.0.0.1", "carol", false},
		{"under the limits", ThrottleConfig{}, 4, "10.0.0.1", "admin", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := NewThrottle(tc.cfg, nil)
			for i := range tc.failures {
				if _, ok := th.BeginLogin("10.0.0.1", "admin"); !ok {
					t.Fatalf("failure %d refused", i+1)
				}
			}
			if _, ok := th.BeginLogin(tc.ip, tc.user); ok != tc.wantAllowed {
				t.Fatalf("%s at %s after %d failures of admin at 10.0.0.1: allowed %v, want %v", tc.user, tc.ip, tc.failures, ok, tc.wantAllowed)
			}
		})
	}
}

// Secure cookies: over TLS, or when a trusted proxy says the client came
// over https; never on a header from anyone else.
func TestSecureRequest(t *testing.T) {
	prox, _ := ParsePrefixes("10.0.0.0/8")
	th := NewThrottle(ThrottleConfig{TrustedProxies: prox}, nil)
	for _, tc := range []struct {
		remote, proto string
		tls           bool
		want          bool
	}{
		{"203.0.113.9:5555", "", false, false},
		{"203.0.113.9:5555", "https", false, false}, // not a trusted proxy
		{"203.0.113.9:5555", "", true, true},
		{"10.1.2.3:80", "https", false, true},
		{"10.1.2.3:80", "HTTPS, http", false, true},
		{"10.1.2.3:80", "http", false, false},
		{"10.1.2.3:80", "", false, false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		if tc.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
		}
		if got := th.SecureRequest(r); got != tc.want {
			t.Errorf("%s proto %q tls %v: %v, want %v", tc.remote, tc.proto, tc.tls, got, tc.want)
		}
	}
}

// The maps stay bounded: old keys make room for new ones, and a key
// blocked recently survives a flood of newer keys only while it is among
// the most recent.
func TestThrottleIsBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	th := NewThrottle(ThrottleConfig{MaxKeys: 100}, func() time.Time { return now })
	for i := range 1000 {
		now = now.Add(time.Millisecond)
		th.BeginLogin("ip-"+strconv.Itoa(i), "user-"+strconv.Itoa(i))
		th.TokenFailed("ip-" + strconv.Itoa(i))
	}
	if a, b, c := th.Keys(); a > 100 || b > 100 || c > 100 {
		t.Fatalf("keys %d, %d, %d: want at most 100 each", a, b, c)
	}
	// Expired keys are dropped when a key is looked at again.
	now = now.Add(16 * time.Minute)
	if w := th.LoginWait("ip-999", "user-999"); w != 0 {
		t.Fatalf("wait %s after the window", w)
	}
}

// Negative limits disable a count.
func TestThrottleDisabled(t *testing.T) {
	th := NewThrottle(ThrottleConfig{LoginMaxFailures: -1, TokenMaxFailures: -1}, nil)
	for range 100 {
		if _, ok := th.BeginLogin("1.2.3.4", "a"); !ok {
			t.Fatal("limited with a negative limit")
		}
		if th.TokenFailed("1.2.3.4") {
			t.Fatal("token limited with a negative limit")
		}
	}
}

// The client is the TCP peer unless the peer is a trusted proxy; then the
// last X-Forwarded-For hop that is not one.
func TestClientIP(t *testing.T) {
	prox, _ := ParsePrefixes("10.0.0.0/8, 192.168.1.1")
	th := NewThrottle(ThrottleConfig{TrustedProxies: prox}, nil)
	plain := NewThrottle(ThrottleConfig{}, nil)
	for _, tc := range []struct {
		th     *Throttle
		remote string
		xff    string
		want   string
	}{
		{plain, "203.0.113.9:5555", "1.1.1.1", "203.0.113.9"}, // no trusted proxy: the header is ignored
		{th, "203.0.113.9:5555", "1.1.1.1", "203.0.113.9"},    // not from a proxy: ignored too
		{th, "10.1.2.3:80", "1.1.1.1, 198.51.100.4", "198.51.100.4"},
		{th, "10.1.2.3:80", "1.1.1.1, 198.51.100.4, 192.168.1.1", "198.51.100.4"},
		{th, "10.1.2.3:80", "", "10.1.2.3"},
		{th, "10.1.2.3:80", "garbage, 10.9.9.9", "10.9.9.9"},
		{th, "[::ffff:10.1.2.3]:80", "2001:db8::1", "2001:db8::1"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := tc.th.ClientIP(r); got != tc.want {
			t.Errorf("%s with X-Forwarded-For %q: %s, want %s", tc.remote, tc.xff, got, tc.want)
		}
	}
	if _, err := ParsePrefixes("10.0.0.0/8,nonsense"); err == nil {
		t.Fatal("nonsense accepted")
	}
}
