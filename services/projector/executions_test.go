package projector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

type execRow struct {
	Status, PollerID, Error string
	Attempt                 int
	Rev                     int64
	Scheduled, Finished     *time.Time
	Duration                *int64
	Varbinds                int
	NodeID                  string
	Cause                   *string
}

func (r *rig) execution(id string) execRow {
	r.t.Helper()
	var e execRow
	err := r.pool.QueryRow(context.Background(), `SELECT status, poller_id, error, attempt, lease_revision, scheduled_at, finished_at, duration_ms, varbinds, node_id, cause
		FROM executions WHERE id = $1`, id).Scan(&e.Status, &e.PollerID, &e.Error, &e.Attempt, &e.Rev, &e.Scheduled, &e.Finished, &e.Duration, &e.Varbinds, &e.NodeID, &e.Cause)
	if err != nil {
		r.t.Fatalf("execution %s: %v", id, err)
	}
	return e
}

func (r *rig) attempts(id string) map[int]string {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), `SELECT attempt, status FROM execution_attempts WHERE execution_id = $1`, id)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var a int
		var s string
		if err := rows.Scan(&a, &s); err != nil {
			r.t.Fatal(err)
		}
		out[a] = s
	}
	return out
}

func nodeDue(exec string, at time.Time) streams.NodeDue {
	return streams.NodeDue{ExecutionID: exec, NodeID: "n-1", JobID: "job-1", OLTID: "olt-a", Kind: streams.KindGet,
		Target: streams.Target{Host: "127.0.0.1", Port: 161, CommunityEnc: "v1:sealed"},
		OIDs:   huaweiColumns, Priority: 40, ScheduledAt: at}
}

func TestExecutionLifecycle(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	execSubj := func(phase string) string { return streams.SubjectExec("olt-a", phase) }

	seq := r.publish(streams.SubjectNodeDue("olt-a"), nodeDue("x1", t0))
	r.waitCheckpoint(streams.ConsumerProjectorSchedule, seq)
	if e := r.execution("x1"); e.Status != StatusPending || e.Scheduled == nil || !e.Scheduled.Equal(t0) || e.NodeID != "n-1" {
		t.Fatalf("after NodeDue: %+v", e)
	}

	started := func(attempt int, rev uint64, poller string) streams.ExecutionStarted {
		return streams.ExecutionStarted{ExecutionID: "x1", JobID: "job-1", OLTID: "olt-a", PollerID: poller, Attempt: attempt, LeaseRevision: rev, StartedAt: t0}
	}
	failed := streams.ExecutionFailed{ExecutionID: "x1", JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 5,
		StartedAt: t0, FinishedAt: t0.Add(2 * time.Second), DurationMS: 2000, Error: "timeout", Retryable: true, Cause: streams.ExecCauseTimeout}
	succeeded := streams.ExecutionSucceeded{ExecutionID: "x1", JobID: "job-1", OLTID: "olt-a", PollerID: "p2", Attempt: 2, LeaseRevision: 9,
		StartedAt: t0.Add(time.Minute), FinishedAt: t0.Add(time.Minute + 3*time.Second), DurationMS: 3000, Varbinds: 64}
	staleSuccess := streams.ExecutionSucceeded{ExecutionID: "x1", JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 5,
		StartedAt: t0, FinishedAt: t0.Add(time.Hour), DurationMS: 99, Varbinds: 1}

	steps := []struct {
		name    string
		phase   string
		ev      streams.Event
		status  string
		attempt int
		poller  string
		cause   string // the failed attempt's cause, until a newer attempt
	}{
		{"started", streams.PhaseStarted, started(1, 5, "p1"), StatusRunning, 1, "p1", ""},
		{"failed", streams.PhaseFailed, failed, StatusFailed, 1, "p1", streams.ExecCauseTimeout},
		{"late started of attempt 1", streams.PhaseStarted, started(1, 5, "p1"), StatusFailed, 1, "p1", streams.ExecCauseTimeout},
		{"retry started", streams.PhaseStarted, started(2, 9, "p2"), StatusRunning, 2, "p2", ""},
		{"succeeded", streams.PhaseSucceeded, succeeded, StatusSuccess, 2, "p2", ""},
		{"late started of attempt 2", streams.PhaseStarted, started(2, 9, "p2"), StatusSuccess, 2, "p2", ""},
		{"stale poller's success", streams.PhaseSucceeded, staleSuccess, StatusSuccess, 2, "p2", ""},
		{"stale revision, higher attempt", streams.PhaseStarted, started(3, 4, "p1"), StatusSuccess, 2, "p2", ""},
	}
	for _, s := range steps {
		seq := r.publish(execSubj(s.phase), s.ev)
		r.waitCheckpoint(streams.ConsumerProjectorExec, seq)
		e := r.execution("x1")
		if e.Status != s.status || e.Attempt != s.attempt || e.PollerID != s.poller {
			t.Fatalf("%s: execution %+v, want %s attempt %d poller %s", s.name, e, s.status, s.attempt, s.poller)
		}
		if got := deref(e.Cause); got != s.cause {
			t.Fatalf("%s: cause %q, want %q", s.name, got, s.cause)
		}
	}
	e := r.execution("x1")
	if e.Duration == nil || *e.Duration != 3000 || e.Varbinds != 64 || e.Rev != 9 || e.Error != "" || e.Finished == nil {
		t.Fatalf("final execution %+v", e)
	}
	if a := r.attempts("x1"); len(a) != 2 || a[1] != StatusFailed || a[2] != StatusSuccess {
		t.Fatalf("attempts %v", a)
	}

	// A NodeDue projected after the execution ran does not move it back.
	seq = r.publish(streams.SubjectNodeDue("olt-a"), nodeDue("x1", t0))
	r.waitCheckpoint(streams.ConsumerProjectorSchedule, seq)
	if e := r.execution("x1"); e.Status != StatusSuccess {
		t.Fatalf("NodeDue regressed the execution: %+v", e)
	}

	// Lifecycle before NodeDue (independent streams): the row is created
	// by the event and NodeDue only fills the schedule in.
	seq = r.publish(execSubj(streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: "x2", JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 3, StartedAt: t0})
	r.waitCheckpoint(streams.ConsumerProjectorExec, seq)
	seq = r.publish(streams.SubjectNodeDue("olt-a"), nodeDue("x2", t0))
	r.waitCheckpoint(streams.ConsumerProjectorSchedule, seq)
	if e := r.execution("x2"); e.Status != StatusRunning || e.Scheduled == nil {
		t.Fatalf("x2 %+v", e)
	}

	// The pending NodeDue carried a sealed community: it is stored nowhere.
	var leaks int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM executions e WHERE e::text LIKE '%sealed%'`).Scan(&leaks); err != nil || leaks != 0 {
		t.Fatalf("community material in executions: %d (%v)", leaks, err)
	}
}

// A skipped execution (no catch-up) is SKIPPED, final for the execution:
// it replaces PENDING or creates the row, never overwrites a run that began
// or ended, and nothing later moves it.
func TestSkippedExecutions(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	execSubj := func(phase string) string { return streams.SubjectExec("olt-a", phase) }
	skipped := func(id string) streams.ExecutionSkipped {
		return streams.ExecutionSkipped{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p9",
			ScheduledAt: t0, SkippedAt: t0.Add(11 * time.Minute), Reason: "stale: scheduled at 2026-11-21T10:00:00Z, interval 300s; a newer run supersedes it"}
	}
	started := func(id string) streams.ExecutionStarted {
		return streams.ExecutionStarted{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 5, StartedAt: t0}
	}
	succeeded := func(id string) streams.ExecutionSucceeded {
		return streams.ExecutionSucceeded{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 5,
			StartedAt: t0, FinishedAt: t0.Add(time.Second), DurationMS: 1000, Varbinds: 8}
	}
	failed := func(id string) streams.ExecutionFailed {
		return streams.ExecutionFailed{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 5,
			StartedAt: t0, FinishedAt: t0.Add(time.Second), DurationMS: 1000, Error: "timeout", Retryable: true}
	}
	exec := func(phase string, ev streams.Event) {
		t.Helper()
		r.waitCheckpoint(streams.ConsumerProjectorExec, r.publish(execSubj(phase), ev))
	}
	due := func(id string) {
		t.Helper()
		r.waitCheckpoint(streams.ConsumerProjectorSchedule, r.publish(streams.SubjectNodeDue("olt-a"), nodeDue(id, t0)))
	}
	wantSkipped := func(id string) {
		t.Helper()
		e := r.execution(id)
		if e.Status != StatusSkipped || e.PollerID != "p9" || e.Attempt != 0 || e.Rev != 0 || !strings.HasPrefix(e.Error, "stale: ") ||
			e.Finished == nil || !e.Finished.Equal(t0.Add(11*time.Minute)) || e.Scheduled == nil || !e.Scheduled.Equal(t0) {
			t.Fatalf("%s: %+v, want SKIPPED by p9 finished at the skip", id, e)
		}
		if a := r.attempts(id); len(a) != 0 {
			t.Fatalf("%s: attempts %v, want none (nothing ran)", id, a)
		}
	}

	// PENDING, then skipped: SKIPPED. Late events do not move it.
	due("s1")
	exec(streams.PhaseSkipped, skipped("s1"))
	wantSkipped("s1")
	exec(streams.PhaseSkipped, skipped("s1")) // a duplicate
	exec(streams.PhaseStarted, started("s1"))
	exec(streams.PhaseSucceeded, succeeded("s1"))
	due("s1")
	wantSkipped("s1")

	// Skipped before its NodeDue is projected: the row is created SKIPPED
	// and NodeDue only fills the queue fields in.
	exec(streams.PhaseSkipped, skipped("s2"))
	wantSkipped("s2")
	due("s2")
	wantSkipped("s2")
	if e := r.execution("s2"); e.NodeID != "n-1" {
		t.Fatalf("s2 queue fields not filled in: %+v", e)
	}

	// A skip never overwrites a run that began or ended.
	for _, tc := range []struct {
		id     string
		before []streams.Event
		status string
	}{
		{"r-running", []streams.Event{started("r-running")}, StatusRunning},
		{"r-success", []streams.Event{started("r-success"), succeeded("r-success")}, StatusSuccess},
		{"r-failed", []streams.Event{started("r-failed"), failed("r-failed")}, StatusFailed},
	} {
		due(tc.id)
		for _, ev := range tc.before {
			phase := map[string]string{streams.TypeExecutionStarted: streams.PhaseStarted,
				streams.TypeExecutionSucceeded: streams.PhaseSucceeded, streams.TypeExecutionFailed: streams.PhaseFailed}[ev.EventType()]
			exec(phase, ev)
		}
		exec(streams.PhaseSkipped, skipped(tc.id))
		if e := r.execution(tc.id); e.Status != tc.status || e.Attempt != 1 || e.PollerID != "p1" || e.Rev != 5 || strings.HasPrefix(e.Error, "stale") {
			t.Fatalf("%s after a skip: %+v, want %s of p1's attempt 1", tc.id, e, tc.status)
		}
		if a := r.attempts(tc.id); len(a) != 1 || a[1] != tc.status {
			t.Fatalf("%s attempts %v", tc.id, a)
		}
	}
}

func TestConfigProjection(t *testing.T) {
	r := newRig(t)
	r.start()
	const sealed = "v1:c2VhbGVkLWNvbW11bml0eQ=="
	events := []struct {
		subject string
		ev      streams.Event
	}{
		{streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: SchemePonONU}},
		{streams.SubjectOID("hw-rx"), streams.OIDUpserted{ID: "hw-rx", BrandID: "huawei", Name: "rx", OID: huaweiColumns[3].OID, Field: streams.FieldRxPower, Decoder: huaweiColumns[3].Decoder}},
		{streams.SubjectOLT("olt-a"), streams.OLTUpserted{ID: "olt-a", Name: "OLT A", IP: "10.0.0.1", Port: 161, BrandID: "huawei", CommunityEnc: sealed, Enabled: true}},
		{streams.SubjectJob("job-1"), streams.JobUpserted{ID: "job-1", Name: "poll", BrandID: "huawei", Kind: streams.KindGet, OIDIDs: []string{"hw-rx"}, IntervalSeconds: 300, Priority: 40, Enabled: true}},
		{streams.SubjectAssignment("job-1", "olt-a"), streams.JobOLTAssigned{JobID: "job-1", OLTID: "olt-a", Enabled: true}},
		{streams.SubjectOLT("olt-b"), streams.OLTUpserted{ID: "olt-b", Name: "OLT B", IP: "10.0.0.2", Port: 161, BrandID: "huawei", CommunityEnc: sealed, Enabled: true}},
		{streams.SubjectOLT("olt-b"), streams.OLTDeleted{ID: "olt-b"}},
		{streams.SubjectAssignment("job-1", "olt-a"), streams.JobOLTUnassigned{JobID: "job-1", OLTID: "olt-a"}},
		{streams.SubjectJob("job-2"), streams.JobUpserted{ID: "job-2", Name: "gone", BrandID: "huawei", Kind: streams.KindWalk, IntervalSeconds: 60, Enabled: true}},
		{streams.SubjectJob("job-2"), streams.JobDeleted{ID: "job-2"}},
		{streams.SubjectBrand("spare"), streams.BrandUpserted{ID: "spare", Name: "Spare", IndexScheme: SchemePonONU}},
		{streams.SubjectOID("spare-oid"), streams.OIDUpserted{ID: "spare-oid", BrandID: "spare", Name: "s", OID: "1.3.6.1", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "string"}}},
		{streams.SubjectOID("spare-oid"), streams.OIDDeleted{ID: "spare-oid"}},
		{streams.SubjectBrand("spare"), streams.BrandDeleted{ID: "spare"}},
		{streams.SubjectWorkflow("wf-1"), streams.WorkflowUpserted{ID: "wf-1", Name: "disc+rx", OLTID: "olt-a", MasterJobID: "job-1", ChainJobIDs: []string{"job-2"}, StopOnFailure: true, Enabled: true}},
		{streams.SubjectWorkflow("wf-2"), streams.WorkflowUpserted{ID: "wf-2", Name: "gone", OLTID: "olt-a", MasterJobID: "job-1", ChainJobIDs: []string{"job-2"}, Enabled: true}},
		{streams.SubjectWorkflow("wf-2"), streams.WorkflowDeleted{ID: "wf-2"}},
		// Auto-disabled by the planner, with the reason and time.
		{streams.SubjectOLT("olt-e"), streams.OLTUpserted{ID: "olt-e", Name: "OLT E", IP: "10.0.0.5", Port: 161, BrandID: "huawei", CommunityEnc: sealed, Enabled: true}},
		{streams.SubjectOLTDisabled("olt-e"), streams.OLTAutoDisabled{ID: "olt-e", Reason: "3 consecutive failed executions", Failures: 3, DisabledAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}},
		// Auto-disabled, then re-enabled by the recovery probes.
		{streams.SubjectOLT("olt-f"), streams.OLTUpserted{ID: "olt-f", Name: "OLT F", IP: "10.0.0.6", Port: 161, BrandID: "huawei", CommunityEnc: sealed, Enabled: true}},
		{streams.SubjectOLTDisabled("olt-f"), streams.OLTAutoDisabled{ID: "olt-f", Reason: "3 consecutive failed executions", Failures: 3, ExecutionID: "x", DisabledAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}},
		{streams.SubjectOLTDisabled("olt-f"), streams.OLTAutoEnabled{ID: "olt-f", Reason: "answered 3 probes", Probes: 3, DisabledExecutionID: "x", EnabledAt: time.Date(2026, 11, 21, 10, 5, 0, 0, time.UTC)}},
		// Auto-disabled, then disabled by a person: an auto-enable leaves it disabled.
		{streams.SubjectOLT("olt-g"), streams.OLTUpserted{ID: "olt-g", Name: "OLT G", IP: "10.0.0.7", Port: 161, BrandID: "huawei", CommunityEnc: sealed, Enabled: true}},
		{streams.SubjectOLTDisabled("olt-g"), streams.OLTAutoDisabled{ID: "olt-g", Reason: "3 consecutive failed executions", Failures: 3, ExecutionID: "y", DisabledAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}},
		{streams.SubjectOLT("olt-g"), streams.OLTUpserted{ID: "olt-g", Name: "OLT G", IP: "10.0.0.7", Port: 161, BrandID: "huawei", CommunityEnc: sealed, Enabled: false}},
		{streams.SubjectOLTDisabled("olt-g"), streams.OLTAutoEnabled{ID: "olt-g", Reason: "answered 3 probes", Probes: 3, DisabledExecutionID: "y", EnabledAt: time.Date(2026, 11, 21, 10, 5, 0, 0, time.UTC)}},
	}
	var last uint64
	for _, e := range events {
		last = r.publish(e.subject, e.ev)
	}
	r.publishRaw(streams.SubjectOLT("olt-c"), []byte(`{"id":"x","type":"olt.exploded","version":1,"data":{}}`))
	// Postgres refuses the port (integer out of range, SQLSTATE 22003): no
	// retry can fix that, so it is dead-lettered rather than retried forever.
	r.publish(streams.SubjectOLT("olt-d"), streams.OLTUpserted{ID: "olt-d", Name: "D", IP: "10.0.0.4", Port: 1 << 40, BrandID: "huawei"})
	// Postgres refuses a NUL in text (SQLSTATE 22021): dead-lettered too.
	r.publish(streams.SubjectBrand("nul"), streams.BrandUpserted{ID: "nul", Name: "a\x00b", IndexScheme: SchemePonONU})
	last = r.publish(streams.SubjectBrand("zte"), streams.BrandUpserted{ID: "zte", Name: "ZTE", IndexScheme: SchemePonONU})
	r.waitCheckpoint(streams.ConsumerProjectorConfig, last)
	r.eventually("3 dead letters", func() bool { return r.streamMsgs(streams.StreamDLQ) == 3 })

	ctx := context.Background()
	var scheme, decoder string
	if err := r.pool.QueryRow(ctx, `SELECT b.index_scheme, o.decoder::text FROM brands b JOIN oids o ON o.brand_id = b.id WHERE o.id = 'hw-rx'`).Scan(&scheme, &decoder); err != nil {
		t.Fatal(err)
	}
	if scheme != SchemePonONU || !strings.Contains(decoder, `"scaled"`) {
		t.Errorf("brand/oid: %s %s", scheme, decoder)
	}
	var aDeleted, bDeleted, bEnabled bool
	if err := r.pool.QueryRow(ctx, `SELECT (SELECT deleted FROM olts WHERE id='olt-a'), (SELECT deleted FROM olts WHERE id='olt-b'), (SELECT enabled FROM olts WHERE id='olt-b')`).Scan(&aDeleted, &bDeleted, &bEnabled); err != nil {
		t.Fatal(err)
	}
	if aDeleted || !bDeleted || bEnabled {
		t.Errorf("olts: a deleted %v, b deleted %v enabled %v", aDeleted, bDeleted, bEnabled)
	}
	var jobDeleted, assignDeleted bool
	var oidIDs []string
	if err := r.pool.QueryRow(ctx, `SELECT (SELECT deleted FROM snmp_jobs WHERE id='job-2'), (SELECT deleted FROM snmp_job_olts WHERE job_id='job-1' AND olt_id='olt-a'), (SELECT oid_ids FROM snmp_jobs WHERE id='job-1')`).Scan(&jobDeleted, &assignDeleted, &oidIDs); err != nil {
		t.Fatal(err)
	}
	if !jobDeleted || !assignDeleted || len(oidIDs) != 1 {
		t.Errorf("jobs: job-2 deleted %v, assignment deleted %v, oid ids %v", jobDeleted, assignDeleted, oidIDs)
	}
	var spares int
	if err := r.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM brands WHERE id = 'spare') + (SELECT count(*) FROM oids WHERE id = 'spare-oid')`).Scan(&spares); err != nil || spares != 0 {
		t.Errorf("deleted brand and OID: %d rows left (%v)", spares, err)
	}
	var chain []string
	var stop, wf2Deleted bool
	if err := r.pool.QueryRow(ctx, `SELECT w.chain_job_ids, w.stop_on_failure, (SELECT deleted FROM workflows WHERE id = 'wf-2') FROM workflows w WHERE id = 'wf-1'`).Scan(&chain, &stop, &wf2Deleted); err != nil {
		t.Fatal(err)
	}
	if len(chain) != 1 || chain[0] != "job-2" || !stop || !wf2Deleted {
		t.Errorf("workflows: chain %v stop %v, wf-2 deleted %v", chain, stop, wf2Deleted)
	}
	var reason string
	var at *time.Time
	var eEnabled bool
	if err := r.pool.QueryRow(ctx, `SELECT enabled, disabled_reason, disabled_at FROM olts WHERE id = 'olt-e'`).Scan(&eEnabled, &reason, &at); err != nil {
		t.Fatal(err)
	}
	if eEnabled || reason != "3 consecutive failed executions" || at == nil || !at.Equal(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("olt-e enabled %v, disabled %q at %v", eEnabled, reason, at)
	}
	var fEnabled, gEnabled bool
	var fReason string
	if err := r.pool.QueryRow(ctx, `SELECT (SELECT enabled FROM olts WHERE id = 'olt-f'), (SELECT disabled_reason FROM olts WHERE id = 'olt-f'), (SELECT enabled FROM olts WHERE id = 'olt-g')`).Scan(&fEnabled, &fReason, &gEnabled); err != nil {
		t.Fatal(err)
	}
	if !fEnabled || fReason != "" || gEnabled {
		t.Errorf("auto-enabled olt-f enabled %v reason %q; person-disabled olt-g enabled %v", fEnabled, fReason, gEnabled)
	}
	var leaks int
	if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM olts o WHERE o::text LIKE '%c2VhbGVk%'`).Scan(&leaks); err != nil || leaks != 0 {
		t.Fatalf("sealed community stored in olts: %d (%v)", leaks, err)
	}
}

// The coordinator's cancellations: PENDING -> ABORTED (no attempt row),
// RUNNING -> INTERRUPTED (the attempt too); both final.
func TestAbortedAndInterruptedExecutions(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	exec := func(phase string, ev streams.Event) {
		t.Helper()
		r.waitCheckpoint(streams.ConsumerProjectorExec, r.publish(streams.SubjectExec("olt-a", phase), ev))
	}
	r.waitCheckpoint(streams.ConsumerProjectorSchedule, r.publish(streams.SubjectNodeDue("olt-a"), nodeDue("a1", t0)))
	exec(streams.PhaseAborted, streams.ExecutionAborted{ExecutionID: "a1", JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Reason: "job disabled", AbortedAt: t0.Add(time.Second)})
	if e := r.execution("a1"); e.Status != StatusAborted || e.Error != "job disabled" || e.Finished == nil || !e.Finished.Equal(t0.Add(time.Second)) || e.Attempt != 0 {
		t.Fatalf("a1 %+v, want ABORTED", e)
	}
	if a := r.attempts("a1"); len(a) != 0 {
		t.Fatalf("a1 attempts %v, want none", a)
	}
	// A late start does not resurrect it.
	exec(streams.PhaseStarted, streams.ExecutionStarted{ExecutionID: "a1", JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 3, StartedAt: t0})
	if e := r.execution("a1"); e.Status != StatusAborted {
		t.Fatalf("a1 %+v after a late start", e)
	}

	r.waitCheckpoint(streams.ConsumerProjectorSchedule, r.publish(streams.SubjectNodeDue("olt-a"), nodeDue("i1", t0)))
	exec(streams.PhaseStarted, streams.ExecutionStarted{ExecutionID: "i1", JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 4, StartedAt: t0})
	exec(streams.PhaseInterrupted, streams.ExecutionInterrupted{ExecutionID: "i1", OLTID: "olt-a", JobID: "job-1", Attempt: 1, Reason: "OLT disabled",
		PollerID: "p1", LeaseRevision: 4, StartedAt: t0, InterruptedAt: t0.Add(2 * time.Second)})
	e := r.execution("i1")
	if e.Status != StatusInterrupted || e.Error != "OLT disabled" || e.Attempt != 1 || e.Rev != 4 || e.Duration == nil || *e.Duration != 2000 {
		t.Fatalf("i1 %+v, want INTERRUPTED", e)
	}
	if a := r.attempts("i1"); len(a) != 1 || a[1] != StatusInterrupted {
		t.Fatalf("i1 attempts %v", a)
	}
	exec(streams.PhaseFailed, streams.ExecutionFailed{ExecutionID: "i1", JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 4,
		StartedAt: t0, FinishedAt: t0.Add(3 * time.Second), Error: "late"})
	if e := r.execution("i1"); e.Status != StatusInterrupted {
		t.Fatalf("i1 %+v after a late failure", e)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
