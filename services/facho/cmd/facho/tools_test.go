package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/parquet-go/parquet-go"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/streams"
)

// toolsEnv is a server with Facho's identities; the tools run as the
// observer (read-only).
func toolsEnv(t *testing.T) (*jstest.Env, func(string) string) {
	t.Helper()
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	vars := map[string]string{"FACHO_NATS_URL": env.URL, natsauth.EnvNkeySeedFile: natsauth.SeedFile(env.KeysDir, natsauth.Observer)}
	return env, func(k string) string { return vars[k] }
}

func publishExec(t *testing.T, js jetstream.JetStream, olt string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		b, err := streams.Encode("test", time.Now(), streams.ExecutionStarted{ExecutionID: "e" + string(rune('a'+i)), JobID: "j", OLTID: olt, Attempt: 1, StartedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(context.Background(), streams.SubjectExec(olt, streams.PhaseStarted), b); err != nil {
			t.Fatal(err)
		}
	}
}

func lines(t *testing.T, out string) []replayLine {
	t.Helper()
	var got []replayLine
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l replayLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, l)
	}
	return got
}

func TestReplayCommand(t *testing.T) {
	env, getenv := toolsEnv(t)
	publishExec(t, env.JS, "olt-1", 3)
	publishExec(t, env.JS, "olt-2", 2)
	tests := []struct {
		name string
		args []string
		seqs []uint64
	}{
		{"whole stream", []string{"--stream", streams.StreamExec}, []uint64{1, 2, 3, 4, 5}},
		{"from a sequence", []string{"--stream", streams.StreamExec, "--from", "3"}, []uint64{3, 4, 5}},
		{"range", []string{"--stream", streams.StreamExec, "--from", "2", "--to", "3"}, []uint64{2, 3}},
		{"subject filter", []string{"--stream", streams.StreamExec, "--subject", "facho.exec.olt-2.>"}, []uint64{4, 5}},
		{"filter matching nothing after from", []string{"--stream", streams.StreamExec, "--subject", "facho.exec.olt-1.>", "--from", "4"}, nil},
		{"past the end", []string{"--stream", streams.StreamExec, "--from", "99"}, nil},
		{"empty stream", []string{"--stream", streams.StreamAudit}, nil},
		{"from a time ago", []string{"--stream", streams.StreamExec, "--from", "1h"}, []uint64{1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(context.Background(), append([]string{"replay"}, tt.args...), getenv, &out, &errOut); err != nil {
				t.Fatalf("replay: %v (%s)", err, errOut.String())
			}
			got := lines(t, out.String())
			if len(got) != len(tt.seqs) {
				t.Fatalf("%d lines, want %d: %s", len(got), len(tt.seqs), out.String())
			}
			for i, l := range got {
				if l.Seq != tt.seqs[i] || l.Stream != streams.StreamExec || !strings.HasPrefix(l.Subject, "facho.exec.") {
					t.Errorf("line %d: %+v, want seq %d", i, l, tt.seqs[i])
				}
				if _, ev, err := streams.DecodeOn[streams.ExecutionStarted](l.Subject, l.Data); err != nil || ev.OLTID == "" {
					t.Errorf("line %d: data does not decode: %v", i, err)
				}
			}
			if errOut.Len() != 0 {
				t.Errorf("stderr not a terminal, yet: %q", errOut.String())
			}
		})
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"replay", "--from", "1"}, getenv, &out, &errOut); err == nil {
		t.Error("replay without --stream accepted")
	}
}

func TestExportCommand(t *testing.T) {
	env, getenv := toolsEnv(t)
	for i := 0; i < 3; i++ {
		b, err := streams.Encode("test", time.Now(), streams.VarbindBatch{ExecutionID: "e1", JobID: "j", OLTID: "olt-1", Batch: i, Columns: []streams.OIDSpec{{ID: "o1", OID: ".1.2", Field: "rx_power"}},
			CollectedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Varbinds:    []streams.Varbind{{OID: ".1.3.6.1.4.1.2011.6.128.1.1.2.43.1.9.1.1", Type: streams.VTOctetString, Value: "cliente"}, {OID: ".1.2", Type: streams.VTInteger, Value: "-2000"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.JS.Publish(context.Background(), streams.SubjectVarbinds("olt-1"), b); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"export", "varbinds", "--from", "2"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("export: %v", err)
	}
	want := "stream_seq,collected_at,olt_id,execution_id,batch,oid,type,value\n" +
		"2,2026-01-02T03:04:05Z,olt-1,e1,1,.1.3.6.1.4.1.2011.6.128.1.1.2.43.1.9.1.1,OctetString,cliente\n" +
		"2,2026-01-02T03:04:05Z,olt-1,e1,1,.1.2,Integer,-2000\n" +
		"3,2026-01-02T03:04:05Z,olt-1,e1,2,.1.3.6.1.4.1.2011.6.128.1.1.2.43.1.9.1.1,OctetString,cliente\n" +
		"3,2026-01-02T03:04:05Z,olt-1,e1,2,.1.2,Integer,-2000\n"
	if out.String() != want {
		t.Errorf("csv:\n%s\nwant:\n%s", out.String(), want)
	}
	// The same as parquet, read back.
	out.Reset()
	if err := run(context.Background(), []string{"export", "varbinds", "--from", "2", "--format", "parquet"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("export parquet: %v", err)
	}
	rows, err := parquet.Read[varbindRow](bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0].StreamSeq != 2 || rows[0].Value != "cliente" || rows[3].Value != "-2000" || rows[3].Batch != 2 ||
		microsText(rows[0].CollectedAt) != "2026-01-02T03:04:05Z" {
		t.Errorf("parquet rows %+v", rows)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "onu-history", "--from", "1h"}, "DATABASE_URL (or --db) is required"},
		{[]string{"export", "onu-history", "--from", "yesterday"}, "want an RFC 3339 time or a duration ago"},
		{[]string{"export", "onu-history", "--from", "1h", "--to", "2h"}, "is after --to"},
		{[]string{"export", "varbinds", "--format", "xlsx"}, "want csv or parquet"},
		{[]string{"export", "nothing"}, "unknown"},
	} {
		if err := run(context.Background(), tt.args, getenv, &out, &errOut); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestTailLine(t *testing.T) {
	ev := replay.TailEvent{Class: "exec", OLT: "olt-1", Kind: "failed", Summary: "execution e1 attempt 1: timeout",
		Time: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	if got, want := tailLine(ev, false), "10:00:00.000 exec   olt-1        failed      execution e1 attempt 1: timeout"; got != want {
		t.Errorf("plain line %q\nwant       %q", got, want)
	}
	if got := tailLine(ev, true); !strings.Contains(got, "\x1b[31mfailed") {
		t.Errorf("colored line %q", got)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"tail", "--kind", "nonsense"}, func(string) string { return "" }, &out, &errOut); err == nil {
		t.Error("tail --kind nonsense accepted")
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// facho tail --json as the observer: only the filter's events, one JSON
// line each; cancelling (Ctrl-C) ends it without an error.
func TestTailCommand(t *testing.T) {
	env, getenv := toolsEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"tail", "--olt", "olt-1", "--kind", "started", "--json"}, getenv, &out, io.Discard)
	}()
	// The tail starts at "now": publish until it has seen one of ours.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "\n") {
		if time.Now().After(deadline) {
			t.Fatal("tail printed nothing")
		}
		publishExec(t, env.JS, "olt-2", 1) // filtered out: another OLT
		publishExec(t, env.JS, "olt-1", 1)
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("tail after cancel: %v", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev replay.TailEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if ev.OLT != "olt-1" || ev.Kind != "started" || ev.Class != "exec" || !strings.HasPrefix(ev.Summary, "execution e") {
			t.Errorf("event %+v", ev)
		}
	}
}

// facho rebuild and facho export onu-data against a database: the
// executions of a few events are rebuilt (swapped into the empty live
// table), a second run finds them identical, and the export lists onu_data.
func TestRebuildAndExportCommands(t *testing.T) {
	env, getenv := toolsEnv(t)
	dbURL := pgtest.URL(t)
	vars := map[string]string{"DATABASE_URL": dbURL}
	withDB := func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return getenv(k)
	}
	publishExec(t, env.JS, "olt-1", 3)
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"rebuild", "executions"}, withDB, &out, &errOut); err != nil {
		t.Fatalf("rebuild: %v (%s)", err, errOut.String())
	}
	if !strings.Contains(out.String(), "executions: live 0 rows, rebuilt 3 rows") || !strings.Contains(out.String(), "swapped") {
		t.Errorf("report:\n%s", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"rebuild", "executions", "--dry-run"}, withDB, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "identical") {
		t.Errorf("second rebuild:\n%s", out.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rebuild", "onu_history"}, "facho rebuild onu_data"},
		{[]string{"rebuild", "nothing"}, "unknown read model"},
		{[]string{"rebuild"}, "which read model?"},
	} {
		if err := run(context.Background(), tc.args, withDB, &out, &errOut); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	// The shadow prunes onu_history as the projector does: a retention it
	// would refuse is refused, naming the variable.
	for _, bad := range []string{"-1h", "10m", "a year"} {
		vars["FACHO_HISTORY_RETENTION"] = bad
		if err := run(context.Background(), []string{"rebuild", "onu_data", "--dry-run"}, withDB, &out, &errOut); err == nil || !strings.Contains(err.Error(), "FACHO_HISTORY_RETENTION") {
			t.Errorf("FACHO_HISTORY_RETENTION=%s: %v, want an error naming it", bad, err)
		}
	}
	delete(vars, "FACHO_HISTORY_RETENTION")
	db, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(context.Background(), `INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, description, status, rx_power_dbm, first_seen, last_seen, last_execution_id,
			onu_index, port_name, name, tx_power_dbm, olt_rx_power_dbm, distance_m, temperature_c, voltage_v, bias_ma, last_down_cause, last_down_at, last_up_at, model, firmware, removed_at)
		VALUES ('olt-1', 4194304000, 1, 'HWTC00000001', 'cliente, "uno"', 'ONLINE', -21.5, '2026-01-02T03:04:05Z', '2026-01-02T03:04:05Z', 'e1',
			'4194304000.1', '0/1/0:1', 'casa 1', 2.25, -23.1, 1234, 41.5, 3.3, 12.5, 'dying-gasp', '2026-01-01T10:00:00Z', '2026-01-01T10:05:00.5Z', 'HG8245H', 'V5R019', NULL),
		('olt-2', 4194304000, 2, 'HWTC00000002', '', 'OFFLINE', NULL, '2026-01-02T03:04:05Z', '2026-01-02T03:04:05Z', 'e2',
			'', '', '', NULL, NULL, NULL, NULL, NULL, NULL, '', NULL, NULL, '', '', '2026-01-03T00:00:00Z')`); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"export", "onu-data", "--olt", "olt-1"}, withDB, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	want := "olt_id,pon_index,onu_id,serial,description,status,rx_power_dbm,first_seen,last_seen,last_execution_id," +
		"onu_index,port_name,name,tx_power_dbm,olt_rx_power_dbm,distance_m,temperature_c,voltage_v,bias_ma,last_down_cause,last_down_at,last_up_at,model,firmware,removed_at\n" +
		"olt-1,4194304000,1,HWTC00000001,\"cliente, \"\"uno\"\"\",ONLINE,-21.5,2026-01-02T03:04:05Z,2026-01-02T03:04:05Z,e1," +
		"4194304000.1,0/1/0:1,casa 1,2.25,-23.1,1234,41.5,3.3,12.5,dying-gasp,2026-01-01T10:00:00Z,2026-01-01T10:05:00.5Z,HG8245H,V5R019,\n"
	if out.String() != want {
		t.Errorf("export onu-data:\n%s\nwant:\n%s", out.String(), want)
	}
	// Every column of onu_data that is an ONU field is exported, and every
	// field of the ONU state events (what the API's ONU JSON shows).
	rows, err := db.Query(context.Background(), `SELECT column_name FROM information_schema.columns WHERE table_name = 'onu_data' AND table_schema = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	notONUFields := map[string]bool{"seen_by": true, "rx_seen_by": true} // the projector's bookkeeping
	header := strings.Split(strings.SplitN(out.String(), "\n", 2)[0], ",")
	for _, c := range cols {
		if !notONUFields[c] && !slices.Contains(header, c) {
			t.Errorf("onu_data column %s is not exported", c)
		}
	}
	st := reflect.TypeOf(streams.ONUState{})
	for i := 0; i < st.NumField(); i++ {
		if name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ","); name != "" && name != "-" && !slices.Contains(header, name) {
			t.Errorf("ONU field %s is not exported", name)
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"export", "onu-data", "--format", "parquet"}, withDB, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	onus, err := parquet.Read[onuDataRow](bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(onus) != 2 || onus[0].RxPowerDBm == nil || *onus[0].RxPowerDBm != -21.5 || onus[1].RxPowerDBm != nil || onus[1].Status != "OFFLINE" {
		t.Errorf("parquet onus %+v", onus)
	}
	if o := onus[0]; o.PortName != "0/1/0:1" || o.TemperatureC == nil || *o.TemperatureC != 41.5 || o.LastUpAt == nil ||
		microsText(*o.LastUpAt) != "2026-01-01T10:05:00.5Z" || o.RemovedAt != nil || o.Firmware != "V5R019" {
		t.Errorf("parquet vendor fields %+v", o)
	}
	if o := onus[1]; o.RemovedAt == nil || microsText(*o.RemovedAt) != "2026-01-03T00:00:00Z" || o.TxPowerDBm != nil || o.LastDownAt != nil {
		t.Errorf("parquet removed onu %+v", o)
	}
}

// TestReplayLineEncoding: the hand-written JSON line is what encoding/json
// makes of replayLine (the same JSON value), one line each, for data that
// is compact JSON, JSON over several lines, JSON with HTML characters,
// not JSON at all, or empty, and subjects that need escaping.
func TestReplayLineEncoding(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600700800, time.UTC)
	for _, tc := range []struct{ subject, data string }{
		{"facho.exec.olt-1.started", `{"id":"e1","type":"execution.started","data":{"olt_id":"olt-1"}}`},
		{"facho.exec.olt-1.started", "{\n  \"a\": [1, 2],\r\n  \"b\": \"x y\"\n}"},
		{"facho.audit.x", `{"message":"<b>&amp;</b> \u00e9 é"}`},
		{"facho.audit.x", "not json \x00\xff"},
		{"facho.audit.x", ""},
		{"facho.audit.\"q\"<\\>é", `[]`},
	} {
		got := appendReplayLine(nil, "FACHO_AUDIT", 42, tc.subject, at, []byte(tc.data))
		l := replayLine{Stream: "FACHO_AUDIT", Seq: 42, Subject: tc.subject, Time: at}
		if json.Valid([]byte(tc.data)) {
			l.Data = []byte(tc.data)
		} else {
			l.Raw = []byte(tc.data)
		}
		want, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(got, []byte("\n")) != 1 || got[len(got)-1] != '\n' {
			t.Errorf("%q: not one line: %q", tc.data, got)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%q: %v: %s", tc.data, err, got)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("got %s\nwant %s", got, want)
		}
	}
}

// A replay longer than a few of writeReplay's chunks comes out whole and
// in stream order, every line the message as published.
func TestReplayManyChunksInOrder(t *testing.T) {
	env, getenv := toolsEnv(t)
	const n = 5*replayChunk + 17
	js, err := jetstream.New(env.NC, jetstream.WithPublishAsyncMaxPending(1024))
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]byte, n)
	for i := range want {
		b, err := streams.Encode("test", time.Now(), streams.ExecutionStarted{ExecutionID: "e" + strconv.Itoa(i), JobID: "j", OLTID: "olt-1", Attempt: 1, StartedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = b
		if _, err := js.PublishAsync(streams.SubjectExec("olt-1", streams.PhaseStarted), b); err != nil {
			t.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"replay", "--stream", streams.StreamExec}, getenv, &out, &errOut); err != nil {
		t.Fatalf("replay: %v (%s)", err, errOut.String())
	}
	got := lines(t, out.String())
	if len(got) != n {
		t.Fatalf("%d lines, want %d", len(got), n)
	}
	for i, l := range got {
		if l.Seq != uint64(i+1) || !bytes.Equal(l.Data, want[i]) {
			t.Fatalf("line %d: seq %d data %s, want seq %d data %s", i, l.Seq, l.Data, i+1, want[i])
		}
	}
}
