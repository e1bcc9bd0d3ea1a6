package poller

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// rowsOf returns, per row index, the values of that index across every
// batch, and how many rows (in how many batches) carried it.
func rowsOf(batches []streams.VarbindBatch) (values map[string][]streams.RowValue, rows map[string]int) {
	values, rows = map[string][]streams.RowValue{}, map[string]int{}
	for _, b := range batches {
		for _, r := range b.Rows {
			values[r.Index] = append(values[r.Index], r.Values...)
			rows[r.Index]++
		}
	}
	return values, rows
}

func TestRowBufferGroupsByLongestColumnPrefix(t *testing.T) {
	cols := []streams.OIDSpec{
		{ID: "a", OID: ".1.3.6.1.9.1"},
		{ID: "b", OID: "1.3.6.1.9.1.2"}, // under a: the longer prefix wins
		{ID: "c", OID: "1.3.6.1.9.10."},
	}
	rb := newRowBuffer(cols)
	in := []streams.Varbind{
		{OID: "1.3.6.1.9.1.5.7", Type: streams.VTInteger, Value: "1"},   // a, row 5.7
		{OID: "1.3.6.1.9.1.6.7", Type: streams.VTInteger, Value: "2"},   // a, row 6.7
		{OID: "1.3.6.1.9.1.2.5.7", Type: streams.VTGauge32, Value: "3"}, // b, row 5.7
		{OID: "1.3.6.1.9.10.5.7", Type: streams.VTOctetString, Value: "ab"},
		{OID: "1.3.6.1.9.100.5", Type: streams.VTInteger, Value: "9"}, // no column (not c: 100 is not 10)
		{OID: "1.3.6.1.9.1", Type: streams.VTInteger, Value: "8"},     // the column itself: no row
		{OID: "1.3.6.1.9.1.2.6.7", Type: streams.VTGauge32, Value: "4"},
	}
	for _, vb := range in {
		rb.add(vb)
	}
	parts := rb.drain(100, 1<<20)
	if rb.len() != 0 || len(parts) != 1 {
		t.Fatalf("%d left, %d parts", rb.len(), len(parts))
	}
	got := map[string][]streams.RowValue{}
	for _, r := range parts[0].rows {
		got[r.Index] = r.Values
	}
	wantRows := map[string][]streams.RowValue{
		"5.7": {{Column: 0, Type: streams.VTInteger, Value: "1"}, {Column: 1, Type: streams.VTGauge32, Value: "3"}, {Column: 2, Type: streams.VTOctetString, Value: "ab"}},
		"6.7": {{Column: 0, Type: streams.VTInteger, Value: "2"}, {Column: 1, Type: streams.VTGauge32, Value: "4"}},
	}
	if !reflect.DeepEqual(got, wantRows) {
		t.Fatalf("rows %+v, want %+v", got, wantRows)
	}
	if parts[0].rows[0].Index != "5.7" {
		t.Errorf("rows not in the order first read: %+v", parts[0].rows)
	}
	wantLoose := []streams.Varbind{in[4], in[5]}
	if !reflect.DeepEqual(parts[0].varbinds, wantLoose) {
		t.Errorf("loose %+v, want %+v", parts[0].varbinds, wantLoose)
	}
	// The batch as a projector expands it: the varbinds read, no more.
	b := streams.VarbindBatch{Columns: cols, Rows: parts[0].rows, Varbinds: parts[0].varbinds}
	all := b.AllVarbinds()
	if len(all) != len(in) {
		t.Fatalf("expanded to %d varbinds, want %d", len(all), len(in))
	}
	seen := map[string]bool{}
	for _, vb := range all {
		seen[vb.OID+"="+vb.Value] = true
	}
	for _, vb := range in {
		if !seen[vb.OID+"="+vb.Value] {
			t.Errorf("%s lost", vb.OID)
		}
	}
}

func TestRowBufferCutsWholeRowsByCountAndBytes(t *testing.T) {
	cols := []streams.OIDSpec{{OID: "1.1"}, {OID: "1.2"}, {OID: "1.3"}}
	fill := func(rb *rowBuffer, rows int, value string) {
		for c := range cols {
			for r := 0; r < rows; r++ {
				rb.add(streams.Varbind{OID: fmt.Sprintf("1.%d.%d", c+1, r), Type: streams.VTOctetString, Value: value})
			}
		}
	}
	check := func(parts []batchPart, maxN, maxBytes, rows, perRow int) {
		t.Helper()
		seen := map[string]int{}
		for i, p := range parts {
			n, size := 0, 0
			for _, r := range p.rows {
				n += len(r.Values)
				size += rowJSONBase(r.Index)
				for _, v := range r.Values {
					size += rowValueJSONSize(v)
				}
				seen[r.Index] += len(r.Values)
			}
			if n == 0 || n > maxN || (size > maxBytes && len(p.rows) > 1) {
				t.Errorf("part %d: %d varbinds, %d bytes (limits %d, %d)", i, n, size, maxN, maxBytes)
			}
		}
		if len(seen) != rows {
			t.Fatalf("%d rows, want %d", len(seen), rows)
		}
		for idx, n := range seen {
			if n != perRow {
				t.Errorf("row %s: %d values, want %d", idx, n, perRow)
			}
		}
	}

	// By count: batches of 10 hold 3 whole rows (9 varbinds).
	rb := newRowBuffer(cols)
	fill(rb, 20, "00")
	parts := rb.drain(10, 1<<20)
	check(parts, 10, 1<<20, 20, 3)
	if len(parts) != 7 || len(parts[0].rows) != 3 {
		t.Errorf("%d parts, first with %d rows; want 7 of 3 rows (the last 2)", len(parts), len(parts[0].rows))
	}
	for _, p := range parts {
		for _, r := range p.rows {
			if len(r.Values) != 3 {
				t.Errorf("row %s split: %d values", r.Index, len(r.Values))
			}
		}
	}

	// By bytes: long values, a budget of about two rows.
	long := strings.Repeat("ab", 100)
	rb = newRowBuffer(cols)
	fill(rb, 10, long)
	rowBytes := rowJSONBase("0") + 3*rowValueJSONSize(streams.RowValue{Column: 0, Type: streams.VTOctetString, Value: long})
	parts = rb.drain(1000, 2*rowBytes+10)
	check(parts, 1000, 2*rowBytes+10, 10, 3)
	if len(parts) != 5 {
		t.Errorf("%d parts, want 5 of 2 rows", len(parts))
	}

	// A row larger than a batch is split, nothing lost.
	rb = newRowBuffer(cols)
	fill(rb, 4, "01")
	parts = rb.drain(2, 1<<20)
	check(parts, 2, 1<<20, 4, 3)
	if len(parts) != 8 { // each row: 2 values, then 1
		t.Errorf("%d parts, want 8", len(parts))
	}
}

// A walk of the simulator publishes every ONU's columns together: one row
// per ONU in one batch, with a value for each of the 4 columns.
func TestWalkPublishesEachONUAsOneRow(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1})
	node := e.nodeDue("olt-a", "exec-rows", "job-disc")
	e.publishNodeDue(t, node)
	ev := e.waitEnded(t, "olt-a", "exec-rows", 30*time.Second)
	if len(ev.succeeded) != 1 {
		t.Fatalf("events %+v", ev)
	}
	batches := e.batches(t, "olt-a", "exec-rows")
	if len(batches) != 1 || !batches[0].Last || len(batches[0].Varbinds) != 0 {
		t.Fatalf("%d batches, want one Last batch of rows (%+v)", len(batches), batches)
	}
	values, rows := rowsOf(batches)
	onus := e.fleet.OLT("olt-a").ONUs()
	if len(values) != len(onus) {
		t.Fatalf("%d rows, want one per ONU (%d)", len(values), len(onus))
	}
	for _, o := range onus {
		vals := values[o.Index]
		if rows[o.Index] != 1 || len(vals) != len(huaweiColumns) {
			t.Fatalf("ONU %s: %d rows, %d values", o.Index, rows[o.Index], len(vals))
		}
		for i, v := range vals {
			if v.Column != i {
				t.Errorf("ONU %s value %d: column %d", o.Index, i, v.Column)
			}
		}
	}
	if sameAsTruth(batches[0].AllVarbinds(), huaweiTruth(t, e.fleet.OLT("olt-a"))) != "" {
		t.Fatal(sameAsTruth(batches[0].AllVarbinds(), huaweiTruth(t, e.fleet.OLT("olt-a"))))
	}
}

// A row buffer smaller than the table is published when full: more,
// less grouped batches, every varbind once, Last on the final one only.
func TestRowBufferBoundPublishesEarly(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, RowBufferVarbinds: 40, BatchSize: 500})
	e.publishNodeDue(t, e.nodeDue("olt-a", "exec-bound", "job-disc"))
	ev := e.waitEnded(t, "olt-a", "exec-bound", 30*time.Second)
	if len(ev.succeeded) != 1 {
		t.Fatalf("events %+v", ev)
	}
	batches := e.batches(t, "olt-a", "exec-bound")
	// 128 varbinds, published every 40: 3 early batches, then the 8 left
	// with Last.
	if len(batches) != 4 || ev.succeeded[0].Batches != 4 {
		t.Fatalf("%d batches (succeeded says %d), want 4", len(batches), ev.succeeded[0].Batches)
	}
	total := 0
	for i, b := range batches {
		if b.Last != (i == len(batches)-1) {
			t.Errorf("batch %d of %d: last=%v", b.Batch, len(batches), b.Last)
		}
		if n := b.VarbindCount(); n > 40 {
			t.Errorf("batch %d: %d varbinds, more than the buffer holds", b.Batch, n)
		}
		total += b.VarbindCount()
	}
	if total != 128 {
		t.Fatalf("%d varbinds published, want 128", total)
	}
	var all []streams.Varbind
	for _, b := range batches {
		all = append(all, b.AllVarbinds()...)
	}
	if diff := sameAsTruth(all, huaweiTruth(t, e.fleet.OLT("olt-a"))); diff != "" {
		t.Fatal(diff)
	}
}

// A get publishes each ONU's columns in one row too, even with PDUs of
// several ONUs answered out of order.
func TestGetPublishesEachONUAsOneRow(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	sim := e.fleet.OLT("olt-a")
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, GetChunk: 6, GetConcurrency: 4, BatchSize: 20})
	onus := sim.ONUs()
	e.publishDiscovered(t, "olt-a", onus)
	got := e.runGet(t, "olt-a", "exec-get-rows", huaweiColumns, streams.SNMPTuning{})
	if got.count != len(onus)*len(huaweiColumns) {
		t.Fatalf("%d varbinds", got.count)
	}
	batches := e.batches(t, "olt-a", "exec-get-rows")
	values, rows := rowsOf(batches)
	for _, b := range batches {
		if len(b.Varbinds) != 0 || b.VarbindCount() > 20 {
			t.Errorf("batch %d: %d raw varbinds, %d in all", b.Batch, len(b.Varbinds), b.VarbindCount())
		}
	}
	if len(values) != len(onus) {
		t.Fatalf("%d rows, want %d", len(values), len(onus))
	}
	for _, o := range onus {
		if rows[o.Index] != 1 || len(values[o.Index]) != len(huaweiColumns) {
			t.Errorf("ONU %s: %d rows, %d values", o.Index, rows[o.Index], len(values[o.Index]))
		}
	}
}

// A walk that fails mid-way still publishes what it read (never Last), as
// it did batch by batch before rows were buffered.
func TestFailedWalkPublishesWhatItRead(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{Latency: 50 * time.Millisecond}))
	_, _ = e.startPoller(t, Config{PollerID: "p1", Workers: 1, MaxRepetitions: 2, SNMPTimeout: 200 * time.Millisecond, SNMPRetries: -1, PDURetries: -1})
	sim := e.fleet.OLT("olt-a")
	e.publishNodeDue(t, e.nodeDue("olt-a", "exec-partial", "job"))
	waitFor(t, 30*time.Second, "the walk to be under way", func() bool { return sim.Record().Requests >= 10 })
	sim.SetFaults(oltsim.Faults{NoAnswer: true})
	ev := e.waitEnded(t, "olt-a", "exec-partial", 30*time.Second)
	if len(ev.failed) != 1 {
		t.Fatalf("events %+v", ev)
	}
	n := 0
	for _, b := range e.batches(t, "olt-a", "exec-partial") {
		if b.Last {
			t.Fatalf("failed walk published a Last batch")
		}
		n += b.VarbindCount()
	}
	if n < 18 || n >= 128 {
		t.Fatalf("%d varbinds published, want those of the requests answered", n)
	}
}
