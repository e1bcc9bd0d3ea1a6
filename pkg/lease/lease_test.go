package lease

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/streams"
)

const testTTL = time.Second

func setup(t *testing.T) (jetstream.KeyValue, func(holder string) *Manager) {
	t.Helper()
	env := jstest.Start(t, streams.Options{LeaseTTL: testTTL, Storage: jetstream.MemoryStorage})
	ctx := context.Background()
	kv, err := env.JS.KeyValue(ctx, streams.BucketLeases)
	if err != nil {
		t.Fatal(err)
	}
	return kv, func(holder string) *Manager {
		m, err := Open(ctx, env.JS, streams.BucketLeases, holder)
		if err != nil {
			t.Fatal(err)
		}
		if m.TTL() != testTTL {
			t.Fatalf("ttl from bucket = %s, want %s", m.TTL(), testTTL)
		}
		return m
	}
}

// acquireEventually retries Acquire while the lease is held, up to limit.
func acquireEventually(t *testing.T, m *Manager, olt string, limit time.Duration) *Lease {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		l, err := m.Acquire(context.Background(), olt, Info{ExecutionID: "e-" + m.Holder()})
		if err == nil {
			return l
		}
		if !errors.Is(err, ErrHeld) || time.Now().After(deadline) {
			t.Fatalf("acquire by %s: %v", m.Holder(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func holderOf(t *testing.T, kv jetstream.KeyValue, olt string) string {
	t.Helper()
	e, err := kv.Get(context.Background(), Key(olt))
	if err != nil {
		t.Fatalf("get %s: %v", Key(olt), err)
	}
	var rec Record
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Holder
}

func TestAcquireIsExclusiveAndReleaseFreesIt(t *testing.T) {
	kv, mgr := setup(t)
	a, b := mgr("poller-a"), mgr("poller-b")
	ctx := context.Background()

	la, err := a.Acquire(ctx, "olt-1", Info{ExecutionID: "exec-1", JobID: "job-1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Acquire(ctx, "olt-1", Info{ExecutionID: "exec-2"})
	var held *HeldError
	if !errors.Is(err, ErrHeld) || !errors.As(err, &held) {
		t.Fatalf("second acquire: %v, want ErrHeld", err)
	}
	if held.Holder != "poller-a" || held.ExecutionID != "exec-1" || !strings.Contains(err.Error(), "poller-a") {
		t.Fatalf("held error does not name the holder: %+v (%v)", held, err)
	}
	// Another OLT is independent.
	lo, err := b.Acquire(ctx, "olt-2", Info{})
	if err != nil {
		t.Fatalf("acquire other olt: %v", err)
	}
	defer lo.Release(ctx)

	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatalf("second release: %v", err)
	}
	select {
	case <-la.Lost():
	default:
		t.Fatal("Lost not closed after release")
	}
	lb, err := b.Acquire(ctx, "olt-1", Info{ExecutionID: "exec-2"})
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	defer lb.Release(ctx)
	if lb.Revision() <= la.Revision() {
		t.Fatalf("fencing token did not grow: %d after %d", lb.Revision(), la.Revision())
	}
	if h := holderOf(t, kv, "olt-1"); h != "poller-b" {
		t.Fatalf("holder = %q", h)
	}
}

// Renewal by Update must keep the key alive well past the TTL: the trap in
// NOTES-JETSTREAM.md is a TTL that stops applying after an update, so the
// test also checks that the key still expires after renewals stop.
func TestRenewalKeepsLeaseAndExpiryStillAppliesAfterRenewal(t *testing.T) {
	kv, mgr := setup(t)
	a, b := mgr("poller-a"), mgr("poller-b")
	ctx := context.Background()

	la, err := a.Acquire(ctx, "olt-1", Info{ExecutionID: "exec-1"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * testTTL)
	if err := la.Err(); err != nil {
		t.Fatalf("lease lost while renewing: %v", err)
	}
	if _, err := b.Acquire(ctx, "olt-1", Info{}); !errors.Is(err, ErrHeld) {
		t.Fatalf("acquire while renewed: %v, want ErrHeld", err)
	}
	e, err := kv.Get(ctx, Key("olt-1"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Revision() == la.Revision() {
		t.Fatal("no renewal happened")
	}

	// The holder dies: renewals stop, nothing is released.
	la.Abandon()
	lb := acquireEventually(t, b, "olt-1", 20*testTTL)
	defer lb.Release(ctx)
	if lb.Revision() <= e.Revision() {
		t.Fatalf("new token %d not above the stale one %d", lb.Revision(), e.Revision())
	}
	if h := holderOf(t, kv, "olt-1"); h != "poller-b" {
		t.Fatalf("holder = %q", h)
	}

	// The stale holder can neither renew nor release the new holder's lease.
	if err := la.renew(); !errors.Is(err, ErrLost) {
		t.Fatalf("stale renew: %v, want ErrLost", err)
	}
	if err := la.Release(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("stale release: %v, want ErrLost", err)
	}
	if h := holderOf(t, kv, "olt-1"); h != "poller-b" {
		t.Fatalf("holder after stale release = %q", h)
	}
	if err := lb.Err(); err != nil {
		t.Fatalf("new holder disturbed: %v", err)
	}
}

func TestLossIsReported(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steal func(t *testing.T, kv jetstream.KeyValue)
	}{
		{"deleted", func(t *testing.T, kv jetstream.KeyValue) {
			if err := kv.Delete(context.Background(), Key("olt-1")); err != nil {
				t.Fatal(err)
			}
		}},
		{"overwritten", func(t *testing.T, kv jetstream.KeyValue) {
			if _, err := kv.Put(context.Background(), Key("olt-1"), []byte(`{"holder":"intruder"}`)); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv, mgr := setup(t)
			la, err := mgr("poller-a").Acquire(context.Background(), "olt-1", Info{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := la.Context(context.Background())
			defer cancel()
			tc.steal(t, kv)
			select {
			case <-la.Lost():
			case <-time.After(10 * testTTL):
				t.Fatal("loss not reported")
			}
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), ErrLost) || !errors.Is(la.Err(), ErrLost) {
				t.Fatalf("cause %v, err %v: want ErrLost", context.Cause(ctx), la.Err())
			}
			if err := la.Release(context.Background()); !errors.Is(err, ErrLost) {
				t.Fatalf("release after loss: %v", err)
			}
		})
	}
}

func TestNewManagerValidates(t *testing.T) {
	kv, _ := setup(t)
	for _, tc := range []struct {
		name   string
		kv     jetstream.KeyValue
		holder string
		ttl    time.Duration
		ok     bool
	}{
		{"ok", kv, "p", time.Second, true},
		{"nil kv", nil, "p", time.Second, false},
		{"no holder", kv, "", time.Second, false},
		{"tiny ttl", kv, "p", time.Millisecond, false},
	} {
		if _, err := NewManager(tc.kv, tc.holder, tc.ttl); (err == nil) != tc.ok {
			t.Errorf("%s: err=%v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// unreachableKV is a bucket whose renewals fail (NATS unreachable); it
// records the deadline of every renewal.
type unreachableKV struct {
	jetstream.KeyValue
	mu        sync.Mutex
	deadlines []time.Time
}

func (u *unreachableKV) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	d, _ := ctx.Deadline()
	u.mu.Lock()
	u.deadlines = append(u.deadlines, d)
	u.mu.Unlock()
	return 0, errors.New("nats: timeout")
}

// A holder that cannot renew must give the lease up before the key can
// expire and another poller take the OLT: no renewal may still be waiting
// for an answer past 2/3 of the TTL since the last one that succeeded.
func TestUnrenewableLeaseIsGivenUpBeforeItExpires(t *testing.T) {
	kv, _ := setup(t)
	u := &unreachableKV{KeyValue: kv}
	m, err := NewManager(u, "poller-a", testTTL)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Acquire(context.Background(), "olt-1", Info{})
	if err != nil {
		t.Fatal(err)
	}
	acquired := time.Now() // not before the lease's own clock started
	select {
	case <-l.Lost():
	case <-time.After(10 * testTTL):
		t.Fatal("loss not reported")
	}
	if !errors.Is(l.Err(), ErrLost) {
		t.Fatalf("err %v, want ErrLost", l.Err())
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.deadlines) == 0 {
		t.Fatal("no renewal was tried")
	}
	giveUp := acquired.Add(testTTL * 2 / 3)
	for i, d := range u.deadlines {
		if d.IsZero() || d.After(giveUp) {
			t.Errorf("renewal %d waits until %s, %s after the holder must have given up", i+1,
				d.Format("15:04:05.000"), d.Sub(giveUp))
		}
	}
}
