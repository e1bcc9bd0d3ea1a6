package poller

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// Classes: a flood of slow discoveries does not delay polling beyond its
// own limit. More slow discoveries (latency fault) than the discovery
// limit are due when polls of other OLTs become due: every poll starts
// within its class's bound (a fetch wait, not behind the discoveries), and
// no class ever runs more nodes at once than its limit.
func TestClassesFloodOfSlowDiscoveries(t *testing.T) {
	const (
		discoveries = 6
		polls       = 5
		pollBound   = 2500 * time.Millisecond // FetchWait (1s) + a walk's start, with room for a loaded CI
	)
	var olts []oltsim.OLTConfig
	for i := range discoveries {
		olts = append(olts, huaweiOLT(fmt.Sprintf("slow-%d", i), oltsim.Faults{Latency: 150 * time.Millisecond}))
	}
	for i := range polls {
		olts = append(olts, huaweiOLT(fmt.Sprintf("fast-%d", i), oltsim.Faults{}))
	}
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, olts...)
	publish := func(n streams.NodeDue) {
		t.Helper()
		b, err := streams.EncodeWithID(n.ExecutionID, "test", time.Now(), n)
		if err != nil {
			t.Fatal(err)
		}
		e.publishRaw(t, streams.SubjectNodeDueClass(n.OLTID, n.Class), b)
	}
	cfg := Config{PollerID: "p1"} // seed 001's limits: discovery 2, polling 5, retry 2, high 2
	_, _ = e.startPoller(t, cfg)

	for i := range discoveries {
		olt := fmt.Sprintf("slow-%d", i)
		n := e.nodeDue(olt, "disc-"+olt, "job-disc")
		n.Kind, n.Class, n.TimeoutSeconds = streams.KindDiscovery, streams.ClassDiscovery, 0
		publish(n)
	}
	// The discovery limit is reached before the polls are due.
	waitFor(t, 20*time.Second, "two discoveries running", func() bool {
		running := 0
		for i := range discoveries {
			if len(e.execEvents(t, fmt.Sprintf("slow-%d", i), fmt.Sprintf("disc-slow-%d", i)).started) > 0 {
				running++
			}
		}
		return running >= 2
	})
	pollsDue := time.Now()
	for i := range polls {
		olt := fmt.Sprintf("fast-%d", i)
		n := e.nodeDue(olt, "poll-"+olt, "job-poll")
		n.Class, n.TimeoutSeconds = streams.ClassPolling, 0 // a bulkwalk: the polling class
		n.ScheduledAt = pollsDue.UTC()
		publish(n)
	}

	type span struct{ start, end time.Time }
	ended := func(olt, exec string) (span, bool) {
		ev := e.execEvents(t, olt, exec)
		if len(ev.succeeded) > 0 {
			return span{ev.succeeded[0].StartedAt, ev.succeeded[0].FinishedAt}, true
		}
		if len(ev.failed) > 0 {
			t.Fatalf("%s failed: %+v", exec, ev.failed[0])
		}
		return span{}, false
	}
	var pollSpans, discSpans []span
	waitFor(t, 90*time.Second, "every poll and discovery done", func() bool {
		pollSpans, discSpans = pollSpans[:0], discSpans[:0]
		for i := range polls {
			olt := fmt.Sprintf("fast-%d", i)
			if s, ok := ended(olt, "poll-"+olt); ok {
				pollSpans = append(pollSpans, s)
			}
		}
		for i := range discoveries {
			olt := fmt.Sprintf("slow-%d", i)
			if s, ok := ended(olt, "disc-"+olt); ok {
				discSpans = append(discSpans, s)
			}
		}
		return len(pollSpans) == polls && len(discSpans) == discoveries
	})

	lastDisc := time.Time{}
	for _, s := range discSpans {
		if s.end.After(lastDisc) {
			lastDisc = s.end
		}
	}
	var worst time.Duration
	for i, s := range pollSpans {
		wait := s.start.Sub(pollsDue)
		worst = max(worst, wait)
		if wait > pollBound {
			t.Errorf("poll %d started %s after it was due (bound %s): it waited behind the discoveries", i, wait, pollBound)
		}
		if !s.end.Before(lastDisc) {
			t.Errorf("poll %d ended at %s, after the last discovery (%s)", i, s.end, lastDisc)
		}
	}
	if got := maxOverlap(discSpans, func(s span) (time.Time, time.Time) { return s.start, s.end }); got > 2 {
		t.Errorf("%d discoveries ran at once, limit 2", got)
	}
	if got := maxOverlap(pollSpans, func(s span) (time.Time, time.Time) { return s.start, s.end }); got > 5 {
		t.Errorf("%d polls ran at once, limit 5", got)
	}
	// The simulator saw the work: every OLT was walked.
	for _, o := range olts {
		if r := e.fleet.OLT(o.Name).Record(); r.Requests == 0 {
			t.Errorf("olt %s: no SNMP request", o.Name)
		}
	}
	t.Logf("%d slow discoveries (limit 2) took until +%s; %d polls started at most %s after due (bound %s)",
		discoveries, lastDisc.Sub(pollsDue).Round(time.Millisecond), polls, worst.Round(time.Millisecond), pollBound)
}

// maxOverlap is the most spans open at one instant.
func maxOverlap[S any](spans []S, bounds func(S) (time.Time, time.Time)) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, s := range spans {
		a, b := bounds(s)
		edges = append(edges, edge{a, 1}, edge{b, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].delta < edges[j].delta // an end before a start at the same instant
		}
		return edges[i].at.Before(edges[j].at)
	})
	open, most := 0, 0
	for _, e := range edges {
		open += e.delta
		most = max(most, open)
	}
	return most
}
