package oltsim

import (
	"math/rand/v2"
	"sync"
	"time"
)

// faultState applies an OLT's Faults with its own deterministic RNG.
type faultState struct {
	mu        sync.Mutex
	f         Faults
	rng       *rand.Rand
	rpsSecond int64
	rpsCount  int
}

func newFaultState(f Faults, seed int64) *faultState {
	return &faultState{f: f, rng: rand.New(rand.NewPCG(uint64(seed), 0x6661756c7473))}
}

func (fs *faultState) set(f Faults) {
	fs.mu.Lock()
	fs.f = f
	fs.mu.Unlock()
}

func (fs *faultState) get() Faults {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.f
}

// verdict is what happens to one request.
type verdict struct {
	drop      bool
	delay     time.Duration
	malformed bool
	corrupt   uint64 // random bits choosing how to corrupt
	// maxVarbinds > 0: a request with more varbinds gets no answer.
	maxVarbinds int
	// echoNext: GETNEXT and GETBULK answer the OIDs asked (Faults.OIDNotIncreasing).
	echoNext bool
}

// decide draws the fate of a request that arrived at now with inFlight
// requests in flight (itself included).
func (fs *faultState) decide(now time.Time, inFlight int) verdict {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := &fs.f
	var v verdict
	if f.NoAnswer {
		v.drop = true
		return v
	}
	if f.MaxRPS > 0 {
		sec := now.Unix()
		if sec != fs.rpsSecond {
			fs.rpsSecond, fs.rpsCount = sec, 0
		}
		fs.rpsCount++
		if fs.rpsCount > f.MaxRPS {
			v.drop = true
			return v
		}
	}
	if f.LossPercent > 0 && fs.rng.Float64()*100 < f.LossPercent {
		v.drop = true
		return v
	}
	v.delay = f.Latency
	v.maxVarbinds = f.MaxVarbinds
	v.echoNext = f.OIDNotIncreasing
	if f.Jitter > 0 {
		v.delay += time.Duration(fs.rng.Int64N(int64(f.Jitter)))
	}
	if f.SlowdownPerConcurrent > 0 && inFlight > 1 {
		v.delay += time.Duration(inFlight-1) * f.SlowdownPerConcurrent
	}
	if f.MalformedPercent > 0 && fs.rng.Float64()*100 < f.MalformedPercent {
		v.malformed = true
		v.corrupt = fs.rng.Uint64()
	}
	return v
}

// corrupt damages a response so that a BER decoder rejects it: either it is
// truncated, or the outer length claims more bytes than sent.
func corrupt(resp []byte, bits uint64) []byte {
	if len(resp) < 4 {
		return resp
	}
	if bits&1 == 0 {
		cut := 2 + int(bits>>8)%(len(resp)/2)
		return resp[:cut]
	}
	// Outer SEQUENCE length: make it claim 0x7f more bytes in long form.
	out := make([]byte, 0, len(resp)+4)
	out = append(out, tagSequence, 0x84, 0x7f, 0xff, 0xff, 0xff)
	d := decoder{b: resp}
	if _, c, err := d.next(); err == nil {
		out = append(out, c...)
	}
	return out
}

// echoNext answers a GETNEXT or GETBULK request with the OIDs it asked,
// each once with the value Integer 0, as a broken agent whose OIDs do not
// increase does (Faults.OIDNotIncreasing); it returns nil for other
// requests, which are answered normally.
func echoNext(r *request) []byte {
	if r.pdu != pduGetNext && r.pdu != pduGetBulk {
		return nil
	}
	h := headroomFor(r)
	b := make([]byte, h, h+64+len(r.oids)*48)
	for _, raw := range r.rawOIDs {
		b = append(b, tagSequence)
		b = appendLen(b, len(raw)+3)
		b = append(b, raw...)
		b = append(b, tagInteger, 1, 0)
	}
	return finish(r, b, h, 0, 0)
}
