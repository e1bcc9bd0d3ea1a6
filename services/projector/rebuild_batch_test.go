package projector

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/streams"
)

// mixedExecs publishes executions [0, n) in every shape the executions
// projection knows, in stream order as they could arrive: retries (the
// retry skipped or aborted, or a stale skip of the failed attempt while it
// runs), skipped, aborted (before it started, after a lost attempt, while
// a lost attempt still shows RUNNING, and a stale abort after a success),
// interrupted (of the current attempt and of a superseded one),
// redeliveries, stale lease revisions, a terminal event before its start,
// NodeDue redelivered or missing, gets with per-ONU failures,
// dead-lettered batches and malformed messages. It returns the
// exec-stream events published (executions [from, to)).
func (g *workGen) mixedExecs(from, to int) int {
	events := 0
	exec := func(subject string, ev streams.Event) {
		g.pub(subject, ev)
		events++
	}
	for i := from; i < to; i++ {
		olt := fmt.Sprintf("olt-%d", i%7)
		id := fmt.Sprintf("exec-%06d", i)
		at := g.base.Add(time.Duration(i) * time.Millisecond)
		rev := uint64(i + 1)
		due := streams.NodeDue{ExecutionID: id, NodeID: "node-" + olt, JobID: "job-1", OLTID: olt, Kind: "get", Priority: 40,
			ScheduledAt: at, DelaySeconds: float64(i%3) / 2, Target: streams.Target{Host: "192.0.2.1", Port: 161, CommunityEnc: "sealed"},
			OIDs: []streams.OIDSpec{{ID: "oid-1", OID: "1.3.6.1.2.1.1.5.0", Field: "description"}}}
		started := func(a int, rev uint64) {
			exec(streams.SubjectExec(olt, streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: id, JobID: "job-1", OLTID: olt,
				PollerID: fmt.Sprintf("poller-%d", a), Attempt: a, LeaseRevision: rev, StartedAt: at.Add(time.Duration(a) * time.Second)})
		}
		succeeded := func(a int, rev uint64) {
			ev := streams.ExecutionSucceeded{ExecutionID: id, JobID: "job-1", OLTID: olt, PollerID: fmt.Sprintf("poller-%d", a), Attempt: a,
				LeaseRevision: rev, StartedAt: at.Add(time.Duration(a) * time.Second), FinishedAt: at.Add(time.Duration(a)*time.Second + 500*time.Millisecond),
				DurationMS: 500, Varbinds: 64 + i%5}
			if i%3 == 0 {
				ev.ONUs, ev.FailedONUs, ev.FailedVarbinds = 16, 1, 2
				ev.ONUFailures = []streams.ONUFailure{{Instance: "4194304000.3", PonIndex: 4194304000, ONUID: 3, OIDs: []string{"1.3.6.1.2.1.1.5.0.3"}, Error: "noSuchInstance"}}
			}
			exec(streams.SubjectExec(olt, streams.PhaseSucceeded), ev)
		}
		failed := func(a int, rev uint64, retryable bool) {
			exec(streams.SubjectExec(olt, streams.PhaseFailed), streams.ExecutionFailed{ExecutionID: id, JobID: "job-1", OLTID: olt,
				PollerID: fmt.Sprintf("poller-%d", a), Attempt: a, LeaseRevision: rev, StartedAt: at.Add(time.Duration(a) * time.Second),
				FinishedAt: at.Add(time.Duration(a)*time.Second + time.Second), DurationMS: 1000, Error: "timeout", Retryable: retryable,
				Cause: causeOf(retryable)})
		}
		interrupted := func(a int, rev uint64) {
			exec(streams.SubjectExec(olt, streams.PhaseInterrupted), streams.ExecutionInterrupted{ExecutionID: id, JobID: "job-1", OLTID: olt,
				PollerID: fmt.Sprintf("poller-%d", a), Attempt: a, LeaseRevision: rev, StartedAt: at.Add(time.Duration(a) * time.Second),
				InterruptedAt: at.Add(time.Duration(a)*time.Second + 3*time.Second), DetectedBy: "planner", Reason: "lease expired"})
		}
		// aborted: a delivery the planner cancelled, after what ran (no
		// attempt: the abort carries none).
		aborted := func() {
			exec(streams.SubjectExec(olt, streams.PhaseAborted), streams.ExecutionAborted{ExecutionID: id, JobID: "job-1", OLTID: olt,
				PollerID: "poller-8", AbortedAt: at.Add(time.Minute), Reason: "task disabled"})
		}
		switch i % 12 {
		case 0: // a get that read all but one ONU
			g.pub(streams.SubjectNodeDue(olt), due)
			started(1, rev)
			succeeded(1, rev)
		case 1: // retried; or the retry skipped or aborted; or a stale skip while it runs
			g.pub(streams.SubjectNodeDue(olt), due)
			started(1, rev)
			failed(1, rev, true)
			skipped := func(a int) {
				exec(streams.SubjectExec(olt, streams.PhaseSkipped), streams.ExecutionSkipped{ExecutionID: id, JobID: "job-1", OLTID: olt,
					PollerID: "poller-9", Attempt: a, ScheduledAt: at, SkippedAt: at.Add(time.Minute), Reason: "superseded"})
			}
			switch i / 12 % 3 {
			case 1: // the retry skipped: SKIPPED, its duplicate ignored
				skipped(2)
				skipped(2)
				continue
			case 2: // a stale skip of attempt 1 while attempt 2 runs
				started(2, rev+1)
				skipped(1)
				succeeded(2, rev+1)
				continue
			}
			if i/36%2 == 1 { // the retry aborted: ABORTED, then a duplicate and a late failure
				aborted()
				aborted()
				failed(1, rev, true)
				continue
			}
			started(2, rev+1)
			succeeded(2, rev+1)
		case 2: // skipped before it started
			g.pub(streams.SubjectNodeDue(olt), due)
			exec(streams.SubjectExec(olt, streams.PhaseSkipped), streams.ExecutionSkipped{ExecutionID: id, JobID: "job-1", OLTID: olt,
				PollerID: "poller-1", ScheduledAt: at, SkippedAt: at.Add(time.Second), Reason: "superseded"})
		case 3: // aborted, then a late start (stale: aborted is final)
			g.pub(streams.SubjectNodeDue(olt), due)
			exec(streams.SubjectExec(olt, streams.PhaseAborted), streams.ExecutionAborted{ExecutionID: id, JobID: "job-1", OLTID: olt,
				PollerID: "poller-1", AbortedAt: at.Add(time.Second), Reason: "OLT disabled"})
			started(1, rev)
		case 4: // interrupted, then a second attempt that fails for good; or its redelivery aborted
			g.pub(streams.SubjectNodeDue(olt), due)
			started(1, rev)
			interrupted(1, rev)
			if i/12%2 == 1 {
				aborted()
				continue
			}
			started(2, rev+1)
			failed(2, rev+1, false)
		case 5: // redelivered: a duplicate success and a stale start (and a stale abort)
			g.pub(streams.SubjectNodeDue(olt), due)
			started(1, rev)
			succeeded(1, rev)
			succeeded(1, rev)
			started(1, rev-1)
			if i/12%2 == 1 {
				aborted()
			}
		case 6: // the success before its start, no NodeDue at all
			succeeded(1, rev)
			started(1, rev)
		case 7: // the interruption of a superseded attempt arrives late
			g.pub(streams.SubjectNodeDue(olt), due)
			started(1, rev)
			started(2, rev+1)
			interrupted(1, rev)
			succeeded(2, rev+1)
		case 8: // NodeDue redelivered with other queue fields, after the start
			started(1, rev)
			g.pub(streams.SubjectNodeDue(olt), due)
			due.Priority, due.DelaySeconds, due.ScheduledAt = 90, 7, at.Add(time.Minute)
			g.pub(streams.SubjectNodeDue(olt), due)
			succeeded(1, rev)
		case 9: // its batches dead-lettered (one in ten): a success that is a failure
			g.pub(streams.SubjectNodeDue(olt), due)
			started(1, rev)
			succeeded(1, rev)
			batches := 1 + i/120%2
			if g.oneDeadLetter {
				batches = 1
			}
			for b := 0; i%120 == 9 && b < batches; b++ {
				g.pub(streams.SubjectDLQ(streams.ConsumerProjectorVarbinds), streams.DeadLetter{Consumer: streams.ConsumerProjectorVarbinds,
					Stream: streams.StreamVarbinds, StreamSeq: uint64(i*2 + b + 1), Subject: streams.SubjectVarbinds(olt), Reason: "bad batch",
					Deliveries: 1, OriginalType: streams.TypeVarbindBatch, OLTID: olt, ExecutionID: id, ReceivedAt: at})
			}
		case 10: // still running; an old lease's interruption is ignored; or aborted, its lease lost (interrupted after)
			g.pub(streams.SubjectNodeDue(olt), due)
			started(1, rev)
			interrupted(1, rev-1)
			if i/12%2 == 1 {
				aborted()
				interrupted(1, rev)
			}
		case 11: // malformed: not an envelope; an event on another OLT's subject
			g.publishRaw(streams.SubjectExec(olt, streams.PhaseStarted), []byte(`{"not":"an envelope"}`))
			events++
			exec(streams.SubjectExec("olt-x", streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: id, JobID: "job-1", OLTID: olt,
				PollerID: "poller-1", Attempt: 1, LeaseRevision: rev, StartedAt: at})
		}
	}
	return events
}

func (g *workGen) publishRaw(subject string, b []byte) {
	f, err := g.js.PublishAsync(subject, b)
	if err != nil {
		g.t.Fatal(err)
	}
	g.futs = append(g.futs, f)
}

// TestRebuildBatchEqualsPerMessage rebuilds executions from more than
// 100,000 exec events of every shape (mixedExecs, with their NodeDue and
// dead letters) twice: message by message (RebuildOptions.PerMessage:
// each message's Change.Apply, the live projection's own statements, as
// the live consumers run them) into the empty live tables, then with the
// set-based ApplyBatch; the second rebuild must find every table identical,
// row for row, and count the messages the same way. Under the race
// detector a tenth of the events.
func TestRebuildBatchEqualsPerMessage(t *testing.T) {
	r := newRig(t)
	g := &workGen{t: t, js: r.js, base: time.Now().UTC().Truncate(time.Second).Add(-time.Hour)}
	execs, wantEvents := 39600, 100000
	if raceEnabled {
		execs, wantEvents = 3960, 10000
	}
	n := 0
	for from := 0; from < execs; from += 1200 {
		n += g.mixedExecs(from, min(from+1200, execs))
		g.wait()
	}
	if n < wantEvents {
		t.Fatalf("only %d exec events", n)
	}
	ctx := context.Background()
	model := r.readModel(ReadModelExecutions)
	start := time.Now()
	ref, err := replay.Rebuild(ctx, r.js, r.pool, model, replay.RebuildOptions{PerMessage: true, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("message by message: %s", ref.String())
	t.Logf("%.0f msg/s", float64(ref.Messages)/time.Since(start).Seconds())
	if !ref.Swapped {
		t.Fatalf("reference rebuild not swapped in: %v", ref)
	}
	start = time.Now()
	rep, err := replay.Rebuild(ctx, r.js, r.pool, model, replay.RebuildOptions{DryRun: true, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("set-based: %s", rep.String())
	t.Logf("%.0f msg/s", float64(rep.Messages)/time.Since(start).Seconds())
	if !rep.Identical {
		t.Errorf("set-based rebuild differs from the per-message one:\n%s", rep)
	}
	for i, s := range rep.Sources {
		rs := ref.Sources[i]
		if s.Applied != rs.Applied || s.Ignored != rs.Ignored || s.Malformed != rs.Malformed || s.Refused != rs.Refused {
			t.Errorf("%s: set-based counts %+v, per message %+v", s.Stream, s, rs)
		}
	}
	for _, tr := range rep.Tables {
		if tr.LiveRows == 0 || tr.Differing != 0 {
			t.Errorf("%+v", tr)
		}
	}
	// Every shape made its rows.
	for q, want := range map[string]int64{
		`SELECT count(*) FROM executions WHERE status = 'SKIPPED'`:                                           int64(execs / 12),
		`SELECT count(*) FROM executions WHERE status = 'ABORTED'`:                                           int64(execs / 12),
		`SELECT count(*) FROM executions WHERE status = 'SKIPPED' AND attempt = 1`:                           int64(execs / 36),
		abortedAfter(StatusFailed):                                                                           int64(execs / 72),
		abortedAfter(StatusInterrupted):                                                                      int64(execs / 12),
		`SELECT count(*) FROM execution_attempts WHERE status = 'INTERRUPTED'`:                               int64(execs / 12 * 2),
		`SELECT count(*) FROM executions WHERE status = 'FAILED' AND dead_lettered_batches > 0`:              int64(execs / 120),
		`SELECT count(*) FROM executions WHERE onu_failures IS NOT NULL`:                                     int64(execs / 4),
		`SELECT count(*) FROM executions WHERE priority = 90 AND scheduled_at = started_at - '1s'::interval`: int64(execs / 12),
	} {
		if got := r.count(q); got < want*9/10 {
			t.Errorf("%s = %d, want about %d", q, got, want)
		}
	}
	// The stale abort after a success (case 5) left the success.
	if got := r.count(`SELECT count(*) FROM executions WHERE substr(id, 6)::int % 12 = 5 AND status <> 'SUCCESS'`); got != 0 {
		t.Errorf("%d redelivered successes not SUCCESS after a stale abort", got)
	}
}

// abortedAfter counts the executions an abort ended after their last
// attempt ended lastStatus (the row names that attempt).
func abortedAfter(lastStatus string) string {
	return `SELECT count(*) FROM executions e JOIN execution_attempts a ON a.execution_id = e.id AND a.attempt = e.attempt
		WHERE e.status = 'ABORTED' AND a.status = '` + lastStatus + `'`
}

// The onu_data rebuild's fold (onudata_fold.go: every batch applied in
// memory, the tables copied in) and its batch form (applyVarbindBatch: a
// run of one OLT's batches applied as the live projector applies a group)
// leave exactly what applying each batch alone does: walks of 3 batches ending with a
// Last batch, over 6 OLTs, in which ONUs change status and power, lose and
// regain their optical row, disappear (removed by the Last batch) and come
// back, with a malformed batch among them.
func TestRebuildONUDataBatchEqualsPerMessage(t *testing.T) {
	r := newRig(t)
	g := &workGen{t: t, js: r.js, base: time.Now().UTC().Truncate(time.Second).Add(-time.Hour)}
	walks := 40
	if raceEnabled {
		walks = 10
	}
	msgs := 0
	for w := 0; w < walks; w++ {
		msgs += g.onuWalks(w, w+1, 6)
		if w == walks/2 {
			g.publishRaw(streams.SubjectVarbinds("olt-1"), []byte(`{"not":"an envelope"}`))
		}
		g.wait()
	}
	ctx := context.Background()
	model := r.readModel(ReadModelONUData)
	ref, err := replay.Rebuild(ctx, r.js, r.pool, model, replay.RebuildOptions{PerMessage: true, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("message by message: %s", ref.String())
	if !ref.Swapped {
		t.Fatalf("reference rebuild not swapped in: %v", ref)
	}
	// The fold (the model's own first pass), then the batch form alone.
	batchOnly := model
	batchOnly.Fold = nil
	for _, c := range []struct {
		name  string
		model projection.ReadModel
	}{{"fold", model}, {"batch form", batchOnly}} {
		rep, err := replay.Rebuild(ctx, r.js, r.pool, c.model, replay.RebuildOptions{DryRun: true, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", c.name, rep.String())
		if !rep.Identical {
			t.Errorf("%s differs from the per-message rebuild:\n%s", c.name, rep)
		}
		for i, s := range rep.Sources {
			rs := ref.Sources[i]
			if s.Stream != streams.StreamVarbinds {
				continue // the traps: none here
			}
			if s.Applied != rs.Applied || s.Malformed != rs.Malformed || s.Applied != uint64(msgs) || s.Malformed != 1 {
				t.Errorf("%s: %s: counts %+v, per message %+v, published %d (+1 malformed)", c.name, s.Stream, s, rs, msgs)
			}
		}
		for _, tr := range rep.Tables {
			if tr.LiveRows == 0 || tr.Differing != 0 {
				t.Errorf("%s: %+v", c.name, tr)
			}
		}
	}
	// The shapes happened: removals, Rx cleared, history of each.
	for q, min := range map[string]int64{
		`SELECT count(*) FROM onu_history WHERE field = 'removed_at' AND new_value IS NOT NULL`: 6,
		`SELECT count(*) FROM onu_history WHERE field = 'rx_power_dbm' AND new_value IS NULL`:   6,
		`SELECT count(*) FROM onu_history WHERE field = 'status'`:                               50,
	} {
		if got := r.count(q); got < min {
			t.Errorf("%s = %d, want at least %d", q, got, min)
		}
	}
}

// causeOf is the cause of a generated failure: both paths must store it
// alike (and a later attempt or a skip clear it alike).
func causeOf(retryable bool) string {
	if retryable {
		return streams.ExecCauseTimeout
	}
	return streams.ExecCauseEmptyRead
}
