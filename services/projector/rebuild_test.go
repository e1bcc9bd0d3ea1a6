package projector

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/streams"
)

// workGen publishes the events of executions as the planner and the
// pollers do (their payload types): a NodeDue, then started and succeeded,
// or, every fifth execution, started, failed (retryable), started and
// succeeded on attempt 2.
type workGen struct {
	t    testing.TB
	js   jetstream.JetStream
	base time.Time
	futs []jetstream.PubAckFuture
	// oneDeadLetter: mixedExecs dead-letters one batch of an execution,
	// never two (see TestRebuildExecutionsEqualsLive).
	oneDeadLetter bool
}

func (g *workGen) pub(subject string, ev streams.Event) {
	b, err := streams.Encode("test", g.base, ev)
	if err != nil {
		g.t.Fatal(err)
	}
	f, err := g.js.PublishAsync(subject, b)
	if err != nil {
		g.t.Fatal(err)
	}
	g.futs = append(g.futs, f)
}

// execs publishes executions [from, to) and returns how many exec-stream
// events that made.
func (g *workGen) execs(from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		olt := fmt.Sprintf("olt-%d", i%7)
		id := fmt.Sprintf("exec-%06d", i)
		at := g.base.Add(time.Duration(i) * time.Millisecond)
		g.pub(streams.SubjectNodeDue(olt), streams.NodeDue{ExecutionID: id, NodeID: "node-" + olt, JobID: "job-1", OLTID: olt,
			Kind: "get", Priority: 40, ScheduledAt: at, Target: streams.Target{Host: "192.0.2.1", Port: 161, CommunityEnc: "sealed"},
			OIDs: []streams.OIDSpec{{ID: "oid-1", OID: "1.3.6.1.2.1.1.5.0", Field: "description"}}})
		attempts := 1
		if i%5 == 0 {
			attempts = 2
		}
		for a := 1; a <= attempts; a++ {
			st := at.Add(time.Duration(a) * time.Second)
			g.pub(streams.SubjectExec(olt, streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: id, JobID: "job-1", OLTID: olt,
				PollerID: "poller-1", Attempt: a, LeaseRevision: uint64(i + 1), StartedAt: st})
			if a < attempts {
				g.pub(streams.SubjectExec(olt, streams.PhaseFailed), streams.ExecutionFailed{ExecutionID: id, JobID: "job-1", OLTID: olt,
					PollerID: "poller-1", Attempt: a, LeaseRevision: uint64(i + 1), StartedAt: st, FinishedAt: st.Add(time.Second),
					DurationMS: 1000, Error: "timeout", Retryable: true})
				n += 2
				continue
			}
			g.pub(streams.SubjectExec(olt, streams.PhaseSucceeded), streams.ExecutionSucceeded{ExecutionID: id, JobID: "job-1", OLTID: olt,
				PollerID: "poller-1", Attempt: a, LeaseRevision: uint64(i + 1), StartedAt: st, FinishedAt: st.Add(500 * time.Millisecond),
				DurationMS: 500, Varbinds: 64})
			n += 2
		}
	}
	return n
}

// varbinds publishes count batches for OLT olt, each reading the ONUs with
// their Rx power moved by the batch number (every batch changes them).
func (g *workGen) varbinds(olt string, from, count int) {
	for b := from; b < from+count; b++ {
		onus := make([]huaweiONU, 16)
		for i := range onus {
			onus[i] = huaweiONU{id: int64(i), serial: uint32(1000 + i), desc: "cliente", online: (b+i)%3 != 0, rx: -2000 - int64(b%11)}
		}
		g.pub(streams.SubjectVarbinds(olt), batch(olt, fmt.Sprintf("vb-exec-%d", b), b, g.base.Add(time.Duration(b)*time.Second), onus...))
	}
}

func (g *workGen) wait() {
	select {
	case <-g.js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		g.t.Fatal("publish did not complete")
	}
	for _, f := range g.futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			g.t.Fatal(err)
		}
	}
	g.futs = g.futs[:0]
}

func (r *rig) readModel(name string) projection.ReadModel {
	r.t.Helper()
	models, err := ReadModels(Config{}, zerolog.Nop())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, m := range models {
		if m.Name == name {
			return m
		}
	}
	r.t.Fatalf("no read model %s", name)
	return projection.ReadModel{}
}

func (r *rig) rebuild(name string, dryRun bool) replay.Report {
	r.t.Helper()
	rep, err := replay.Rebuild(context.Background(), r.js, r.pool, r.readModel(name), replay.RebuildOptions{DryRun: dryRun, Log: zerolog.Nop()})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Log(rep.String())
	return rep
}

func (r *rig) count(query string) int64 {
	r.t.Helper()
	var n int64
	if err := r.pool.QueryRow(context.Background(), query).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// TestRebuildEqualsLive: the live projector projects executions and
// varbinds; a rebuild of each read model finds the live tables identical
// and changes nothing; a damaged live table is reported by key and
// repaired by the swap; a rebuild while events keep arriving loses none of
// them; nothing is published again.
func TestRebuildEqualsLive(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.start()
	g := &workGen{t: t, js: r.js, base: time.Now().UTC().Truncate(time.Second).Add(-time.Hour)}
	g.execs(0, 300)
	for _, olt := range []string{"olt-1", "olt-2", "olt-3"} {
		g.varbinds(olt, 0, 40)
	}
	r.publishRaw(streams.SubjectVarbinds("olt-1"), []byte(`{"not":"an envelope"}`)) // dead-lettered live, skipped by a rebuild
	g.wait()
	r.waitCheckpoint(streams.ConsumerProjectorExec, r.lastSeq(streams.StreamExec))
	r.waitCheckpoint(streams.ConsumerProjectorSchedule, r.lastSeq(streams.StreamSchedule))
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, r.lastSeq(streams.StreamVarbinds))
	r.waitAckFloor(streams.StreamDLQ, streams.ConsumerProjectorDLQ, r.lastSeq(streams.StreamDLQ))
	r.eventually("outbox published", func() bool { return r.count(`SELECT count(*) FROM onu_event_outbox`) == 0 })
	onuEvents := r.streamMsgs(streams.StreamONU)

	for _, name := range []string{ReadModelExecutions, ReadModelONUData} {
		rep := r.rebuild(name, false)
		if !rep.Identical || rep.Swapped {
			t.Errorf("%s: rebuild of an intact read model: identical %v swapped %v", name, rep.Identical, rep.Swapped)
		}
		for _, tr := range rep.Tables {
			if tr.LiveRows != tr.ShadowRows || tr.Differing != 0 || (tr.LiveRows == 0 && tr.Name != "execution_dead_letters" && tr.Name != "onu_walks") {
				t.Errorf("%s: %+v", name, tr)
			}
		}
	}
	if got := r.count(`SELECT count(*) FROM executions WHERE status = 'SUCCESS' AND attempt = 2`); got != 60 {
		t.Errorf("retried executions = %d, want 60", got)
	}

	// Damage live: one row gone, one changed.
	if _, err := r.pool.Exec(ctx, `DELETE FROM onu_data WHERE olt_id = 'olt-2' AND onu_id = 3`); err != nil {
		t.Fatal(err)
	}
	if _, err := r.pool.Exec(ctx, `UPDATE onu_data SET serial = 'FORGED' WHERE olt_id = 'olt-3' AND onu_id = 4`); err != nil {
		t.Fatal(err)
	}
	rep := r.rebuild(ReadModelONUData, true)
	tr := rep.Tables[0]
	if rep.Swapped || tr.Differing != 2 || len(tr.Examples) != 2 ||
		tr.Examples[0] != (replay.RowDiff{Key: fmt.Sprintf("olt_id=olt-2 pon_index=%d onu_id=3", pon0), Where: "rebuild only"}) ||
		tr.Examples[1] != (replay.RowDiff{Key: fmt.Sprintf("olt_id=olt-3 pon_index=%d onu_id=4", pon0), Where: "differs"}) {
		t.Fatalf("dry run report: %+v", rep)
	}
	if r.count(`SELECT count(*) FROM onu_data WHERE serial = 'FORGED'`) != 1 {
		t.Fatal("a dry run changed the live table")
	}

	// Rebuild while the system runs: events keep coming during it.
	done := make(chan struct{})
	go func() {
		defer close(done)
		g2 := &workGen{t: t, js: r.js, base: g.base}
		g2.execs(300, 500)
		g2.varbinds("olt-4", 0, 30)
		g2.wait()
	}()
	rep = r.rebuild(ReadModelONUData, false)
	if !rep.Swapped {
		t.Fatalf("damaged onu_data not swapped: %+v", rep)
	}
	r.rebuild(ReadModelExecutions, false)
	<-done
	r.waitCheckpoint(streams.ConsumerProjectorExec, r.lastSeq(streams.StreamExec))
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, r.lastSeq(streams.StreamVarbinds))
	r.waitCheckpoint(streams.ConsumerProjectorSchedule, r.lastSeq(streams.StreamSchedule))
	if got := r.count(`SELECT count(*) FROM executions`); got != 500 {
		t.Errorf("executions after a rebuild during traffic = %d, want 500", got)
	}
	if got := r.count(`SELECT count(*) FROM onu_data WHERE olt_id = 'olt-4'`); got != 16 {
		t.Errorf("olt-4 onus = %d, want 16", got)
	}
	for _, name := range []string{ReadModelExecutions, ReadModelONUData} {
		if rep := r.rebuild(name, true); !rep.Identical {
			t.Errorf("%s after the swap: not identical: %v", name, rep)
		}
	}
	// The rebuilds published nothing: the ONU stream grew only by olt-4's
	// live events (16 discovered + changes), never by replayed ones.
	r.eventually("outbox drained", func() bool { return r.count(`SELECT count(*) FROM onu_event_outbox`) == 0 })
	var olt4 uint64
	if info, err := mustStream(t, r.js, streams.StreamONU).Info(ctx, jetstream.WithSubjectFilter("facho.onu.olt-4.>")); err == nil {
		for _, c := range info.State.Subjects {
			olt4 += c
		}
	} else {
		t.Fatal(err)
	}
	if got := r.streamMsgs(streams.StreamONU); got != onuEvents+olt4 {
		t.Errorf("ONU stream: %d messages, want %d before + %d of olt-4: a rebuild republished", got, onuEvents, olt4)
	}
}

func mustStream(t *testing.T, js jetstream.JetStream, name string) jetstream.Stream {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRebuild100k rebuilds executions from an exec stream of more than
// 100,000 lifecycle events (and their NodeDue) into an empty live table:
// the result is checked row for row against what the generator says each
// execution is (under the race detector: 10,000 events). (The live side of "equals
// live" is TestRebuildEqualsLive: at the live projector's pace, one
// transaction per message, 100k events take minutes.)
func TestRebuild100k(t *testing.T) {
	if testing.Short() {
		t.Skip("100k events")
	}
	r := newRig(t)
	g := &workGen{t: t, js: r.js, base: time.Now().UTC().Truncate(time.Second).Add(-time.Hour)}
	execs, wantEvents := 42000, 100000
	if raceEnabled {
		execs, wantEvents = 4200, 10000 // the same code, a tenth of the time
	}
	n := 0
	for from := 0; from < execs; from += 2000 {
		n += g.execs(from, min(from+2000, execs))
		g.wait()
	}
	if n < wantEvents {
		t.Fatalf("only %d exec events", n)
	}
	start := time.Now()
	rep := r.rebuild(ReadModelExecutions, false)
	t.Logf("%d messages rebuilt in %s (%.0f msg/s)", rep.Messages, time.Since(start).Round(time.Millisecond), float64(rep.Messages)/time.Since(start).Seconds())
	if !rep.Swapped || rep.Messages != uint64(n+execs) {
		t.Fatalf("report: %+v", rep)
	}
	ctx := context.Background()
	// Row for row: every execution, its status, attempt and timings.
	rows, err := r.pool.Query(ctx, `SELECT id, status, attempt, duration_ms, varbinds, error, (SELECT count(*) FROM execution_attempts a WHERE a.execution_id = e.id),
		scheduled_at FROM executions e ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for rows.Next() {
		var id, status, errText string
		var attempt, varbinds int
		var dur, nAttempts int64
		var scheduled time.Time
		if err := rows.Scan(&id, &status, &attempt, &dur, &varbinds, &errText, &nAttempts, &scheduled); err != nil {
			t.Fatal(err)
		}
		want := 1
		if i%5 == 0 {
			want = 2
		}
		if id != fmt.Sprintf("exec-%06d", i) || status != StatusSuccess || attempt != want || nAttempts != int64(want) ||
			dur != 500 || varbinds != 64 || errText != "" || !scheduled.Equal(g.base.Add(time.Duration(i)*time.Millisecond)) {
			t.Fatalf("row %d: %s %s attempt %d/%d dur %d varbinds %d err %q scheduled %s", i, id, status, attempt, nAttempts, dur, varbinds, errText, scheduled)
		}
		i++
	}
	if rows.Err() != nil || i != execs {
		t.Fatalf("%d rows (%v), want %d", i, rows.Err(), execs)
	}
	if got := r.count(`SELECT count(*) FROM execution_attempts WHERE status = 'FAILED' AND error = 'timeout'`); got != int64(execs/5) {
		t.Errorf("failed attempts = %d, want %d", got, execs/5)
	}
	// The swap moved the checkpoints with the rows.
	if cp, _ := projection.Checkpoint(ctx, r.pool, streams.ConsumerProjectorExec); cp != r.lastSeq(streams.StreamExec) {
		t.Fatalf("exec checkpoint %d after the swap, want %d", cp, r.lastSeq(streams.StreamExec))
	}
}
