package projector

import (
	"context"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// Events on a subject not their own, and a brand without an index scheme,
// are dead-lettered with the reason and change nothing: a forged
// brand.upserted on an OLT's subject once blanked a brand and stopped
// every ONU reading of its OLTs.
func TestEventsOffTheirSubjectAreDeadLettered(t *testing.T) {
	r := newRig(t)
	r.start()
	ctx := context.Background()
	t0 := time.Now().UTC()
	r.publish(streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: SchemePonONU})
	r.publish(streams.SubjectOLT("olt-1"), streams.OLTUpserted{ID: "olt-1", Name: "OLT 1", IP: "10.0.0.1", Port: 161, BrandID: "huawei", Enabled: true})

	type bad struct {
		consumer, subject string
		ev                streams.Event
		reason            string
	}
	bads := []bad{
		{streams.ConsumerProjectorConfig, streams.SubjectOLT("olt-1"), streams.BrandUpserted{ID: "huawei", Name: ""},
			`brand.upserted on subject "facho.config.olt.olt-1": want facho.config.brand.{id}`},
		{streams.ConsumerProjectorConfig, streams.SubjectBrand("zte"), streams.BrandUpserted{ID: "huawei", Name: "x", IndexScheme: SchemeFiberhome},
			`id "huawei" does not match the subject`},
		{streams.ConsumerProjectorConfig, streams.SubjectBrand("huawei"), streams.BrandUpserted{ID: "huawei", Name: "blank"},
			"index_scheme is required"},
		{streams.ConsumerProjectorConfig, streams.SubjectOLT("olt-1"), streams.OLTUpserted{ID: "olt-2", Name: "stolen", IP: "10.0.0.9", Port: 161, BrandID: "huawei"},
			`id "olt-2" does not match the subject`},
		{streams.ConsumerProjectorVarbinds, streams.SubjectVarbinds("olt-1"), batch("olt-2", "e-forged", 1, t0, huaweiONU{id: 1, serial: 1, desc: "fake", online: true, rx: -2000}),
			`olt_id "olt-2" does not match the subject`},
		{streams.ConsumerProjectorExec, streams.SubjectExec("olt-1", streams.PhaseFailed), streams.ExecutionSucceeded{ExecutionID: "e1", JobID: "j", OLTID: "olt-1", Attempt: 1, StartedAt: t0, FinishedAt: t0},
			`execution.succeeded on subject "facho.exec.olt-1.failed"`},
		{streams.ConsumerProjectorSchedule, streams.SubjectNodeDue("olt-1"), streams.NodeDue{ExecutionID: "e2", JobID: "j", OLTID: "olt-2", Target: streams.Target{Host: "10.0.0.2", Port: 161}, OIDs: huaweiColumns},
			`olt_id "olt-2" does not match the subject`},
	}
	want := map[string]map[uint64]string{}
	for _, b := range bads {
		seq := r.publish(b.subject, b.ev)
		if want[b.consumer] == nil {
			want[b.consumer] = map[uint64]string{}
		}
		want[b.consumer][seq] = b.reason
	}
	last := r.publish(streams.SubjectBrand("zte"), streams.BrandUpserted{ID: "zte", Name: "ZTE", IndexScheme: SchemePonONU})
	r.waitCheckpoint(streams.ConsumerProjectorConfig, last)
	r.eventually("a dead letter per forged event", func() bool { return r.streamMsgs(streams.StreamDLQ) >= uint64(len(bads)) })

	var name, scheme string
	if err := r.pool.QueryRow(ctx, `SELECT name, index_scheme FROM brands WHERE id = 'huawei'`).Scan(&name, &scheme); err != nil {
		t.Fatal(err)
	}
	if name != "Huawei" || scheme != SchemePonONU {
		t.Errorf("brand huawei changed: name %q scheme %q", name, scheme)
	}
	var olts, execs, onus int
	if err := r.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM olts WHERE name = 'stolen'), (SELECT count(*) FROM executions), (SELECT count(*) FROM onu_data)`).Scan(&olts, &execs, &onus); err != nil {
		t.Fatal(err)
	}
	if olts != 0 || execs != 0 || onus != 0 {
		t.Errorf("forged events applied: %d stolen olts, %d executions, %d onus", olts, execs, onus)
	}

	dlq, err := r.js.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for seq := uint64(1); seq <= r.lastSeq(streams.StreamDLQ); seq++ {
		m, err := dlq.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		_, dl, err := streams.Decode[streams.DeadLetter](m.Data)
		if err != nil {
			t.Fatal(err)
		}
		frag, ok := want[dl.Consumer][dl.StreamSeq]
		if !ok {
			continue // e.g. a dead letter of another consumer reading the same message
		}
		seen++
		if !contains(dl.Reason, frag) || !contains(dl.Reason, "malformed event") {
			t.Errorf("%s seq %d: reason %q lacks %q", dl.Consumer, dl.StreamSeq, dl.Reason, frag)
		}
	}
	if seen != len(bads) {
		t.Errorf("%d of %d forged events dead-lettered", seen, len(bads))
	}
}
