package projector

import (
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// TestTightInFlightBound: with the in-flight bound at its least (one
// group) and more workers than the bound lets be busy at once, the
// fetcher waits for slots instead of queueing: every batch is still
// applied once and in its OLT's order, so a rebuild equals what the live
// projection left (a deadlock fails waitLive; an order or loss bug fails
// liveVsRebuild).
func TestTightInFlightBound(t *testing.T) {
	r := newRig(t)
	g := &workGen{t: t, js: r.js, base: time.Now().UTC().Truncate(time.Second).Add(-time.Hour)}
	walks, olts := 160, 7
	if raceEnabled {
		walks = 40
	}
	batches := 0
	for w := 0; w < walks; w += 40 {
		batches += g.onuWalks(w, min(w+40, walks), olts)
		g.wait()
	}
	r.startWith(Config{Workers: 3, GroupMessages: 4, InFlightMessages: 4})
	r.waitLive(streams.StreamVarbinds, streams.ConsumerProjectorVarbinds, 5*time.Minute)
	t.Logf("%d varbind batches through 3 workers, at most 4 in flight", batches)
	r.liveVsRebuild(ReadModelONUData)
}
