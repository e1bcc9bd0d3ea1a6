package projector

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/streams"
)

// trustRig is a projector behind Facho's NATS identities: it runs as the
// projector, and each test publishes as the identity that owns the
// subject (the planner's, the poller's, the api's key).
type trustRig struct {
	*rig
	admin                jetstream.JetStream
	planner, poller, api jetstream.JetStream
}

func newTrustRig(t *testing.T) *trustRig {
	t.Helper()
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	_, projectorJS := env.Connect(t, natsauth.Projector)
	_, planner := env.Connect(t, natsauth.Planner)
	_, poller := env.Connect(t, natsauth.Poller)
	_, api := env.Connect(t, natsauth.API)
	r := &rig{t: t, env: env, js: projectorJS, pool: pgtest.New(t), reg: prometheus.NewRegistry(), strict: true}
	// The projector's own pool size (every consumer holds a connection
	// while it applies), as production sizes it.
	r.widePool(Config{}.WithDefaults().DBConns())
	return &trustRig{rig: r, admin: env.JS, planner: planner, poller: poller, api: api}
}

// as publishes payload on subject with js (an identity's connection).
func (r *trustRig) as(js jetstream.JetStream, subject string, payload streams.Event) uint64 {
	r.t.Helper()
	b, err := streams.Encode("test", time.Now(), payload)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.asRaw(js, subject, b)
}

func (r *trustRig) asRaw(js jetstream.JetStream, subject string, b []byte) uint64 {
	r.t.Helper()
	ack, err := js.Publish(context.Background(), subject, b)
	if err != nil {
		r.t.Fatalf("publish %s: %v", subject, err)
	}
	return ack.Sequence
}

func (r *trustRig) dispatch(exec, olt string) uint64 {
	r.t.Helper()
	n := streams.NodeDue{ExecutionID: exec, NodeID: "job-1." + olt, JobID: "job-1", JobName: "walk", OLTID: olt, BrandID: "huawei",
		IndexScheme: SchemePonONU, Kind: streams.KindWalk, Target: streams.Target{Host: "10.0.0.1", Port: 161}, OIDs: huaweiColumns,
		Priority: 40, IntervalSeconds: 300, ScheduledAt: time.Now().UTC(), Class: streams.ClassPolling}
	return r.as(r.planner, streams.SubjectNodeDueClass(olt, streams.ClassPolling), n)
}

// deadLetters returns the reasons of the dead letters of consumer.
func (r *trustRig) deadLetters(consumer string) []string {
	r.t.Helper()
	ctx := context.Background()
	s, err := r.admin.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		r.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			r.t.Fatal(err)
		}
		_, dl, err := streams.Decode[streams.DeadLetter](m.Data)
		if err != nil {
			r.t.Fatal(err)
		}
		if dl.Consumer == consumer {
			out = append(out, dl.Reason)
		}
	}
	return out
}

// waitDeadLetter waits for a dead letter of consumer whose reason holds
// every one of words, and returns it.
func (r *trustRig) waitDeadLetter(consumer string, words ...string) string {
	r.t.Helper()
	var found string
	r.eventually(fmt.Sprintf("a dead letter of %s saying %q", consumer, words), func() bool {
		for _, reason := range r.deadLetters(consumer) {
			ok := true
			for _, w := range words {
				ok = ok && strings.Contains(reason, w)
			}
			if ok {
				found = reason
				return true
			}
		}
		return false
	})
	return found
}

// trustTables are the read models a refused message must not change.
var trustTables = []string{"onu_data", "onu_history", "executions", "execution_attempts", "execution_dead_letters",
	"execution_placement", "onu_walk_seen", "onu_walks", "olts", "brands", "oids", "snmp_jobs", "onu_event_outbox"}

// snapshot is a digest of every row of tables.
func (r *trustRig) snapshot(tables ...string) map[string]string {
	r.t.Helper()
	out := map[string]string{}
	for _, tbl := range tables {
		var d string
		if err := r.pool.QueryRow(context.Background(),
			`SELECT count(*)::text || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM `+tbl+` t`).Scan(&d); err != nil {
			r.t.Fatalf("snapshot %s: %v", tbl, err)
		}
		out[tbl] = d
	}
	return out
}

func (r *trustRig) sameSnapshot(before map[string]string, tables ...string) {
	r.t.Helper()
	after := r.snapshot(tables...)
	for _, tbl := range tables {
		if before[tbl] != after[tbl] {
			r.t.Errorf("table %s changed: %s -> %s", tbl, before[tbl], after[tbl])
		}
	}
}

// TestRefusedBehindOwnKeys publishes, with each subject's owning key, what
// the projector must not apply, and checks that each is dead-lettered with
// its reason and that nothing else changed in Postgres.
func TestRefusedBehindOwnKeys(t *testing.T) {
	r := newTrustRig(t)
	r.start()
	ctx := context.Background()

	// A genuine execution: dispatched, started under lease 7, one batch,
	// succeeded.
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	onus := []huaweiONU{
		{id: 0, serial: 0x1A2B3C4D, desc: "cliente 0", online: true, rx: -2150},
		{id: 1, serial: 0x00000002, desc: "cliente 1", online: true, rx: -1990},
	}
	r.dispatch("e-1", "olt-1")
	r.as(r.poller, streams.SubjectExec("olt-1", streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: "e-1", JobID: "job-1", OLTID: "olt-1",
		PollerID: "p1", Attempt: 1, LeaseRevision: 7, StartedAt: t0})
	good := batch("olt-1", "e-1", 1, t0, onus...)
	good.LeaseRevision = 7
	goodBytes, err := streams.Encode("poller", t0, good)
	if err != nil {
		t.Fatal(err)
	}
	vseq := r.asRaw(r.poller, streams.SubjectVarbinds("olt-1"), goodBytes)
	eseq := r.as(r.poller, streams.SubjectExec("olt-1", streams.PhaseSucceeded), streams.ExecutionSucceeded{ExecutionID: "e-1", JobID: "job-1",
		OLTID: "olt-1", PollerID: "p1", Attempt: 1, LeaseRevision: 7, StartedAt: t0, FinishedAt: t0.Add(time.Second), DurationMS: 1000, Varbinds: 8, Batches: 1})
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, vseq)
	r.waitCheckpoint(streams.ConsumerProjectorExec, eseq)
	if got := r.onus("olt-1"); len(got) != 2 {
		t.Fatalf("the genuine batch was not applied: %+v", got)
	}
	var status string
	if err := r.pool.QueryRow(ctx, `SELECT status FROM executions WHERE id = 'e-1'`).Scan(&status); err != nil || status != StatusSuccess {
		t.Fatalf("e-1 is %q (%v), want SUCCESS", status, err)
	}
	// The execution ended 17 minutes ago (its row took the end then):
	// what follows is published long after the duplicate window.
	if _, err := r.pool.Exec(ctx, `UPDATE executions SET updated_at = now() - interval '17 minutes' WHERE id = 'e-1'`); err != nil {
		t.Fatal(err)
	}
	before := r.snapshot(trustTables...)

	type hostile struct {
		name     string
		consumer string
		words    []string
		publish  func()
	}
	forged := func(exec string, mod func(*streams.VarbindBatch)) func() {
		return func() {
			b := batch("olt-1", exec, 2, time.Now().UTC(), huaweiONU{id: 9, serial: 9, desc: "fake", online: true, rx: -2000})
			b.LeaseRevision = 7
			if mod != nil {
				mod(&b)
			}
			r.as(r.poller, streams.SubjectVarbinds(b.OLTID), b)
		}
	}
	cases := []hostile{
		{"OLT with a 500,000-character name (api key)", streams.ConsumerProjectorConfig, []string{"name", "longer than 200"}, func() {
			r.as(r.api, streams.SubjectOLT("olt-x"), streams.OLTUpserted{ID: "olt-x", Name: strings.Repeat("n", 500_000), IP: "10.0.0.9", Port: 161, BrandID: "huawei"})
		}},
		{"OLT with port -1 (api key)", streams.ConsumerProjectorConfig, []string{"port must be 1..65535"}, func() {
			r.as(r.api, streams.SubjectOLT("olt-y"), streams.OLTUpserted{ID: "olt-y", Name: "y", IP: "10.0.0.9", Port: -1, BrandID: "huawei"})
		}},
		{"batch of an execution never dispatched (poller key)", streams.ConsumerProjectorVarbinds, []string{RefusedPrefix, "never dispatched"}, forged("ghost", nil)},
		{"batch with Rx -21,474,836 dBm (poller key)", streams.ConsumerProjectorVarbinds, []string{RefusedPrefix, "rx_power -2.1474836e+07 dBm", "outside -60..20 dBm"},
			forged("e-1", func(b *streams.VarbindBatch) {
				b.Varbinds = huaweiONU{id: 0, serial: 0x1A2B3C4D, desc: "cliente 0", online: true, rx: -2147483600}.varbinds(pon0)
			})},
		{"batch of a stale attempt (poller key)", streams.ConsumerProjectorVarbinds, []string{RefusedPrefix, "lease revision 6", "current attempt's 7"},
			forged("e-1", func(b *streams.VarbindBatch) { b.LeaseRevision = 6 })},
		{"batch naming another OLT (poller key)", streams.ConsumerProjectorVarbinds, []string{RefusedPrefix, "names OLT olt-2", "of OLT olt-1"},
			forged("e-1", func(b *streams.VarbindBatch) { b.OLTID = "olt-2" })},
		{"old batch replayed after the duplicate window (poller key)", streams.ConsumerProjectorVarbinds, []string{RefusedPrefix, "after the execution ended", "a replay"},
			func() { r.asRaw(r.poller, streams.SubjectVarbinds("olt-1"), goodBytes) }},
		{"execution.succeeded with varbinds -5 (poller key)", streams.ConsumerProjectorExec, []string{"varbinds -5 is negative"}, func() {
			r.as(r.poller, streams.SubjectExec("olt-1", streams.PhaseSucceeded), streams.ExecutionSucceeded{ExecutionID: "e-1", JobID: "job-1", OLTID: "olt-1",
				PollerID: "p1", Attempt: 1, LeaseRevision: 7, StartedAt: t0, FinishedAt: t0.Add(time.Second), DurationMS: 1000, Varbinds: -5})
		}},
		{"execution.succeeded with duration_ms -100 (poller key)", streams.ConsumerProjectorExec, []string{"duration_ms -100 is negative"}, func() {
			r.as(r.poller, streams.SubjectExec("olt-1", streams.PhaseSucceeded), streams.ExecutionSucceeded{ExecutionID: "ghost", JobID: "job-1", OLTID: "olt-1",
				PollerID: "p1", Attempt: 1, LeaseRevision: 9, StartedAt: t0, FinishedAt: t0.Add(time.Second), DurationMS: -100, Varbinds: 3})
		}},
		{"execution.started of an execution never dispatched (poller key)", streams.ConsumerProjectorExec, []string{"never dispatched"}, func() {
			r.as(r.poller, streams.SubjectExec("olt-1", streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: "ghost-2", JobID: "job-1", OLTID: "olt-1",
				PollerID: "p1", Attempt: 1, LeaseRevision: 9, StartedAt: t0})
		}},
		{"execution.succeeded of an execution never dispatched (poller key)", streams.ConsumerProjectorExec, []string{"never dispatched"}, func() {
			r.as(r.poller, streams.SubjectExec("olt-1", streams.PhaseSucceeded), streams.ExecutionSucceeded{ExecutionID: "ghost-3", JobID: "job-1", OLTID: "olt-1",
				PollerID: "p1", Attempt: 1, LeaseRevision: 9, StartedAt: t0, FinishedAt: t0.Add(time.Second), DurationMS: 1000, Varbinds: 1})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.publish()
			reason := r.waitDeadLetter(tc.consumer, tc.words...)
			if len(reason) > streams.DeadLetterReasonBytes {
				t.Errorf("reason of %d bytes", len(reason))
			}
		})
	}
	// Every dead letter of the varbind consumer was read by the
	// dead-letter projection (refused ones fail nothing).
	dlq, err := r.admin.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	last, err := dlq.GetLastMsgForSubject(ctx, streams.SubjectDLQ(streams.ConsumerProjectorVarbinds))
	if err != nil {
		t.Fatal(err)
	}
	r.waitAckFloor(streams.StreamDLQ, streams.ConsumerProjectorDLQ, last.Sequence)
	r.sameSnapshot(before, trustTables...)
	if v := counterValue(t, r.reg, "facho_projector_refused_total"); v < 9 {
		t.Errorf("facho_projector_refused_total = %v, want at least 9", v)
	}
}

// TestOldReadingKeepsState: a reading of a dispatched execution collected
// before an ONU's current state does not move that state back, nor adds
// history or events.
func TestOldReadingKeepsState(t *testing.T) {
	r := newTrustRig(t)
	r.start()
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	onu := huaweiONU{id: 0, serial: 0x1A2B3C4D, desc: "cliente 0", online: true, rx: -2150}
	run := func(exec string, lease uint64, collected time.Time, o huaweiONU) uint64 {
		r.dispatch(exec, "olt-1")
		r.as(r.poller, streams.SubjectExec("olt-1", streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: exec, JobID: "job-1", OLTID: "olt-1",
			PollerID: "p1", Attempt: 1, LeaseRevision: lease, StartedAt: collected})
		b := batch("olt-1", exec, 1, collected, o)
		b.LeaseRevision = lease
		return r.as(r.poller, streams.SubjectVarbinds("olt-1"), b)
	}
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, run("e-1", 1, t0, onu))
	newer := onu
	newer.rx = -2300
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, run("e-2", 2, t0.Add(20*time.Minute), newer))
	r.eventually("2 onu events", func() bool { return r.streamMsgs(streams.StreamONU) == 2 })
	before := r.snapshot("onu_data", "onu_history")

	// A reading 17 minutes older than the state, of a genuine execution.
	old := onu
	old.rx, old.desc = -1800, "renamed"
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, run("e-3", 3, t0.Add(3*time.Minute), old))
	r.sameSnapshot(before, "onu_data", "onu_history")
	if got := r.onus("olt-1")[ONUKey{pon0, 0}]; got.RxPowerDBm == nil || *got.RxPowerDBm != -23 {
		t.Errorf("rx = %v, want the newer -23", got.RxPowerDBm)
	}
	if n := r.streamMsgs(streams.StreamONU); n != 2 {
		t.Errorf("%d onu events, want 2: the old reading published a change", n)
	}
	if v := counterValue(t, r.reg, "facho_projector_stale_readings_total"); v != 1 {
		t.Errorf("facho_projector_stale_readings_total = %v, want 1", v)
	}
	// A newer reading still applies.
	newest := newer
	newest.rx = -2400
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, run("e-4", 4, t0.Add(30*time.Minute), newest))
	if got := r.onus("olt-1")[ONUKey{pon0, 0}]; got.RxPowerDBm == nil || *got.RxPowerDBm != -24 {
		t.Errorf("rx = %v, want the newest -24", got.RxPowerDBm)
	}
}

// TestHeldUntilScheduleCatchesUp: a batch whose NodeDue the schedule
// projection has not applied yet (here: its checkpoint row is locked) is
// held, not refused, and applied once the NodeDue is projected.
func TestHeldUntilScheduleCatchesUp(t *testing.T) {
	r := newTrustRig(t)
	ctx := context.Background()
	if _, err := r.pool.Exec(ctx, `INSERT INTO checkpoints (consumer, last_seq) VALUES ($1, 0) ON CONFLICT (consumer) DO NOTHING`,
		streams.ConsumerProjectorSchedule); err != nil {
		t.Fatal(err)
	}
	lock, err := r.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(ctx) }()
	if _, err := lock.Exec(ctx, `SELECT 1 FROM checkpoints WHERE consumer = $1 FOR UPDATE`, streams.ConsumerProjectorSchedule); err != nil {
		t.Fatal(err)
	}
	r.start()
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	r.dispatch("e-1", "olt-1")
	b := batch("olt-1", "e-1", 1, t0, huaweiONU{id: 0, serial: 1, desc: "a", online: true, rx: -2000})
	seq := r.as(r.poller, streams.SubjectVarbinds("olt-1"), b)
	r.eventually("the batch held for its NodeDue", func() bool {
		return counterValue(t, r.reg, "facho_projector_schedule_waits_total") >= 2
	})
	if got := r.onus("olt-1"); len(got) != 0 {
		t.Fatalf("applied before its NodeDue: %+v", got)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	if got := r.onus("olt-1"); len(got) != 1 {
		t.Fatalf("the batch of a dispatched execution was not applied: %+v", got)
	}
	if n := len(r.deadLetters(streams.ConsumerProjectorVarbinds)); n != 0 {
		t.Fatalf("%d dead letters", n)
	}
}

// counterValue sums the samples of a counter family.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// The chained executions of a composite NodeDue are dispatched with it:
// their batches and events apply; a batch naming an execution the chain
// does not hold is refused.
func TestChainedExecutionsAreDispatched(t *testing.T) {
	r := newTrustRig(t)
	r.start()
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	n := streams.NodeDue{ExecutionID: "m-1", NodeID: "wf.olt-1", JobID: "job-1", JobName: "discovery", OLTID: "olt-1", BrandID: "huawei",
		IndexScheme: SchemePonONU, Kind: streams.KindDiscovery, Target: streams.Target{Host: "10.0.0.1", Port: 161}, OIDs: huaweiColumns,
		Priority: 90, IntervalSeconds: 300, ScheduledAt: t0, Class: streams.ClassDiscovery,
		Chain: []streams.ChainedNode{{ExecutionID: "c-1", JobID: "job-2", JobName: "rx", Kind: streams.KindGet, OIDs: huaweiColumns}}}
	r.as(r.planner, streams.SubjectNodeDueClass("olt-1", streams.ClassDiscovery), n)
	seq := r.as(r.poller, streams.SubjectExec("olt-1", streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: "c-1", JobID: "job-2", OLTID: "olt-1",
		PollerID: "p1", Attempt: 1, LeaseRevision: 3, StartedAt: t0})
	b := batch("olt-1", "c-1", 1, t0, huaweiONU{id: 0, serial: 1, desc: "a", online: true, rx: -2000})
	b.LeaseRevision = 3
	vseq := r.as(r.poller, streams.SubjectVarbinds("olt-1"), b)
	r.waitCheckpoint(streams.ConsumerProjectorExec, seq)
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, vseq)
	if got := r.onus("olt-1"); len(got) != 1 {
		t.Fatalf("the chained execution's batch was not applied: %+v", got)
	}
	var status, kind string
	if err := r.pool.QueryRow(context.Background(), `SELECT status, kind FROM executions WHERE id = 'c-1'`).Scan(&status, &kind); err != nil ||
		status != StatusRunning || kind != streams.KindGet {
		t.Fatalf("c-1 is %s of kind %q (%v), want RUNNING get", status, kind, err)
	}
	other := batch("olt-1", "c-2", 1, t0, huaweiONU{id: 1, serial: 2, desc: "b", online: true, rx: -2000})
	r.as(r.poller, streams.SubjectVarbinds("olt-1"), other)
	r.waitDeadLetter(streams.ConsumerProjectorVarbinds, "execution c-2", "never dispatched")
	if got := r.onus("olt-1"); len(got) != 1 {
		t.Fatalf("a batch of an execution outside the chain was applied: %+v", got)
	}
}
