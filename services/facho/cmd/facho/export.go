package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/parquet-go/parquet-go"

	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/streams"
)

// onuDataRow is one onu_data row as exported: every field of an ONU as
// the API's ONU JSON has it, with its OLT and the execution that last read
// it (parquet column names are the CSV header's). The first ten columns
// are those of older versions, in their order; the vendor profile fields
// and removed_at follow.
type onuDataRow struct {
	OLTID           string   `parquet:"olt_id,dict"`
	PonIndex        int64    `parquet:"pon_index"`
	ONUID           int64    `parquet:"onu_id"`
	Serial          string   `parquet:"serial"`
	Description     string   `parquet:"description"`
	Status          string   `parquet:"status,dict"`
	RxPowerDBm      *float64 `parquet:"rx_power_dbm,optional"`
	FirstSeen       int64    `parquet:"first_seen,timestamp(microsecond)"`
	LastSeen        int64    `parquet:"last_seen,timestamp(microsecond)"`
	LastExecutionID string   `parquet:"last_execution_id"`
	ONUIndex        string   `parquet:"onu_index"`
	PortName        string   `parquet:"port_name"`
	Name            string   `parquet:"name"`
	TxPowerDBm      *float64 `parquet:"tx_power_dbm,optional"`
	OLTRxPowerDBm   *float64 `parquet:"olt_rx_power_dbm,optional"`
	DistanceM       *float64 `parquet:"distance_m,optional"`
	TemperatureC    *float64 `parquet:"temperature_c,optional"`
	VoltageV        *float64 `parquet:"voltage_v,optional"`
	BiasMA          *float64 `parquet:"bias_ma,optional"`
	LastDownCause   string   `parquet:"last_down_cause,dict"`
	LastDownAt      *int64   `parquet:"last_down_at,optional,timestamp(microsecond)"`
	LastUpAt        *int64   `parquet:"last_up_at,optional,timestamp(microsecond)"`
	Model           string   `parquet:"model,dict"`
	Firmware        string   `parquet:"firmware,dict"`
	RemovedAt       *int64   `parquet:"removed_at,optional,timestamp(microsecond)"`
}

func (r onuDataRow) csv() []string {
	num := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'f', -1, 64)
	}
	at := func(p *int64) string {
		if p == nil {
			return ""
		}
		return microsText(*p)
	}
	return []string{r.OLTID, strconv.FormatInt(r.PonIndex, 10), strconv.FormatInt(r.ONUID, 10), r.Serial, r.Description, r.Status, num(r.RxPowerDBm),
		microsText(r.FirstSeen), microsText(r.LastSeen), r.LastExecutionID,
		r.ONUIndex, r.PortName, r.Name, num(r.TxPowerDBm), num(r.OLTRxPowerDBm), num(r.DistanceM), num(r.TemperatureC), num(r.VoltageV), num(r.BiasMA),
		r.LastDownCause, at(r.LastDownAt), at(r.LastUpAt), r.Model, r.Firmware, at(r.RemovedAt)}
}

var onuDataHeader = []string{"olt_id", "pon_index", "onu_id", "serial", "description", "status", "rx_power_dbm", "first_seen", "last_seen", "last_execution_id",
	"onu_index", "port_name", "name", "tx_power_dbm", "olt_rx_power_dbm", "distance_m", "temperature_c", "voltage_v", "bias_ma",
	"last_down_cause", "last_down_at", "last_up_at", "model", "firmware", "removed_at"}

// varbindRow is one raw reading of a varbind batch.
type varbindRow struct {
	StreamSeq   int64  `parquet:"stream_seq,delta"`
	CollectedAt int64  `parquet:"collected_at,timestamp(microsecond)"`
	OLTID       string `parquet:"olt_id,dict"`
	ExecutionID string `parquet:"execution_id,dict"`
	Batch       int64  `parquet:"batch"`
	OID         string `parquet:"oid"`
	Type        string `parquet:"type,dict"`
	Value       string `parquet:"value"`
}

func (r varbindRow) csv() []string {
	return []string{strconv.FormatInt(r.StreamSeq, 10), microsText(r.CollectedAt), r.OLTID, r.ExecutionID, strconv.FormatInt(r.Batch, 10), r.OID, r.Type, r.Value}
}

var varbindHeader = []string{"stream_seq", "collected_at", "olt_id", "execution_id", "batch", "oid", "type", "value"}

// onuHistoryRow is one onu_history row: one change of one ONU field.
// Values are text as stored (numbers in Go's 'g' format, times RFC 3339
// UTC); no value is a parquet null and an empty CSV cell.
type onuHistoryRow struct {
	At          int64   `parquet:"at,timestamp(microsecond)"`
	OLTID       string  `parquet:"olt_id,dict"`
	PonIndex    int64   `parquet:"pon_index"`
	ONUID       int64   `parquet:"onu_id"`
	Field       string  `parquet:"field,dict"`
	OldValue    *string `parquet:"old_value,optional"`
	NewValue    *string `parquet:"new_value,optional"`
	ExecutionID string  `parquet:"execution_id,dict"`
	StreamSeq   int64   `parquet:"stream_seq"`
}

func (r onuHistoryRow) csv() []string {
	text := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return []string{microsText(r.At), r.OLTID, strconv.FormatInt(r.PonIndex, 10), strconv.FormatInt(r.ONUID, 10), r.Field,
		text(r.OldValue), text(r.NewValue), r.ExecutionID, strconv.FormatInt(r.StreamSeq, 10)}
}

var onuHistoryHeader = []string{"at", "olt_id", "pon_index", "onu_id", "field", "old_value", "new_value", "execution_id", "stream_seq"}

func microsText(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339Nano) }

// rowWriter writes rows of T as CSV or parquet. A CSV writer also takes
// lines built by the caller (appendCSVField), buffered here: the varbind
// export writes its rows so, without a []string per row.
type rowWriter[T interface{ csv() []string }] struct {
	csv     *csv.Writer
	w       io.Writer
	raw     []byte // CSV lines not yet written to w
	parquet *parquet.GenericWriter[T]
	buf     []T
	n       int64
}

// rawFlushBytes is how much CSV a rowWriter buffers before writing.
const rawFlushBytes = 256 << 10

func newRowWriter[T interface{ csv() []string }](w io.Writer, format string, header []string) (*rowWriter[T], error) {
	switch format {
	case "csv":
		cw := csv.NewWriter(w) // buffered: flushed by close
		if err := cw.Write(header); err != nil {
			return nil, err
		}
		cw.Flush() // before any line written raw
		if err := cw.Error(); err != nil {
			return nil, err
		}
		return &rowWriter[T]{csv: cw, w: w}, nil
	case "parquet":
		return &rowWriter[T]{parquet: parquet.NewGenericWriter[T](w, parquet.Compression(&parquet.Zstd))}, nil
	}
	return nil, fmt.Errorf("format %q: want csv or parquet", format)
}

func (rw *rowWriter[T]) write(r T) error {
	rw.n++
	if rw.csv != nil {
		return rw.csv.Write(r.csv())
	}
	rw.buf = append(rw.buf, r)
	if len(rw.buf) >= 4096 {
		return rw.flushParquet()
	}
	return nil
}

// line takes one CSV line (with its newline) built by the caller, of a
// writer whose rows all go this way.
func (rw *rowWriter[T]) line(l []byte) error {
	rw.n++
	rw.raw = append(rw.raw, l...)
	if len(rw.raw) >= rawFlushBytes {
		return rw.flushRaw()
	}
	return nil
}

func (rw *rowWriter[T]) flushRaw() error {
	if len(rw.raw) == 0 {
		return nil
	}
	_, err := rw.w.Write(rw.raw)
	rw.raw = rw.raw[:0]
	return err
}

func (rw *rowWriter[T]) flushParquet() error {
	if _, err := rw.parquet.Write(rw.buf); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	rw.buf = rw.buf[:0]
	return nil
}

// close writes what is buffered (and the parquet footer).
func (rw *rowWriter[T]) close() error {
	if rw.csv != nil {
		rw.csv.Flush()
		if err := rw.csv.Error(); err != nil {
			return err
		}
		return rw.flushRaw()
	}
	if err := rw.flushParquet(); err != nil {
		return err
	}
	if err := rw.parquet.Close(); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	return nil
}

// appendCSVField appends f as encoding/csv writes a field (comma, no
// CRLF): quoted when it has a comma, a quote, a CR or LF, starts with a
// space, or is \. ; quotes doubled.
func appendCSVField(w []byte, f string) []byte {
	if !csvNeedsQuotes(f) {
		return append(w, f...)
	}
	w = append(w, '"')
	for i := 0; i < len(f); i++ {
		if f[i] == '"' {
			w = append(w, '"')
		}
		w = append(w, f[i])
	}
	return append(w, '"')
}

func csvNeedsQuotes(f string) bool {
	if f == "" {
		return false
	}
	if f == `\.` {
		return true
	}
	for i := 0; i < len(f); i++ {
		if c := f[i]; c == '\n' || c == '\r' || c == '"' || c == ',' {
			return true
		}
	}
	r, _ := utf8.DecodeRuneInString(f)
	return unicode.IsSpace(r)
}

func runExport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("export: what? onu-data, onu-history, varbinds")
	}
	what := args[0]
	fs := flag.NewFlagSet("export "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "varbinds: first message (sequence, RFC 3339 time or duration ago); onu-history: first change (RFC 3339 time or duration ago; default: the oldest)")
	to := fs.String("to", "", "varbinds: last message (sequence or time; default: the stream's end); onu-history: last change (RFC 3339 time or duration ago; default: now)")
	olt := fs.String("olt", "", "only this OLT id")
	format := fs.String("format", "csv", "csv or parquet (zstd; DuckDB reads both)")
	outPath := fs.String("out", "-", "write to this file (written whole or not at all); - is standard output")
	dbURL := fs.String("db", getenv("DATABASE_URL"), "onu-data, onu-history: Postgres URL (DATABASE_URL)")
	nf := addNATSFlags(fs, getenv)
	if ok, err := parseFlags(fs, args[1:]); !ok {
		return err
	}
	if *format != "csv" && *format != "parquet" {
		return fmt.Errorf("export: format %q: want csv or parquet", *format)
	}
	switch what {
	case "onu-data", "onu-history", "varbinds":
	default:
		return fmt.Errorf("export: unknown %q: want onu-data, onu-history, varbinds", what)
	}
	var hr historyRange
	if what == "onu-history" {
		now := time.Now()
		var err error
		if hr.From, err = parseTimeFlag(*from, now); err != nil {
			return fmt.Errorf("export onu-history --from: %w", err)
		}
		if hr.To, err = parseTimeFlag(*to, now); err != nil {
			return fmt.Errorf("export onu-history --to: %w", err)
		}
		if hr.To.IsZero() {
			hr.To = now
		}
		if hr.From.After(hr.To) {
			return fmt.Errorf("export onu-history: --from %s is after --to %s", hr.From.Format(time.RFC3339), hr.To.Format(time.RFC3339))
		}
		hr.OLT = *olt
	}
	out, err := openOut(*outPath, stdout)
	if err != nil {
		return fmt.Errorf("export %s: %w", what, err)
	}
	err = exportTo(ctx, what, out, *olt, *format, *from, *to, nf.databaseURL(*dbURL), hr, nf, stderr)
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("export %s: stopped: %w", what, ctx.Err()) // a cut file is not a result
	}
	return out.done(err)
}

func exportTo(ctx context.Context, what string, w io.Writer, olt, format, from, to, dbURL string, hr historyRange, nf *natsFlags, stderr io.Writer) error {
	switch what {
	case "onu-data", "onu-history":
		if dbURL == "" {
			return fmt.Errorf("export %s: DATABASE_URL (or --db) is required", what)
		}
		pool, err := pgxpool.New(ctx, dbURL)
		if err != nil {
			return fmt.Errorf("export %s: database: %w", what, err)
		}
		defer pool.Close()
		if what == "onu-data" {
			_, err = exportONUData(ctx, pool, olt, format, w)
			return err
		}
		start := time.Now()
		n, err := exportONUHistory(ctx, pool, hr, format, w, newProgress(stderr, "export onu-history"))
		if err == nil {
			fmt.Fprintf(stderr, "export onu-history: %d rows (%s .. %s) in %s, %.0f rows/s\n", n,
				hr.fromText(), hr.To.UTC().Format(time.RFC3339), time.Since(start).Round(time.Millisecond), float64(n)/max(time.Since(start).Seconds(), 1e-3))
		}
		return err
	}
	r := replay.Range{Stream: streams.StreamVarbinds}
	var err error
	if r.From, err = parsePosition(from, time.Now()); err != nil {
		return fmt.Errorf("export --from: %w", err)
	}
	if r.To, err = parsePosition(to, time.Now()); err != nil {
		return fmt.Errorf("export --to: %w", err)
	}
	if olt != "" {
		r.Subjects = []string{streams.SubjectVarbinds(olt)}
	}
	nc, js, err := nf.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = exportVarbinds(ctx, js, r, format, w, newProgress(stderr, "export varbinds"))
	return err
}

// output is where an export goes: standard output, or a file written
// beside its final name and renamed there only when the export succeeded.
type output struct {
	io.Writer
	f    *os.File
	path string
}

func openOut(path string, stdout io.Writer) (*output, error) {
	if path == "" || path == "-" {
		return &output{Writer: stdout}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.part")
	if err != nil {
		return nil, err
	}
	return &output{Writer: bufio.NewWriterSize(f, 1<<20), f: f, path: path}, nil
}

// done finishes the file after an export that returned err: renamed into
// place on success, removed otherwise.
func (o *output) done(err error) error {
	if o.f == nil {
		return err
	}
	if err == nil {
		err = o.Writer.(*bufio.Writer).Flush()
	}
	if err == nil {
		err = o.f.Sync()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.f.Name(), o.path)
	}
	if err != nil {
		_ = os.Remove(o.f.Name())
	}
	return err
}

// historyRange selects onu_history rows: changes at From..To (From zero:
// from the oldest), of one OLT or all.
type historyRange struct {
	From, To time.Time
	OLT      string
}

func (h historyRange) fromText() string {
	if h.From.IsZero() {
		return "the oldest"
	}
	return h.From.UTC().Format(time.RFC3339)
}

// parseTimeFlag reads an RFC 3339 time or a duration ago (e.g. 24h);
// empty is the zero time.
func parseTimeFlag(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time or a duration ago (e.g. 24h)", v)
}

// exportONUHistory writes the onu_history rows of h, oldest change first,
// and returns the rows written. The CSV's changes of one time (one
// message's, as a rule) are in no guaranteed order; parquet orders them
// by OLT, PON, ONU, message and field.
//
// Ordered by at alone, Postgres reads each day's partition in the order
// of its index on at and sorts nothing; a tie-break (OLT, PON, ONU,
// message, field) made it sort every time's rows, which cost more than
// the rest of the export (see docs/benchmarks.md).
func exportONUHistory(ctx context.Context, pool *pgxpool.Pool, h historyRange, format string, w io.Writer, bar *progress) (int64, error) {
	const where = ` FROM onu_history WHERE at >= $1 AND at <= $2 AND ($3 = '' OR olt_id = $3)`
	from := h.From
	if from.IsZero() {
		from = time.Unix(0, 0)
	}
	var total int64
	if bar.on { // the count is for the bar only
		if err := pool.QueryRow(ctx, `SELECT count(*)`+where, from, h.To, h.OLT).Scan(&total); err != nil {
			return 0, fmt.Errorf("export onu-history: %w", err)
		}
	}
	if format == "csv" {
		// Postgres writes the CSV (COPY), pgCSV the times and empty cells
		// as the Go path would.
		q := `SELECT at, olt_id, pon_index, onu_id, field, old_value, new_value, execution_id, stream_seq
			FROM onu_history WHERE at >= ` + pgLiteral(from.UTC().Format(time.RFC3339Nano)) + ` AND at <= ` + pgLiteral(h.To.UTC().Format(time.RFC3339Nano))
		if h.OLT != "" {
			q += ` AND olt_id = ` + pgLiteral(h.OLT)
		}
		n, err := copyCSV(ctx, pool, w, q+` ORDER BY at`, []int{0}, nil, bar, total)
		if err != nil {
			return n, fmt.Errorf("export onu-history: %w", err)
		}
		return n, nil
	}
	out, err := newRowWriter[onuHistoryRow](w, format, onuHistoryHeader)
	if err != nil {
		return 0, err
	}
	// Parquet breaks ties too: its encoding costs more than the sort.
	rows, err := pool.Query(ctx, `SELECT at, olt_id, pon_index, onu_id, field, old_value, new_value, execution_id, stream_seq`+where+
		` ORDER BY at, olt_id, pon_index, onu_id, stream_seq, field`, from, h.To, h.OLT)
	if err != nil {
		return 0, fmt.Errorf("export onu-history: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r onuHistoryRow
		var at time.Time
		if err := rows.Scan(&at, &r.OLTID, &r.PonIndex, &r.ONUID, &r.Field, &r.OldValue, &r.NewValue, &r.ExecutionID, &r.StreamSeq); err != nil {
			return out.n, fmt.Errorf("export onu-history: %w", err)
		}
		r.At = at.UnixMicro()
		if err := out.write(r); err != nil {
			return out.n, err
		}
		bar.update(uint64(out.n), uint64(total))
	}
	bar.finish()
	if err := rows.Err(); err != nil {
		return out.n, fmt.Errorf("export onu-history: %w", err)
	}
	return out.n, out.close()
}

// exportONUData writes onu_data and returns the rows written: as CSV in
// no guaranteed order (the table's), as parquet by OLT, PON and ONU.
//
// An ONU's row is written only when the ONU changes: an ONU the OLT's
// last complete walk (onu_walks) did not mark removed was seen by it, so
// its last_seen and last_execution_id are the walk's when the walk is
// later. As CSV, Postgres copies onu_data as it is and the walks are
// applied here, on the way out (a join and a sort in the COPY's query
// made Postgres's part of the export about twice a plain COPY's).
func exportONUData(ctx context.Context, pool *pgxpool.Pool, olt, format string, w io.Writer) (int64, error) {
	if format == "csv" {
		q := `SELECT ` + strings.Join(onuDataHeader, ", ") + ` FROM onu_data`
		if olt != "" {
			q += ` WHERE olt_id = ` + pgLiteral(olt)
		}
		n, err := copyCSV(ctx, pool, w, q, []int{7, 8, 20, 21, 24}, onuWalksFix(olt), newProgress(io.Discard, ""), 0)
		if err != nil {
			return n, fmt.Errorf("export onu-data: %w", err)
		}
		return n, nil
	}
	out, err := newRowWriter[onuDataRow](w, format, onuDataHeader)
	if err != nil {
		return 0, err
	}
	rows, err := pool.Query(ctx, `SELECT d.olt_id, d.pon_index, d.onu_id, d.serial, d.description, d.status, d.rx_power_dbm, d.first_seen,
		CASE WHEN d.removed_at IS NULL AND w.seen_at > d.last_seen THEN w.seen_at ELSE d.last_seen END,
		CASE WHEN d.removed_at IS NULL AND w.seen_at > d.last_seen THEN w.execution_id ELSE d.last_execution_id END,
		d.onu_index, d.port_name, d.name, d.tx_power_dbm, d.olt_rx_power_dbm, d.distance_m, d.temperature_c, d.voltage_v, d.bias_ma,
		d.last_down_cause, d.last_down_at, d.last_up_at, d.model, d.firmware, d.removed_at
		FROM onu_data d LEFT JOIN onu_walks w ON w.olt_id = d.olt_id
		WHERE $1 = '' OR d.olt_id = $1 ORDER BY d.olt_id, d.pon_index, d.onu_id`, olt)
	if err != nil {
		return 0, fmt.Errorf("export onu-data: %w", err)
	}
	defer rows.Close()
	micros := func(t *time.Time) *int64 {
		if t == nil {
			return nil
		}
		us := t.UnixMicro()
		return &us
	}
	for rows.Next() {
		var r onuDataRow
		var first, last time.Time
		var down, up, removed *time.Time
		if err := rows.Scan(&r.OLTID, &r.PonIndex, &r.ONUID, &r.Serial, &r.Description, &r.Status, &r.RxPowerDBm, &first, &last, &r.LastExecutionID,
			&r.ONUIndex, &r.PortName, &r.Name, &r.TxPowerDBm, &r.OLTRxPowerDBm, &r.DistanceM, &r.TemperatureC, &r.VoltageV, &r.BiasMA,
			&r.LastDownCause, &down, &up, &r.Model, &r.Firmware, &removed); err != nil {
			return out.n, fmt.Errorf("export onu-data: %w", err)
		}
		r.FirstSeen, r.LastSeen = first.UnixMicro(), last.UnixMicro()
		r.LastDownAt, r.LastUpAt, r.RemovedAt = micros(down), micros(up), micros(removed)
		if err := out.write(r); err != nil {
			return out.n, err
		}
	}
	if err := rows.Err(); err != nil {
		return out.n, fmt.Errorf("export onu-data: %w", err)
	}
	return out.n, out.close()
}

// onuWalksFix reads onu_walks (of one OLT, or all) and sets, in an
// onu_data row as COPY writes it (the columns of onuDataHeader), the
// last_seen and last_execution_id of the OLT's last complete walk when the
// walk is later and the ONU is not removed.
func onuWalksFix(olt string) *copyFix {
	q := `SELECT olt_id, execution_id, seen_at::text FROM onu_walks`
	if olt != "" {
		q += ` WHERE olt_id = ` + pgLiteral(olt)
	}
	return &copyFix{pre: q, build: func(rows [][][]byte) (func([][]byte) uint64, error) {
		type walk struct{ seen, exec []byte }
		walks := map[string]walk{}
		for _, r := range rows {
			if len(r) != 3 {
				return nil, fmt.Errorf("walks: %d columns", len(r))
			}
			walks[string(r[0])] = walk{seen: bytes.Clone(r[2]), exec: appendCSVField(nil, string(r[1]))}
		}
		const oltCol, lastSeen, lastExec, removedAt = 0, 8, 9, 24
		return func(f [][]byte) uint64 {
			if len(f) != len(onuDataHeader) || len(f[removedAt]) != 0 {
				return 0
			}
			wk, ok := walks[string(csvUnquote(f[oltCol]))]
			if !ok {
				return 0
			}
			if later, ok := pgTimeAfter(wk.seen, f[lastSeen]); ok && later {
				f[lastSeen], f[lastExec] = wk.seen, wk.exec
				return 1<<lastSeen | 1<<lastExec
			}
			return 0
		}, nil
	}}
}

// pgLiteral quotes s as a SQL string literal (standard conforming
// strings; COPY takes no parameters).
func pgLiteral(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), "'", "''") + "'"
}

// exportVarbinds writes one row per varbind of the batches in r and
// returns the rows written.
func exportVarbinds(ctx context.Context, js jetstream.JetStream, r replay.Range, format string, w io.Writer, bar *progress) (int64, error) {
	out, err := newRowWriter[varbindRow](w, format, varbindHeader)
	if err != nil {
		return 0, err
	}
	first, last, err := replay.End(ctx, js, r)
	if err != nil {
		return 0, err
	}
	total := uint64(0)
	if last >= max(first, r.From.Seq) && last > 0 {
		total = last - max(first, r.From.Seq) + 1
	}
	var msgs uint64
	var oids batchOIDs
	_, err = replay.Read(ctx, js, r, func(m jetstream.Msg) error {
		msgs++
		bar.update(msgs, total)
		meta, err := m.Metadata()
		if err != nil {
			return err
		}
		_, b, err := streams.Decode[streams.VarbindBatch](m.Data())
		if err != nil {
			return nil // dead-lettered by the projector; not a reading
		}
		row := varbindRow{StreamSeq: int64(meta.Sequence.Stream), CollectedAt: b.CollectedAt.UnixMicro(), OLTID: b.OLTID,
			ExecutionID: b.ExecutionID, Batch: int64(b.Batch)}
		return writeBatchVarbinds(out, row, b, &oids)
	})
	bar.finish()
	if err != nil {
		return out.n, err
	}
	return out.n, out.close()
}

// batchOIDs builds the OIDs of a batch's row values: each column's OID
// (without the dots around it) once per batch, then "<column>.<index>"
// in a buffer reused from row to row; line is the CSV line being built.
type batchOIDs struct {
	cols []string
	buf  []byte
	line []byte
}

// writeBatchVarbinds writes one row per varbind of b with the message's
// fields of row: the raw Varbinds (the only form of version 1 batches,
// and what is under no column in version 2), then every value of Rows
// (what the pollers publish) with its full OID, as
// streams.VarbindBatch.AllVarbinds lists them. As CSV the fields the
// batch's rows share are written once, and each line is built in place.
func writeBatchVarbinds(out *rowWriter[varbindRow], row varbindRow, b streams.VarbindBatch, o *batchOIDs) error {
	var head []byte
	if out.csv != nil {
		head = strconv.AppendInt(o.line[:0], row.StreamSeq, 10)
		head = append(head, ',')
		head = time.UnixMicro(row.CollectedAt).UTC().AppendFormat(head, time.RFC3339Nano)
		head = append(appendCSVField(append(appendCSVField(append(head, ','), row.OLTID), ','), row.ExecutionID), ',')
		head = append(strconv.AppendInt(head, row.Batch, 10), ',')
	}
	emit := func(oid []byte, typ, value string) error {
		if out.csv == nil {
			row.OID, row.Type, row.Value = string(oid), typ, value
			return out.write(row)
		}
		l := head
		if csvNeedsQuotes(string(oid)) {
			l = appendCSVField(l, string(oid))
		} else {
			l = append(l, oid...)
		}
		l = appendCSVField(append(l, ','), typ)
		l = append(appendCSVField(append(l, ','), value), '\n')
		head = l[:len(head)] // the same bytes, maybe moved
		o.line = l
		return out.line(l)
	}
	for _, v := range b.Varbinds {
		if err := emit([]byte(v.OID), v.Type, v.Value); err != nil {
			return err
		}
	}
	if len(b.Rows) == 0 {
		return nil
	}
	o.cols = o.cols[:0]
	for _, c := range b.Columns {
		o.cols = append(o.cols, strings.Trim(c.OID, "."))
	}
	for _, r := range b.Rows {
		for _, v := range r.Values {
			if v.Column < 0 || v.Column >= len(o.cols) {
				continue // not a valid batch: the projector dead-letters it
			}
			o.buf = append(append(append(o.buf[:0], o.cols[v.Column]...), '.'), r.Index...)
			if err := emit(o.buf, v.Type, v.Value); err != nil {
				return err
			}
		}
	}
	return nil
}
