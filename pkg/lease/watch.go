package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Expiry is a lease that ended by the bucket's TTL: its holder stopped
// renewing it (killed, frozen or cut off) and did not release it.
type Expiry struct {
	Key   string
	OLTID string
	// At is the time of the server's expiry marker.
	At time.Time
	// Record is the last value the watch saw under the key before it
	// expired, and Token its fencing token (the acquisition revision). Nil
	// and 0 when the marker was already there when the watch started: the
	// value is gone with the key, so the caller must find the holder's
	// attempt elsewhere (the execution stream).
	Record *Record
	Token  uint64
}

// WatchExpiries reports every lease expiry of kv to fn until ctx ends, and
// returns ctx's error. It needs the bucket's LimitMarkerTTL (see
// streams.LeaseBucketConfig): an expiry by TTL then leaves a marker that
// the KV watch sees as a purge, while a holder's Release is a delete. A
// marker that follows a release (the released key's delete marker aging out)
// is not an expiry and is not reported. Markers present when the watch
// starts are reported with a nil Record (the watch cannot tell them apart:
// the caller checks). fn runs on the watch's goroutine, one expiry at a
// time; if the watch breaks it is re-opened after retry, and the markers
// still in the bucket are reported again, so fn must be idempotent.
func WatchExpiries(ctx context.Context, kv jetstream.KeyValue, retry time.Duration, fn func(context.Context, Expiry)) error {
	if kv == nil || fn == nil {
		return errors.New("watch lease expiries: nil bucket or callback")
	}
	if retry <= 0 {
		retry = time.Second
	}
	for {
		err := watchOnce(ctx, kv, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_ = err // re-opened below; the caller logs nothing it could act on
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// seen is what the watch knows of one key.
type seen struct {
	rec   *Record
	token uint64
}

func watchOnce(ctx context.Context, kv jetstream.KeyValue, fn func(context.Context, Expiry)) error {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch lease bucket: %w", err)
	}
	defer func() { _ = w.Stop() }()
	held := map[string]seen{}
	initial := true
	for {
		var (
			e  jetstream.KeyValueEntry
			ok bool
		)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok = <-w.Updates():
		}
		if !ok {
			return errors.New("watch lease bucket: updates closed")
		}
		if e == nil {
			initial = false // every current value has been delivered
			continue
		}
		key := e.Key()
		if !strings.HasPrefix(key, keyPrefix) {
			continue
		}
		switch e.Operation() {
		case jetstream.KeyValuePut:
			var rec Record
			if json.Unmarshal(e.Value(), &rec) != nil {
				delete(held, key)
				continue
			}
			token := rec.Token
			if token == 0 {
				token = e.Revision() // the acquisition itself
			}
			held[key] = seen{rec: &rec, token: token}
		case jetstream.KeyValueDelete:
			delete(held, key) // released by its holder
		case jetstream.KeyValuePurge:
			// Facho never purges a lease: a purge is the server's marker
			// of an expiry by TTL.
			s, known := held[key]
			delete(held, key)
			if !known && !initial {
				continue // marker of a released key aging out
			}
			fn(ctx, Expiry{Key: key, OLTID: strings.TrimPrefix(key, keyPrefix), At: e.Created(), Record: s.rec, Token: s.token})
		}
	}
}

// Current reads who holds oltID's lease now: held is false when the key is
// absent, released or expired. token is the holder's fencing token.
func Current(ctx context.Context, kv jetstream.KeyValue, oltID string) (rec Record, token uint64, held bool, err error) {
	e, err := kv.Get(ctx, Key(oltID))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		return Record{}, 0, false, nil
	case err != nil:
		return Record{}, 0, false, fmt.Errorf("read lease %s: %w", Key(oltID), err)
	}
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return Record{}, 0, false, fmt.Errorf("read lease %s: %w", Key(oltID), err)
	}
	token = rec.Token
	if token == 0 {
		token = e.Revision()
	}
	return rec, token, true, nil
}
