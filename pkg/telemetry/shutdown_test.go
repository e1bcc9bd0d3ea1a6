package telemetry

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestServeEndsStreamsOnShutdown: a response that lasts as long as its
// client listens (server-sent events) ends when the server shuts down, so
// Serve returns within 2 s with the client still connected, instead of
// waiting out its 10 s shutdown grace.
func TestServeEndsStreamsOnShutdown(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, stop := UntilShutdown(r.Context())
		defer stop()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(": hello\n\n"))
		http.NewResponseController(w).Flush()
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute):
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, "127.0.0.1:0", h, func(a net.Addr) { addrc <- a }) }()
	addr := <-addrc

	var clients []*http.Response
	for range 3 {
		resp, err := http.Get("http://" + addr.String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if l, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || l != ": hello\n" {
			t.Fatalf("first line %q %v", l, err)
		}
		clients = append(clients, resp)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("Serve still running 2 s after the shutdown began, with %d live-event clients", len(clients))
	}
	t.Logf("shut down in %v with %d streaming clients", time.Since(start).Round(time.Millisecond), len(clients))
}

// TestUntilShutdownOutsideServe: without Serve's marker the context is the
// request's, cancelled by its parent or its cancel.
func TestUntilShutdownOutsideServe(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, stop := UntilShutdown(parent)
	defer stop()
	if ctx.Err() != nil {
		t.Fatal("done at once")
	}
	cancelParent()
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("not done with its parent")
	}
}
