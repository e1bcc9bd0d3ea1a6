package trapd

import (
	"net/netip"
	"sync"
	"time"
)

// limiter is one token bucket per source address, so a flood from one
// source is shed without touching the others' budget. The map is bounded
// (maxSources); sources beyond the bound share one overflow bucket, and
// buckets idle for a minute are swept when the map is full.
type limiter struct {
	mu         sync.Mutex
	rate       float64 // tokens per second
	burst      float64
	maxSources int
	buckets    map[netip.Addr]*bucket
	overflow   bucket
	lastSweep  time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst, maxSources int) *limiter {
	return &limiter{rate: rate, burst: float64(burst), maxSources: maxSources,
		buckets: make(map[netip.Addr]*bucket, min(maxSources, 1024))}
}

// allow takes one token of addr's bucket at now; false: over its rate.
func (l *limiter) allow(addr netip.Addr, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[addr]
	if !ok {
		if len(l.buckets) >= l.maxSources {
			l.sweep(now)
		}
		if len(l.buckets) >= l.maxSources {
			b = &l.overflow
			if b.last.IsZero() {
				b.tokens, b.last = l.burst, now
			}
		} else {
			b = &bucket{tokens: l.burst, last: now}
			l.buckets[addr] = b
		}
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(l.burst, b.tokens+dt*l.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// sweep forgets the buckets idle long enough to be full again, at most
// once a second (the map is bounded, the sweep is O(map)).
func (l *limiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < time.Second {
		return
	}
	l.lastSweep = now
	idle := time.Duration(l.burst/l.rate*float64(time.Second)) + time.Minute
	for a, b := range l.buckets {
		if now.Sub(b.last) > idle {
			delete(l.buckets, a)
		}
	}
}

// sources is how many sources have their own bucket.
func (l *limiter) sources() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// logThrottle logs each drop reason at most once per period, with the
// number of drops left unlogged since.
type logThrottle struct {
	mu     sync.Mutex
	every  time.Duration
	last   map[string]time.Time
	missed map[string]int
}

func newLogThrottle(every time.Duration) *logThrottle {
	return &logThrottle{every: every, last: map[string]time.Time{}, missed: map[string]int{}}
}

// take says whether a line for reason may be logged at now, and how many
// were suppressed before it.
func (t *logThrottle) take(reason string, now time.Time) (bool, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if last, ok := t.last[reason]; ok && now.Sub(last) < t.every {
		t.missed[reason]++
		return false, 0
	}
	n := t.missed[reason]
	t.last[reason], t.missed[reason] = now, 0
	return true, n
}
