package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// Workflows (seed 004): the master carries its chain; a chained job is not
// planned on its own on that OLT; disabling or deleting the workflow makes
// them plain nodes again.
func TestWorkflowComposite(t *testing.T) {
	master := NodeKey{JobID: "j1", OLTID: "olt-a"}
	chained := NodeKey{JobID: "j2", OLTID: "olt-a"}
	elsewhere := NodeKey{JobID: "j2", OLTID: "olt-b"}
	base := append(baseEvents(),
		streams.OLTUpserted{ID: "olt-b", Name: "B", IP: "10.0.0.2", Port: 161, BrandID: "huawei", CommunityEnc: "v1:x", Enabled: true},
		streams.JobUpserted{ID: "j2", Name: "status", BrandID: "huawei", Kind: streams.KindBulkWalk, OIDIDs: []string{"o1"}, IntervalSeconds: 60, Priority: 40, Enabled: true},
		streams.JobUpserted{ID: "j3", Name: "rx", BrandID: "huawei", Kind: streams.KindGet, OIDIDs: []string{"o1"}, IntervalSeconds: 60, Priority: 40, Enabled: true, TimeoutSeconds: 7},
		streams.JobOLTAssigned{JobID: "j2", OLTID: "olt-a", Enabled: true},
		streams.JobOLTAssigned{JobID: "j2", OLTID: "olt-b", Enabled: true},
	)
	wf := streams.WorkflowUpserted{ID: "wf", OLTID: "olt-a", MasterJobID: "j1", ChainJobIDs: []string{"j2", "j3", "nope"}, StopOnFailure: true, Enabled: true}
	for _, tc := range []struct {
		name        string
		then        []streams.Event
		wantChain   []string
		wantChained bool // the chained job plannable on its own on olt-a
		why         string
	}{
		{name: "enabled workflow", then: []streams.Event{wf}, wantChain: []string{"j2", "j3"}, why: "chained after j1 in workflow wf"},
		{name: "disabled workflow", then: []streams.Event{func() streams.WorkflowUpserted { w := wf; w.Enabled = false; return w }()}, wantChained: true},
		{name: "deleted workflow", then: []streams.Event{wf, streams.WorkflowDeleted{ID: "wf"}}, wantChained: true},
		{name: "chained job disabled: left out of the chain", then: []streams.Event{wf,
			streams.JobUpserted{ID: "j3", Name: "rx", BrandID: "huawei", Kind: streams.KindGet, OIDIDs: []string{"o1"}, IntervalSeconds: 60}},
			wantChain: []string{"j2"}, why: "chained after j1 in workflow wf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newState(timeouts{discovery: 300, poll: 60})
			at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
			for _, ev := range append(append([]streams.Event{}, base...), tc.then...) {
				if _, err := s.apply(env(t, at, ev)); err != nil {
					t.Fatal(err)
				}
			}
			spec, ok := s.nodeSpec(master)
			if !ok {
				t.Fatal("master not plannable")
			}
			var chain []string
			for _, c := range spec.Chain {
				chain = append(chain, c.JobID)
			}
			if fmt.Sprint(chain) != fmt.Sprint(tc.wantChain) {
				t.Fatalf("chain %v, want %v", chain, tc.wantChain)
			}
			if len(spec.Chain) > 0 && (!spec.StopOnFailure || spec.WorkflowID != "wf" || spec.Chain[len(spec.Chain)-1].TimeoutSeconds == 0) {
				t.Errorf("composite spec %+v", spec)
			}
			if _, ok := s.nodeSpec(chained); ok != tc.wantChained {
				t.Fatalf("chained job plannable on its own: %v, want %v", ok, tc.wantChained)
			}
			if tc.why != "" && s.why(chained) != tc.why {
				t.Errorf("why %q, want %q", s.why(chained), tc.why)
			}
			if _, ok := s.nodeSpec(elsewhere); !ok {
				t.Fatal("the chained job on another OLT must stay a plain node")
			}
			_, plannable := s.since[chained]
			if plannable != tc.wantChained {
				t.Fatalf("since tracks the chained node: %v, want %v", plannable, tc.wantChained)
			}
		})
	}
}

// A composite's flight ends when the master and every chained execution
// have ended, whatever their order; the master's status and the latest end
// are what the schedule sees.
func TestCompositeFlight(t *testing.T) {
	q := NewQueues(2 * time.Second)
	q.Push(DueNode{Key: NodeKey{JobID: "j1", OLTID: "olt-a"}, Spec: spec(60, 90), ScheduledAt: t0})
	q.Ready(t0)
	q.Dispatched("olt-a", "m", "c1", "c2")
	if _, done, ok := q.Finish("olt-a", "m", "FAILED", t0.Add(time.Second)); !ok || done {
		t.Fatalf("after the master: ok %v done %v", ok, done)
	}
	if _, done, ok := q.Finish("olt-a", "c2", "SUCCESS", t0.Add(3*time.Second)); !ok || done {
		t.Fatalf("after c2: ok %v done %v", ok, done)
	}
	if _, _, ok := q.Finish("olt-a", "c2", "SUCCESS", t0.Add(3*time.Second)); ok {
		t.Fatal("a duplicate terminal event counted twice")
	}
	f, done, ok := q.Finish("olt-a", "c1", "SUCCESS", t0.Add(2*time.Second))
	if !ok || !done || f.MasterStatus != "FAILED" || !f.End.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("composite end %+v done %v ok %v", f, done, ok)
	}
	if q.InFlight() != 0 {
		t.Fatal("the OLT is still busy")
	}
}
