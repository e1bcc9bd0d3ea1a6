package projector

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// A get's readings (exact instance OIDs under the job's column OIDs, no
// Last) land in onu_data like a walk's: the fields it read change, the
// others stay; it never clears the Rx power of the ONUs it did not read
// (only a walk's Last batch does). An Rx read as NoSuchInstance (the OLT
// dropped the ONU's optical row) is no reading, and creates no ONU. Its
// per-ONU failures are kept with the execution.
func TestGetReadingsAndFailures(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	onus := []huaweiONU{
		{id: 0, serial: 10, desc: "c0", online: true, rx: -2000},
		{id: 1, serial: 11, desc: "c1", online: true, rx: -2100},
		{id: 2, serial: 12, desc: "c2", online: true, rx: -2200},
		{id: 3, serial: 13, desc: "c3", online: true, rx: -2300},
	}
	walk := batch("olt-g", "walk-1", 1, t0, onus...)
	walk.Last = true
	r.publish(streams.SubjectVarbinds("olt-g"), walk)

	// The get reads status and Rx of ONUs 0 and 1 (ONU 1 now offline,
	// no reading); ONU 2's Rx instance is gone (NoSuchInstance).
	get := streams.VarbindBatch{ExecutionID: "get-1", JobID: "job-get", OLTID: "olt-g", BrandID: "huawei", IndexScheme: SchemePonONU,
		LeaseRevision: 2, Batch: 1, Columns: []streams.OIDSpec{huaweiColumns[2], huaweiColumns[3]}, CollectedAt: t0.Add(time.Minute),
		Varbinds: []streams.Varbind{
			vb(hwBase+"46.1.15.4194304000.0", integerVB(1)), vb(hwBase+"51.1.4.4194304000.0", integerVB(-1950)),
			vb(hwBase+"46.1.15.4194304000.1", integerVB(2)), vb(hwBase+"51.1.4.4194304000.1", integerVB(2147483647)),
			vb(hwBase+"51.1.4.4194304000.2", streams.Varbind{Type: streams.VTNoSuchInstance}),
			vb(hwBase+"51.1.4.4194304000.9", streams.Varbind{Type: streams.VTNoSuchInstance}), // not an ONU of ours
		}}
	seq := r.publish(streams.SubjectVarbinds("olt-g"), get)
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	got := r.onus("olt-g")
	want := map[int64]onuRow{}
	for _, o := range onus {
		want[o.id] = o.row(pon0)
	}
	rx0 := -19.5
	w0 := want[0]
	w0.RxPowerDBm = &rx0
	want[0] = w0
	w1 := want[1]
	w1.Status, w1.RxPowerDBm = "OFFLINE", nil
	want[1] = w1
	w2 := want[2]
	w2.RxPowerDBm = nil
	want[2] = w2
	if len(got) != len(onus) {
		t.Errorf("onu_data has %d rows, want %d: a NoSuchInstance created an ONU", len(got), len(onus))
	}
	for id, w := range want {
		if g := got[ONUKey{pon0, id}]; !sameRow(g, w) {
			t.Errorf("onu %d = %+v, want %+v", id, g, w)
		}
	}

	failure := streams.ONUFailure{Instance: "4194304000.2", PonIndex: pon0, ONUID: 2,
		OIDs: []string{hwBase + "46.1.15.4194304000.2"}, Error: "tooBig"}
	seq = r.publish(streams.SubjectExec("olt-g", streams.PhaseSucceeded), streams.ExecutionSucceeded{
		ExecutionID: "get-1", JobID: "job-get", OLTID: "olt-g", PollerID: "p1", Attempt: 1, LeaseRevision: 2,
		StartedAt: t0, FinishedAt: t0.Add(time.Minute), DurationMS: 60000, Varbinds: 5, Batches: 1,
		ONUs: 3, FailedONUs: 1, FailedVarbinds: 1, ONUFailures: []streams.ONUFailure{failure}})
	r.waitCheckpoint(streams.ConsumerProjectorExec, seq)
	var status string
	var n, failedONUs, failedVarbinds int
	var raw []byte
	if err := r.pool.QueryRow(context.Background(), `SELECT status, onus, failed_onus, failed_varbinds, onu_failures FROM executions WHERE id = 'get-1'`).
		Scan(&status, &n, &failedONUs, &failedVarbinds, &raw); err != nil {
		t.Fatal(err)
	}
	var failures []streams.ONUFailure
	if err := json.Unmarshal(raw, &failures); err != nil {
		t.Fatal(err)
	}
	if status != StatusSuccess || n != 3 || failedONUs != 1 || failedVarbinds != 1 || len(failures) != 1 ||
		failures[0].Instance != failure.Instance || failures[0].OIDs[0] != failure.OIDs[0] || failures[0].Error != "tooBig" {
		t.Errorf("execution %s onus %d failed %d/%d %+v", status, n, failedONUs, failedVarbinds, failures)
	}
}
