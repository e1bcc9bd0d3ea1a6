package api_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/api"
	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/streams"
)

// TestShutdownWithLiveEventClients: the API stops within 2 s while
// live-event clients are connected, the API's event stream and the
// console's live updates alike (they end on shutdown instead of holding it
// for its 10 s grace), and the clients see their stream end.
func TestShutdownWithLiveEventClients(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	k, _ := secret.NewKey()
	key, _ := secret.ParseKey(k)
	box, err := secret.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- api.Run(ctx, api.Config{Addr: "127.0.0.1:0", Tokens: []string{token}}, api.Deps{
			JS: env.JS, DB: db, Box: box, Log: zerolog.Nop(), Registry: prometheus.NewRegistry(),
			Ready: func(a net.Addr) { addrc <- a },
		})
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a.String()
	case err := <-errc:
		t.Fatalf("api: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("api did not start")
	}

	// A console user with a session, for the console's live updates.
	const pw = "correct horse battery"
	if _, err := (&auth.Store{DB: db}).CreateUser(ctx, "watcher", auth.Viewer, pw); err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.PostForm(base+"/login", url.Values{"username": {"watcher"}, "password": {pw}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}

	type client struct {
		path    string
		first   string
		session bool
		body    *bufio.Reader
	}
	clients := []*client{
		{path: "/api/v1/events/stream", first: ": facho events\n"},
		{path: "/api/v1/events/stream?kind=exec", first: ": facho events\n"},
		{path: "/events?topic=logs", first: "retry: 3000\n", session: true},
	}
	for _, c := range clients {
		req, _ := http.NewRequest(http.MethodGet, base+c.path, nil)
		hc := http.DefaultClient
		if c.session {
			hc = browser
		} else {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s: %d %s", c.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		c.body = bufio.NewReader(resp.Body)
		if l, err := c.body.ReadString('\n'); err != nil || l != c.first {
			t.Fatalf("%s: first line %q %v", c.path, l, err)
		}
	}

	start := time.Now()
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("api.Run: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("the API still runs 2 s after its shutdown began, with %d live-event clients", len(clients))
	}
	t.Logf("stopped in %v with %d live-event clients", time.Since(start).Round(time.Millisecond), len(clients))
	// Each stream ended: its reader reaches the end within a second.
	for _, c := range clients {
		done := make(chan error, 1)
		go func() {
			for {
				if _, err := c.body.ReadString('\n'); err != nil {
					done <- err
					return
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Errorf("%s: stream still open after the shutdown", c.path)
		}
	}
}
