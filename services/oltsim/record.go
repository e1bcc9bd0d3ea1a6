package oltsim

import (
	"sync"
	"time"
)

// ConcurrencySample is the number of requests in flight right after a
// request started or finished.
type ConcurrencySample struct {
	At       time.Time `json:"at"`
	InFlight int       `json:"in_flight"`
}

// RateBucket counts requests received in one wall-clock second.
type RateBucket struct {
	Second   time.Time `json:"second"`
	Requests int       `json:"requests"`
}

// Record is a snapshot of what one OLT saw. A request is in flight from the
// moment it is read off the socket until its response is handed to the
// socket (injected latency included) or it is dropped.
type Record struct {
	Requests      int                 `json:"requests"`
	Responses     int                 `json:"responses"`
	Dropped       int                 `json:"dropped"`
	BytesIn       int                 `json:"bytes_in"`
	BytesOut      int                 `json:"bytes_out"`
	MaxConcurrent int                 `json:"max_concurrent"`
	InFlight      int                 `json:"in_flight"`
	Timeline      []ConcurrencySample `json:"timeline"`
	PerSecond     []RateBucket        `json:"per_second"`
}

const (
	maxTimeline = 8192
	maxBuckets  = 3600
)

type recorder struct {
	mu       sync.Mutex
	r        Record
	inFlight int
}

// begin registers a request read off the socket; it returns the number in
// flight including this one.
func (rc *recorder) begin(now time.Time, n int) int {
	rc.mu.Lock()
	rc.inFlight++
	in := rc.inFlight
	rc.r.Requests++
	rc.r.BytesIn += n
	if in > rc.r.MaxConcurrent {
		rc.r.MaxConcurrent = in
	}
	rc.sample(now, in)
	sec := now.Truncate(time.Second)
	if k := len(rc.r.PerSecond); k > 0 && rc.r.PerSecond[k-1].Second.Equal(sec) {
		rc.r.PerSecond[k-1].Requests++
	} else {
		if k >= maxBuckets {
			rc.r.PerSecond = append(rc.r.PerSecond[:0], rc.r.PerSecond[k-maxBuckets/2:]...)
		}
		rc.r.PerSecond = append(rc.r.PerSecond, RateBucket{Second: sec, Requests: 1})
	}
	rc.mu.Unlock()
	return in
}

// end closes a request: answered with n bytes, or dropped.
func (rc *recorder) end(now time.Time, n int, dropped bool) {
	rc.mu.Lock()
	rc.inFlight--
	if dropped {
		rc.r.Dropped++
	} else {
		rc.r.Responses++
		rc.r.BytesOut += n
	}
	rc.sample(now, rc.inFlight)
	rc.mu.Unlock()
}

func (rc *recorder) sample(now time.Time, in int) {
	if len(rc.r.Timeline) >= maxTimeline {
		rc.r.Timeline = append(rc.r.Timeline[:0], rc.r.Timeline[maxTimeline/2:]...)
	}
	rc.r.Timeline = append(rc.r.Timeline, ConcurrencySample{At: now, InFlight: in})
}

func (rc *recorder) snapshot() Record {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := rc.r
	out.InFlight = rc.inFlight
	out.Timeline = append([]ConcurrencySample(nil), rc.r.Timeline...)
	out.PerSecond = append([]RateBucket(nil), rc.r.PerSecond...)
	return out
}

// reset clears counters; requests in flight stay counted as in flight.
func (rc *recorder) reset() {
	rc.mu.Lock()
	rc.r = Record{MaxConcurrent: rc.inFlight}
	rc.mu.Unlock()
}

// counters is a cheap snapshot without the timeline, for metrics.
func (rc *recorder) counters() Record {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := rc.r
	out.InFlight = rc.inFlight
	out.Timeline, out.PerSecond = nil, nil
	return out
}
