package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/natsembed"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/services/projector"
	"github.com/facho-olt/facho/streams"
)

// Huawei MA5800 ONU table columns, as the demo job reads them.
const hwBase = ".1.3.6.1.4.1.2011.6.128.1.1.2."

var noReading = int64(2147483647)

var benchColumns = []streams.OIDSpec{
	{ID: "hw-serial", OID: hwBase[1:] + "43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
	{ID: "hw-desc", OID: hwBase[1:] + "43.1.9", Field: streams.FieldDescription, Decoder: streams.Decoder{Kind: "string"}},
	{ID: "hw-status", OID: hwBase[1:] + "46.1.15", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}},
	{ID: "hw-rx", OID: hwBase[1:] + "51.1.4", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01, NoReading: &noReading}},
}

// The bench's varbind stream is what the pollers of `facho bench` publish
// (services/facho/bench: a discovery job walking the four Huawei ONU
// columns and an optical GET job reading the Rx power, both every cycle,
// on OLTs of 1x16x64 ONUs): benchOLTs OLTs of benchPONs x benchONUsPerPON
// ONUs, benchCycles cycles. A cycle is, per OLT, a discovery walk (rows of
// the four columns, 125 ONUs a batch as the poller's 500-varbind batches
// cut them, the last batch marked Last) and a GET of every ONU's Rx power
// (rows of one value, 500 a batch), the OLTs' batches interleaved as
// concurrent executions publish them. The first cycle discovers every ONU;
// after it, each reading of an online ONU's Rx power moves by 0.01-0.05 dB
// for a quarter of them, and 2% of the ONUs go offline or back online a
// cycle (an offline ONU's Rx power reads as the no-reading value), as on a
// live network. streams.Encode writes the bytes the poller's own encoder
// does (the poller's encode_test checks that).
const (
	benchOLTs             = 10
	benchPONs             = 16
	benchONUsPerPON       = 64
	benchCycles           = 10
	benchRowsPerWalkBatch = 125 // 500 varbinds of 4 columns
	benchRowsPerGetBatch  = 500
)

// benchONUs is the ONUs of one OLT; benchBatches the batches of the
// stream.
const (
	benchONUs    = benchPONs * benchONUsPerPON
	benchBatches = benchOLTs * benchCycles * ((benchONUs+benchRowsPerWalkBatch-1)/benchRowsPerWalkBatch + (benchONUs+benchRowsPerGetBatch-1)/benchRowsPerGetBatch)
)

// benchMessage is one published varbind batch.
type benchMessage struct {
	subject  string
	data     []byte
	varbinds int
}

// benchMessages returns the stream's batches in publish order.
func benchMessages(tb testing.TB, start time.Time) []benchMessage {
	walkCols := benchColumns
	getCols := []streams.OIDSpec{benchColumns[3]}
	type onu struct {
		pon, id int64
		serial  []byte
		online  bool
		rx      int64 // 0.01 dBm
	}
	// Per OLT, its ONUs and the batches of the current cycle.
	fleet := make([][]onu, benchOLTs)
	for o := range fleet {
		for i := 0; i < benchONUs; i++ {
			pon := int64(4194304000 + 8192 + (i/benchONUsPerPON)*256) // slot 1, port i/64
			x := uint32(o*benchONUs + i)
			fleet[o] = append(fleet[o], onu{pon: pon, id: int64(i % benchONUsPerPON),
				serial: []byte{'H', 'W', 'T', 'C', byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)},
				online: (i*7+o)%10 != 0, rx: -800 - int64((i*131+o*17)%1901)})
		}
	}
	hexText := func(s string) string { return hex.EncodeToString([]byte(s)) }
	var out []benchMessage
	for c := 0; c < benchCycles; c++ {
		cycleAt := start.Add(time.Duration(c) * 5 * time.Minute)
		perOLT := make([][]benchMessage, benchOLTs)
		for o := range fleet {
			olt := fmt.Sprintf("olt-%d", o)
			onus := fleet[o]
			if c > 0 {
				for i := range onus {
					if (i*13+c*7+o)%50 == 0 { // 2% a cycle
						onus[i].online = !onus[i].online
					}
				}
			}
			rxRead := func(i, read int) string {
				if !onus[i].online {
					return fmt.Sprint(noReading)
				}
				if c > 0 && (i*31+c*5+read*3+o)%4 == 0 { // a quarter of the readings move
					step := int64(1 + (i+c+read)%5)
					if (i+c)%2 == 0 {
						step = -step
					}
					onus[i].rx = min(-800, max(-2800, onus[i].rx+step))
				}
				return fmt.Sprint(onus[i].rx)
			}
			at := cycleAt.Add(time.Duration(o) * 100 * time.Millisecond)
			publish := func(job, kind string, rev uint64, cols []streams.OIDSpec, n int, last bool, rows []streams.VarbindRow, varbinds int) {
				exec := fmt.Sprintf("%s-%s-%d", job, olt, c)
				bt := streams.VarbindBatch{ExecutionID: exec, JobID: job, OLTID: olt, BrandID: "huawei", IndexScheme: projector.SchemePonONU,
					LeaseRevision: rev, Batch: n, Columns: cols, CollectedAt: at, Rows: rows, Last: last, JobKind: kind}
				at = at.Add(20 * time.Millisecond)
				data, err := streams.Encode("poller-bench", bt.CollectedAt, bt)
				if err != nil {
					tb.Fatal(err)
				}
				perOLT[o] = append(perOLT[o], benchMessage{subject: streams.SubjectVarbinds(olt), data: data, varbinds: varbinds})
			}
			// The discovery walk.
			for first, n := 0, 1; first < len(onus); first, n = first+benchRowsPerWalkBatch, n+1 {
				var rows []streams.VarbindRow
				end := min(first+benchRowsPerWalkBatch, len(onus))
				for i := first; i < end; i++ {
					u := onus[i]
					status := "1"
					if !u.online {
						status = "2"
					}
					rows = append(rows, streams.VarbindRow{Index: fmt.Sprintf("%d.%d", u.pon, u.id), Values: []streams.RowValue{
						{Column: 0, Type: streams.VTOctetString, Value: hex.EncodeToString(u.serial)},
						{Column: 1, Type: streams.VTOctetString, Value: hexText(fmt.Sprintf("cliente-1-%d-%d", (u.pon-4194304000-8192)/256, u.id))},
						{Column: 2, Type: streams.VTInteger, Value: status},
						{Column: 3, Type: streams.VTInteger, Value: rxRead(i, 0)},
					}})
				}
				publish("bench-discovery", streams.KindDiscovery, uint64(2*c+1), walkCols, n, end == len(onus), rows, 4*(end-first))
			}
			// The optical GET.
			for first, n := 0, 1; first < len(onus); first, n = first+benchRowsPerGetBatch, n+1 {
				var rows []streams.VarbindRow
				end := min(first+benchRowsPerGetBatch, len(onus))
				for i := first; i < end; i++ {
					u := onus[i]
					rows = append(rows, streams.VarbindRow{Index: fmt.Sprintf("%d.%d", u.pon, u.id), Values: []streams.RowValue{
						{Column: 0, Type: streams.VTInteger, Value: rxRead(i, 1)}}})
				}
				publish("bench-optical", streams.KindGet, uint64(2*c+2), getCols, n, false, rows, end-first)
			}
		}
		// The OLTs' executions run at once: their batches interleave.
		for i := 0; ; i++ {
			more := false
			for o := range perOLT {
				if i < len(perOLT[o]) {
					out = append(out, perOLT[o][i])
					more = true
				}
			}
			if !more {
				break
			}
		}
	}
	return out
}

// benchStream starts a file-storage server with compression c and fills
// the varbind stream with the batches of benchMessages (n ONU-change
// events per 100); it returns the connection, the stream directory's bytes
// on disk and the varbinds published.
func benchStream(b *testing.B, c string, n int) (jetstream.JetStream, map[string]int64, int) {
	b.Helper()
	dir := b.TempDir()
	srv, err := natsembed.Start(natsembed.Config{Port: -1, StoreDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := streams.Provision(ctx, js, streams.Options{Compression: c, VarbindsMaxAge: 365 * 24 * time.Hour}); err != nil {
		b.Fatal(err)
	}
	varbinds := 0
	at := time.Now().Add(-time.Hour)
	for _, m := range benchMessages(b, at) {
		varbinds += m.varbinds
		_, err := js.PublishAsync(m.subject, m.data)
		if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			// A loaded machine: let the acks catch up.
			<-js.PublishAsyncComplete()
			_, err = js.PublishAsync(m.subject, m.data)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	// ONU changes as the projector publishes them: an ONU whose Rx moved
	// since the last poll (the commonest change), 100 per batch.
	for i := 0; i < n*100; i++ {
		prev := -18.0 - float64(i%700)/100
		cur := prev - 0.01
		ev := streams.ONUChanged{OLTID: fmt.Sprintf("olt-%d", i%10), PonIndex: int64(4194304000 + (i/128%16)*256), ONUID: int64(i % 128),
			Change: streams.ONUUpdated, Previous: &streams.ONUState{Serial: fmt.Sprintf("HWTC%08X", i%20000), Description: "cliente", Status: "ONLINE", RxPowerDBm: &prev},
			Current:     streams.ONUState{Serial: fmt.Sprintf("HWTC%08X", i%20000), Description: "cliente", Status: "ONLINE", RxPowerDBm: &cur},
			ExecutionID: fmt.Sprintf("exec-%d", i/16000), ObservedAt: at.Add(time.Duration(i) * time.Millisecond)}
		id := streams.MsgID("onu", ev.OLTID, uint64(i/100+1), ev.PonIndex, ev.ONUID)
		data, err := streams.EncodeWithID(id, "projector-bench", ev.ObservedAt, ev)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.PublishAsync(streams.SubjectONU(ev.OLTID, ev.Change), data); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		b.Fatal("publish did not complete")
	}
	// On disk after a clean shutdown (blocks are compressed as they are
	// sealed); then the server is started again on the same store.
	srv.Shutdown()
	disk := map[string]int64{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(filepath.Dir(path)) != "msgs" {
			return err
		}
		info, err := d.Info()
		if err == nil {
			disk[filepath.Base(filepath.Dir(filepath.Dir(path)))] += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	srv, err = natsembed.Start(natsembed.Config{Port: -1, StoreDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	nc, err = nats.Connect(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	if js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512)); err != nil {
		b.Fatal(err)
	}
	return js, disk, varbinds
}

// BenchmarkStreamTools prints the stream tools' figures beside a plain
// ordered-consumer read of the same stream, in the same run:
//
//	go test -run '^$' -bench StreamTools -benchtime 1x ./services/facho/cmd/facho
//
// bytes per varbind on disk with S2 and without; messages per second of
// a plain ordered consumer, replay.Read, `facho replay` (JSON lines) and
// `facho export varbinds` (rows per second), `facho rebuild onu_data`
// (events and varbinds per second, Postgres included), and, on 100,000
// execution events, `facho rebuild executions`, `facho rebuild
// coordinator_logs` and `facho rebuild quotas`; each tool's messages per
// second is also printed as a ratio to the plain read of its stream. Each
// rebuild also prints where its time went (replay.Phases: the bulk pass,
// catch-up, and the swap's apply, compare and copy), and runs with the
// options and garbage collector settings `facho rebuild` runs with
// (rebuildGC), as the command would.
func BenchmarkStreamTools(b *testing.B) {
	const batches = benchBatches
	_, rawDisks, varbinds := benchStream(b, streams.CompressionNone, batches)
	js, s2Disks, _ := benchStream(b, streams.CompressionS2, batches)
	rawDisk, s2Disk := rawDisks[streams.StreamVarbinds], s2Disks[streams.StreamVarbinds]
	onus := batches * 100
	fmt.Printf("ONU changes on disk: no compression %.1f B/event, S2 %.1f B/event (%d events)\n",
		float64(rawDisks[streams.StreamONU])/float64(onus), float64(s2Disks[streams.StreamONU])/float64(onus), onus)
	ctx := context.Background()
	s, err := js.Stream(ctx, streams.StreamVarbinds)
	if err != nil {
		b.Fatal(err)
	}
	logical := s.CachedInfo().State.Bytes
	fmt.Printf("%d batches, %d varbinds, %d bytes of messages (%.1f B/varbind)\n", batches, varbinds, logical, float64(logical)/float64(varbinds))
	fmt.Printf("on disk: no compression %d bytes (%.1f B/varbind), S2 %d bytes (%.1f B/varbind), ratio %.2f\n",
		rawDisk, float64(rawDisk)/float64(varbinds), s2Disk, float64(s2Disk)/float64(varbinds), float64(rawDisk)/float64(s2Disk))
	b.ReportMetric(float64(rawDisk)/float64(varbinds), "B/varbind-raw")
	b.ReportMetric(float64(s2Disk)/float64(varbinds), "B/varbind-s2")

	// rate prints what/s and, once the plain read of the stream has set
	// base, the ratio to it (messages per second over messages per second).
	var base float64
	rate := func(what string, unit string, n int, f func() error) float64 {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		el := time.Since(start)
		r := float64(n) / el.Seconds()
		ratio := ""
		if base > 0 && unit == "msgs" {
			ratio = fmt.Sprintf("  (%.2fx the plain read)", r/base)
		}
		fmt.Printf("%-34s %8d %s in %8s: %9.0f %s/s%s\n", what, n, unit, el.Round(time.Millisecond), r, unit, ratio)
		return r
	}
	b.ResetTimer()
	base = rate("plain ordered consumer", "msgs", batches, func() error {
		cons, err := js.OrderedConsumer(ctx, streams.StreamVarbinds, jetstream.OrderedConsumerConfig{})
		if err != nil {
			return err
		}
		it, err := cons.Messages()
		if err != nil {
			return err
		}
		defer it.Stop()
		for i := 0; i < batches; i++ {
			if _, err := it.Next(); err != nil {
				return err
			}
		}
		return nil
	})
	rate("replay.Read", "msgs", batches, func() error {
		_, err := replay.Read(ctx, js, replay.Range{Stream: streams.StreamVarbinds}, func(jetstream.Msg) error { return nil })
		return err
	})
	rate("facho replay (JSON lines)", "msgs", batches, func() error {
		return writeReplay(ctx, js, replay.Range{Stream: streams.StreamVarbinds}, io.Discard, io.Discard)
	})
	var rows int64
	rate("facho export varbinds (CSV)", "rows", varbinds, func() error {
		var err error
		rows, err = exportVarbinds(ctx, js, replay.Range{Stream: streams.StreamVarbinds}, "csv", io.Discard, newProgress(io.Discard, ""))
		return err
	})
	if rows != int64(varbinds) {
		b.Fatalf("exported %d rows, want %d", rows, varbinds)
	}
	rate("facho export varbinds (parquet)", "rows", varbinds, func() error {
		_, err := exportVarbinds(ctx, js, replay.Range{Stream: streams.StreamVarbinds}, "parquet", io.Discard, newProgress(io.Discard, ""))
		return err
	})
	pool := pgtest.New(b)
	models, err := projector.ReadModels(projector.Config{}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	var rep replay.Report
	// again rebuilds model once more over the live rows the first rebuild
	// swapped in: an operator's usual rebuild (a check, or a repair that
	// finds little to change) of a read model the live projection keeps.
	// Its rows equal live, so the swap copies nothing; the first rebuild,
	// into an empty live table, copies every row.
	again := func(what string, n int, m projection.ReadModel) {
		var r replay.Report
		rate(what+" (again: live equal)", "msgs", n, func() error {
			var err error
			defer rebuildGC(os.Getenv)()
			r, err = replay.Rebuild(ctx, js, pool, m, replay.RebuildOptions{Log: zerolog.Nop()})
			return err
		})
		if !r.Identical {
			b.Fatalf("%s rebuilt again differs from the rows it swapped in: %+v", what, r.Tables)
		}
		fmt.Printf("  (%s)\n", r.Phases)
	}
	resetPeakRSS()
	rate("facho rebuild onu_data", "msgs", batches, func() error {
		var err error
		defer rebuildGC(os.Getenv)()
		rep, err = replay.Rebuild(ctx, js, pool, models[0], replay.RebuildOptions{Log: zerolog.Nop()})
		return err
	})
	fmt.Printf("rebuild onu_data: %.0f varbinds/s, peak RSS %d MiB (this process: the rebuild and the embedded NATS server)\n  (%s)\n",
		float64(varbinds)/rep.Duration.Seconds(), peakRSS()>>20, rep.Phases)
	again("facho rebuild onu_data", batches, models[0])

	// The exports beside Postgres's own COPY of the same rows (CSV to
	// nowhere), in the same run: the varbinds loaded into a table of
	// their own for COPY, onu_history and onu_data as the rebuild left
	// them.
	var vcsv bytes.Buffer
	if _, err := exportVarbinds(ctx, js, replay.Range{Stream: streams.StreamVarbinds}, "csv", &vcsv, newProgress(io.Discard, "")); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_varbinds (stream_seq bigint, collected_at timestamptz, olt_id text, execution_id text, batch bigint, oid text, type text, value text)`); err != nil {
		b.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Conn().PgConn().CopyFrom(ctx, &vcsv, `COPY bench_varbinds FROM STDIN (FORMAT csv, HEADER)`); err != nil {
		b.Fatal(err)
	}
	conn.Release()
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE bench_varbinds, onu_history, onu_data`); err != nil {
		b.Fatal(err)
	}
	// Each export and its COPYs run in turns, copyRounds times (the
	// machine's load moves between runs): the rates printed are the
	// medians, the ratios those of the medians.
	const copyRounds = 5
	pgCopy := func(sql string) func() (int64, error) {
		return func() (int64, error) {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				return 0, err
			}
			defer conn.Release()
			tag, err := conn.Conn().PgConn().CopyTo(ctx, io.Discard, sql)
			return tag.RowsAffected(), err
		}
	}
	type contender struct {
		what string
		f    func() (int64, error)
	}
	// compare runs the export (first) and the COPYs of the same rows and
	// prints each one's median rate, the export's as a ratio to each COPY.
	compare := func(export contender, copies ...contender) {
		all := append([]contender{export}, copies...)
		rates := make([][]float64, len(all))
		rows := make([]int64, len(all))
		for r := 0; r < copyRounds; r++ {
			for i, c := range all {
				start := time.Now()
				n, err := c.f()
				if err != nil {
					b.Fatalf("%s: %v", c.what, err)
				}
				rates[i] = append(rates[i], float64(n)/time.Since(start).Seconds())
				rows[i] = n
			}
		}
		med := make([]float64, len(all))
		for i := range all {
			slices.Sort(rates[i])
			med[i] = rates[i][len(rates[i])/2]
			if rows[i] != rows[0] {
				b.Fatalf("%s: %d rows, %s %d", all[i].what, rows[i], all[0].what, rows[0])
			}
		}
		for i, c := range copies {
			fmt.Printf("%-40s %8d rows: %9.0f rows/s (median of %d)\n", c.what, rows[0], med[i+1], copyRounds)
		}
		var ratios []string
		for i, c := range copies {
			ratios = append(ratios, fmt.Sprintf("%.2fx %s", med[0]/med[i+1], c.what))
			name := "x-" + strings.ReplaceAll(strings.TrimPrefix(export.what, "facho export "), " ", "-")
			if i > 0 {
				name += "-ordered"
			}
			b.ReportMetric(med[0]/med[i+1], name)
		}
		fmt.Printf("%-40s %8d rows: %9.0f rows/s (median of %d)  (%s)\n", export.what, rows[0], med[0], copyRounds, strings.Join(ratios, ", "))
	}
	compare(contender{"facho export varbinds (CSV)", func() (int64, error) {
		return exportVarbinds(ctx, js, replay.Range{Stream: streams.StreamVarbinds}, "csv", io.Discard, newProgress(io.Discard, ""))
	}}, contender{"COPY bench_varbinds (CSV)", pgCopy(`COPY bench_varbinds TO STDOUT (FORMAT csv)`)})
	// onu-history is ordered by at: beside the plain COPY of its rows,
	// the COPY of them in that order.
	hr := historyRange{To: time.Now().Add(time.Hour)}
	hwhere := ` FROM onu_history WHERE at >= '1970-01-01T00:00:00Z' AND at <= ` + pgLiteral(hr.To.UTC().Format(time.RFC3339Nano))
	compare(contender{"facho export onu-history (CSV)", func() (int64, error) {
		return exportONUHistory(ctx, pool, hr, "csv", io.Discard, newProgress(io.Discard, ""))
	}}, contender{"COPY onu_history (CSV)", pgCopy(`COPY (SELECT *` + hwhere + `) TO STDOUT (FORMAT csv)`)},
		contender{"COPY onu_history ORDER BY at (CSV)", pgCopy(`COPY (SELECT *` + hwhere + ` ORDER BY at) TO STDOUT (FORMAT csv)`)})
	// onu-data is in no order (the table's).
	compare(contender{"facho export onu-data (CSV)", func() (int64, error) {
		return exportONUData(ctx, pool, "", "csv", io.Discard)
	}}, contender{"COPY onu_data (CSV)", pgCopy(`COPY onu_data TO STDOUT (FORMAT csv)`)})

	// Small events: the execution lifecycle (started, succeeded) of
	// 50,000 executions, and their NodeDue.
	const execs = 50000
	for i := 0; i < execs; i++ {
		olt := fmt.Sprintf("olt-%d", i%10)
		id := fmt.Sprintf("exec-%06d", i)
		at := time.Now().Add(-time.Hour)
		for _, p := range []struct {
			subject string
			ev      streams.Event
		}{
			{streams.SubjectNodeDue(olt), streams.NodeDue{ExecutionID: id, NodeID: "n-" + olt, JobID: "job-get", OLTID: olt, Kind: "get", Priority: 40,
				ScheduledAt: at, Target: streams.Target{Host: "192.0.2.1", Port: 161, CommunityEnc: "sealed"}, OIDs: benchColumns}},
			{streams.SubjectExec(olt, streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: id, JobID: "job-get", OLTID: olt, PollerID: "p1", Attempt: 1, LeaseRevision: 1, StartedAt: at}},
			{streams.SubjectExec(olt, streams.PhaseSucceeded), streams.ExecutionSucceeded{ExecutionID: id, JobID: "job-get", OLTID: olt, PollerID: "p1", Attempt: 1,
				LeaseRevision: 1, StartedAt: at, FinishedAt: at.Add(time.Second), DurationMS: 1000, Varbinds: 512, Batches: 2}},
		} {
			data, err := streams.Encode("bench", at, p.ev)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := js.PublishAsync(p.subject, data); err != nil {
				b.Fatal(err)
			}
		}
	}
	<-js.PublishAsyncComplete()
	es, err := js.Stream(ctx, streams.StreamExec)
	if err != nil {
		b.Fatal(err)
	}
	n := int(es.CachedInfo().State.Msgs)
	fmt.Printf("%d execution events (%.0f B each)\n", n, float64(es.CachedInfo().State.Bytes)/float64(n))
	base = 0
	base = rate("plain ordered consumer (exec)", "msgs", n, func() error {
		cons, err := js.OrderedConsumer(ctx, streams.StreamExec, jetstream.OrderedConsumerConfig{})
		if err != nil {
			return err
		}
		it, err := cons.Messages()
		if err != nil {
			return err
		}
		defer it.Stop()
		for i := 0; i < n; i++ {
			if _, err := it.Next(); err != nil {
				return err
			}
		}
		return nil
	})
	rate("replay.Read (exec)", "msgs", n, func() error {
		_, err := replay.Read(ctx, js, replay.Range{Stream: streams.StreamExec}, func(jetstream.Msg) error { return nil })
		return err
	})
	rate("facho replay (exec, JSON lines)", "msgs", n, func() error {
		return writeReplay(ctx, js, replay.Range{Stream: streams.StreamExec}, io.Discard, io.Discard)
	})
	rate("facho rebuild executions", "msgs", n+execs, func() error {
		var err error
		defer rebuildGC(os.Getenv)()
		rep, err = replay.Rebuild(ctx, js, pool, models[1], replay.RebuildOptions{Log: zerolog.Nop()})
		return err
	})
	if rep.Messages != uint64(n+execs) {
		b.Fatalf("rebuild executions: %v", rep)
	}
	fmt.Printf("  (%d executions, %d attempts; %s)\n", count(b, pool, `SELECT count(*) FROM executions`), count(b, pool, `SELECT count(*) FROM execution_attempts`), rep.Phases)
	again("facho rebuild executions", n+execs, models[1])
	audit, err := auditor.ReadModels(auditor.Config{}, zerolog.Nop(), time.Now)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range audit {
		switch m.Name {
		case auditor.ReadModelCoordinatorLogs:
			rate("facho rebuild coordinator_logs", "msgs", n, func() error {
				var err error
				defer rebuildGC(os.Getenv)()
				rep, err = replay.Rebuild(ctx, js, pool, m, replay.RebuildOptions{Log: zerolog.Nop()})
				return err
			})
			fmt.Printf("  (%d coordinator logs; %s)\n", count(b, pool, `SELECT count(*) FROM coordinator_logs`), rep.Phases)
			again("facho rebuild coordinator_logs", n, m)
		case auditor.ReadModelQuotas:
			// The NodeDue and the execution events (no OLT or audit event).
			rate("facho rebuild quotas", "msgs", n+execs, func() error {
				var err error
				defer rebuildGC(os.Getenv)()
				rep, err = replay.Rebuild(ctx, js, pool, m, replay.RebuildOptions{Log: zerolog.Nop()})
				return err
			})
			fmt.Printf("  (%d trackers, %d executions; %s)\n", count(b, pool, `SELECT count(*) FROM quota_tracker`), count(b, pool, `SELECT count(*) FROM quota_executions`), rep.Phases)
			again("facho rebuild quotas", n+execs, m)
		}
	}
	b.StopTimer()
}

// resetPeakRSS resets the process's peak resident set (Linux: VmHWM).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's peak resident set in bytes since the last
// resetPeakRSS (0 where /proc does not say).
func peakRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func count(b *testing.B, pool *pgxpool.Pool, q string) int64 {
	var n int64
	if err := pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkRebuildONUDataForms runs `facho rebuild onu_data` on the
// stream of BenchmarkStreamTools both ways, in the same run: the model's
// fold (its first pass in memory, the tables copied in) and the batch
// form (Fold unset, every shadow index kept), each first into empty live
// tables and again over the rows it swapped in, beside a plain ordered
// read of the stream:
//
//	go test -run '^$' -bench RebuildONUDataForms -benchtime 1x ./services/facho/cmd/facho
func BenchmarkRebuildONUDataForms(b *testing.B) {
	js, _, varbinds := benchStream(b, streams.CompressionS2, 1)
	ctx := context.Background()
	models, err := projector.ReadModels(projector.Config{}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	batch := models[0]
	batch.Fold = nil
	batch.Tables = append([]projection.Table(nil), batch.Tables...)
	for i := range batch.Tables {
		batch.Tables[i].ShadowNoIndex = false
	}
	b.ResetTimer()
	start := time.Now()
	cons, err := js.OrderedConsumer(ctx, streams.StreamVarbinds, jetstream.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < benchBatches; i++ {
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
	}
	it.Stop()
	plain := float64(benchBatches) / time.Since(start).Seconds()
	fmt.Printf("plain ordered consumer: %.0f msgs/s\n", plain)
	for _, c := range []struct {
		name  string
		model projection.ReadModel
	}{{"batch form", batch}, {"fold", models[0]}} {
		pool := pgtest.New(b)
		for _, when := range []string{"first", "again"} {
			var rep replay.Report
			func() {
				defer rebuildGC(os.Getenv)()
				rep, err = replay.Rebuild(ctx, js, pool, c.model, replay.RebuildOptions{Log: zerolog.Nop()})
			}()
			if err != nil {
				b.Fatal(err)
			}
			if when == "again" && !rep.Identical {
				b.Fatalf("%s rebuilt again differs from the rows it swapped in: %+v", c.name, rep.Tables)
			}
			fmt.Printf("rebuild onu_data, %s, %s: %.0f varbinds/s (%.3fx the plain read's msgs/s)\n  (%s)\n", c.name, when,
				float64(varbinds)/rep.Duration.Seconds(), float64(benchBatches)/rep.Duration.Seconds()/plain, rep.Phases)
		}
	}
}
