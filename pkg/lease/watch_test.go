package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A lease whose holder stops renewing is reported as expired, with the
// holder's record and fencing token; a released lease is not, nor is the
// released key's delete marker when it ages out.
func TestWatchExpiriesReportsExpiryNotRelease(t *testing.T) {
	kv, mk := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan Expiry, 16)
	done := make(chan error, 1)
	go func() {
		done <- WatchExpiries(ctx, kv, 100*time.Millisecond, func(_ context.Context, e Expiry) { got <- e })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("watch ended with %v", err)
		}
	})

	// Released: its delete marker ages out by MaxAge too (a purge marker
	// on the key), which is not an expiry.
	released := acquireEventually(t, mk("alive"), "olt-r", time.Second)
	if err := released.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitMarker(t, kv, Key("olt-r"))

	// Abandoned after a renewal: the record then carries the token.
	doomed := acquireEventually(t, mk("doomed"), "olt-x", time.Second)
	waitUntil(t, "a renewal", func() bool {
		e, err := kv.Get(context.Background(), Key("olt-x"))
		return err == nil && e.Revision() > doomed.Revision()
	})
	doomed.Abandon()

	var e Expiry
	select {
	case e = <-got:
	case <-time.After(30 * time.Second): // bounds a hung test only
		t.Fatal("no expiry reported")
	}
	// The watch handles updates in stream order: olt-r's marker came
	// first, so a report of it would have come first.
	if e.OLTID != "olt-x" || e.Key != Key("olt-x") || e.Record == nil || e.Record.Holder != "doomed" ||
		e.Record.Info.ExecutionID != "e-doomed" || e.Token != doomed.Revision() || e.At.IsZero() {
		t.Fatalf("expiry %+v (record %+v), want olt-x of doomed with token %d", e, e.Record, doomed.Revision())
	}

	// The key is free again and nothing else was reported.
	if _, _, held, err := Current(context.Background(), kv, "olt-x"); err != nil || held {
		t.Fatalf("olt-x after expiry: held=%v err=%v", held, err)
	}
	next := acquireEventually(t, mk("next"), "olt-x", time.Second)
	if _, token, held, err := Current(context.Background(), kv, "olt-x"); err != nil || !held || token != next.Revision() {
		t.Fatalf("current of olt-x: token %d held=%v err=%v, want %d", token, held, err, next.Revision())
	}
	if err := next.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-got:
		t.Fatalf("unexpected report %+v", e)
	default:
	}
}

// waitMarker waits until the server's MaxAge marker is the key's last
// entry (it lives about one TTL; polled far more often).
func waitMarker(t *testing.T, kv jetstream.KeyValue, key string) {
	t.Helper()
	waitUntil(t, "the marker of "+key, func() bool { return lastIsMarker(t, kv, key) })
}

func lastIsMarker(t *testing.T, kv jetstream.KeyValue, key string) bool {
	t.Helper()
	w, err := kv.Watch(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	for e := range w.Updates() {
		if e == nil {
			return false
		}
		return e.Operation() == jetstream.KeyValuePurge
	}
	return false
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // bounds a hung test only
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
