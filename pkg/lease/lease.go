// Package lease holds one lease per OLT in the JetStream KV bucket
// streams.BucketLeases, so that only one heavy SNMP operation runs against an
// OLT at a time, across every poller replica.
//
// The bucket keeps History 1 and uses its TTL (MaxAge) as the lease TTL: a
// holder renews by Update(key, value, revision), a compare-and-swap that
// also restarts the bucket's age clock for the key. Per-key TTLs are not used
// because Update drops them (see NOTES-JETSTREAM.md, "KV leases").
//
// A lease does not stop a paused, stale holder by itself: Lease.Revision is a
// fencing token to carry in every event of the operation, so consumers can
// ignore events of a holder that lost its lease.
//
// A holder that dies leaves its key to expire. The bucket keeps limit
// markers (LimitMarkerTTL), so an expiry by TTL is seen by watchers as a
// purge while a Release is a delete: WatchExpiries reports expiries with
// the last record seen under the key (holder, execution, fencing token),
// which is how pollers end a dead holder's execution INTERRUPTED. The
// server keeps such a marker only about one TTL.
package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrHeld means another holder has the lease; errors.As a *HeldError to
// learn who.
var ErrHeld = errors.New("lease held by another holder")

// ErrLost means the lease is no longer ours: it expired, was taken over or
// was deleted.
var ErrLost = errors.New("lease lost")

// ErrReleased is the Err of a lease its holder released.
var ErrReleased = errors.New("lease released")

// HeldError says who holds the lease that could not be acquired.
type HeldError struct {
	Key         string
	Holder      string
	ExecutionID string
	Revision    uint64
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease %s held by %q (execution %q, revision %d)", e.Key, e.Holder, e.ExecutionID, e.Revision)
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Info says what the holder does under the lease; it is stored in the
// lease's value for operators. It must never carry a community.
type Info struct {
	ExecutionID string `json:"execution_id,omitempty"`
	JobID       string `json:"job_id,omitempty"`
}

// Record is the value stored under a lease key.
type Record struct {
	Holder     string    `json:"holder"`
	OLTID      string    `json:"olt_id"`
	Info       Info      `json:"info"`
	Token      uint64    `json:"token,omitempty"` // revision of the acquisition; 0 until the first renewal
	AcquiredAt time.Time `json:"acquired_at"`
	RenewedAt  time.Time `json:"renewed_at"`
}

// keyPrefix starts every lease key.
const keyPrefix = "olt."

// Key is the KV key of an OLT's lease.
func Key(oltID string) string { return keyPrefix + oltID }

// Manager acquires leases for one holder (a poller instance).
type Manager struct {
	kv     jetstream.KeyValue
	holder string
	ttl    time.Duration
}

// NewManager returns a manager for holder on kv. ttl must be the bucket's
// TTL: renewals run every ttl/3.
func NewManager(kv jetstream.KeyValue, holder string, ttl time.Duration) (*Manager, error) {
	switch {
	case kv == nil:
		return nil, errors.New("lease manager: nil key-value bucket")
	case holder == "":
		return nil, errors.New("lease manager: empty holder id")
	case ttl < 300*time.Millisecond:
		return nil, fmt.Errorf("lease manager: ttl %s too short", ttl)
	}
	return &Manager{kv: kv, holder: holder, ttl: ttl}, nil
}

// Open binds a manager to the bucket streams.Provision created, reading the
// lease TTL from the bucket so it cannot drift from the provisioned one.
func Open(ctx context.Context, js jetstream.JetStream, bucket, holder string) (*Manager, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("open lease bucket %s: %w", bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("status of lease bucket %s: %w", bucket, err)
	}
	if st.TTL() <= 0 {
		return nil, fmt.Errorf("lease bucket %s has no TTL: leases of dead holders would never expire", bucket)
	}
	return NewManager(kv, holder, st.TTL())
}

// Holder is the manager's holder id.
func (m *Manager) Holder() string { return m.holder }

// TTL is the lease TTL.
func (m *Manager) TTL() time.Duration { return m.ttl }

// Acquire takes the lease of oltID if nobody holds it and starts renewing it
// in the background until Release, Abandon or loss. When another holder has
// it, the error is a *HeldError (errors.Is(err, ErrHeld)).
func (m *Manager) Acquire(ctx context.Context, oltID string, info Info) (*Lease, error) {
	key := Key(oltID)
	now := time.Now().UTC()
	rec := Record{Holder: m.holder, OLTID: oltID, Info: info, AcquiredAt: now, RenewedAt: now}
	val, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("acquire lease %s: %w", key, err)
	}
	rev, err := m.kv.Create(ctx, key, val)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, m.heldBy(ctx, key)
		}
		return nil, fmt.Errorf("acquire lease %s: %w", key, err)
	}
	rec.Token = rev
	l := &Lease{
		m:        m,
		key:      key,
		rec:      rec,
		token:    rev,
		rev:      rev,
		lastOK:   now, // before Create: the key's clock started later
		lost:     make(chan struct{}),
		stop:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	go l.renewLoop()
	return l, nil
}

// heldBy reads who holds key, for the error message.
func (m *Manager) heldBy(ctx context.Context, key string) error {
	he := &HeldError{Key: key}
	e, err := m.kv.Get(ctx, key)
	if err != nil {
		// Gone between Create and Get: still busy from the caller's view,
		// the next attempt will likely win.
		he.Holder = "unknown"
		return he
	}
	he.Revision = e.Revision()
	var rec Record
	if json.Unmarshal(e.Value(), &rec) == nil {
		he.Holder, he.ExecutionID = rec.Holder, rec.Info.ExecutionID
	}
	return he
}

// Lease is one acquired OLT lease.
type Lease struct {
	m     *Manager
	key   string
	token uint64

	mu      sync.Mutex
	rec     Record
	rev     uint64 // current revision, advanced by each renewal
	lastOK  time.Time
	lostErr error

	lost      chan struct{}
	lostOnce  sync.Once
	stop      chan struct{}
	stopOnce  sync.Once
	loopDone  chan struct{}
	releaseMu sync.Mutex
}

// Key is the lease's KV key.
func (l *Lease) Key() string { return l.key }

// Revision is the fencing token: the KV revision at acquisition. It never
// changes while the lease is held, and any later acquisition of the same
// key gets a higher one (revisions are stream sequences).
func (l *Lease) Revision() uint64 { return l.token }

// Lost is closed when the lease is lost (renewal refused, key gone, or no
// successful renewal for most of the TTL) or released.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err is nil while the lease is held; it wraps ErrLost once the lease is
// lost and is ErrReleased after Release.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// Context returns a child of parent cancelled (with cause ErrLost) when the
// lease is lost.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-l.lost:
			cancel(l.Err())
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

func (l *Lease) markLost(err error) {
	l.lostOnce.Do(func() {
		l.mu.Lock()
		l.lostErr = err
		l.mu.Unlock()
		close(l.lost)
	})
}

// renewLoop renews every ttl/3; a refused compare-and-swap means someone
// else has the key (or it expired), so the lease is lost at once. Transport
// errors are retried until no renewal succeeded for 2/3 of the TTL: by then
// the key may expire any moment, so we stop trusting it. No renewal waits
// past that point (see renew), so the loss is known a third of the TTL
// before another holder can take the key.
func (l *Lease) renewLoop() {
	defer close(l.loopDone)
	every := l.m.ttl / 3
	retry := l.m.ttl / 10
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.lost:
			return
		case <-t.C:
		}
		err := l.renew()
		switch {
		case err == nil:
			t.Reset(every)
		case errors.Is(err, ErrLost):
			l.markLost(err)
			return
		default:
			l.mu.Lock()
			since := time.Since(l.lastOK)
			l.mu.Unlock()
			if since >= l.trustFor() {
				l.markLost(fmt.Errorf("%w: no renewal of %s for %s: %v", ErrLost, l.key, since.Round(time.Millisecond), err))
				return
			}
			t.Reset(min(retry, l.trustFor()-since))
		}
	}
}

// trustFor is how long after the last successful renewal the lease is
// still trusted.
func (l *Lease) trustFor() time.Duration { return l.m.ttl * 2 / 3 }

// renew is one compare-and-swap renewal. It waits ttl/3 at most, and never
// past the moment the lease stops being trusted: a renewal still waiting
// then would keep a holder working on an OLT whose key may have expired and
// been taken.
func (l *Lease) renew() error {
	l.mu.Lock()
	rec := l.rec
	rev := l.rev
	lastOK := l.lastOK
	l.mu.Unlock()
	now := time.Now()
	deadline := lastOK.Add(l.trustFor())
	if !now.Before(deadline) {
		return fmt.Errorf("%w: no renewal of %s for %s", ErrLost, l.key, now.Sub(lastOK).Round(time.Millisecond))
	}
	if d := now.Add(l.m.ttl / 3); d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	rec.RenewedAt = time.Now().UTC()
	val, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("renew lease %s: %w", l.key, err)
	}
	newRev, err := l.m.kv.Update(ctx, l.key, val, rev)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("%w: renew %s at revision %d refused: %v", ErrLost, l.key, rev, err)
		}
		return fmt.Errorf("renew lease %s: %w", l.key, err)
	}
	l.mu.Lock()
	// The key's clock restarted when the server stored the update, after
	// now: counting from now keeps the trust window on the safe side.
	l.rev, l.rec, l.lastOK = newRev, rec, now
	l.mu.Unlock()
	return nil
}

// stopRenewing ends the renew loop and waits for it.
func (l *Lease) stopRenewing() {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.loopDone
}

// Release stops renewing and deletes the key if it is still ours (Delete
// with LastRevision). It returns an error wrapping ErrLost when the lease
// was already lost or taken over; it is safe to call more than once.
func (l *Lease) Release(ctx context.Context) error {
	l.releaseMu.Lock()
	defer l.releaseMu.Unlock()
	l.stopRenewing()
	if err := l.Err(); err != nil {
		if errors.Is(err, ErrReleased) {
			return nil
		}
		return err
	}
	l.mu.Lock()
	rev := l.rev
	l.mu.Unlock()
	err := l.m.kv.Delete(ctx, l.key, jetstream.LastRevision(rev))
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			err = fmt.Errorf("%w: release %s at revision %d refused: %v", ErrLost, l.key, rev, err)
			l.markLost(err)
			return err
		}
		return fmt.Errorf("release lease %s: %w", l.key, err)
	}
	l.markLost(ErrReleased)
	return nil
}

// Abandon stops renewing without releasing, as a holder that died would:
// the key expires after the TTL. For tests and for shutdown paths that
// cannot reach the server.
func (l *Lease) Abandon() { l.stopRenewing() }
