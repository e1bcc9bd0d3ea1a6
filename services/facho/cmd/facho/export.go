package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/parquet-go/parquet-go"

	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/streams"
)

// errNoHistory: onu_history does not exist in this version.
var errNoHistory = errors.New("export onu-history: not yet: it needs the onu_history read model, which this version does not have; export onu-data (current state) or varbinds (every raw reading) instead")

// onuDataRow is one onu_data row as exported (parquet column names are the
// CSV header's).
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
}

func (r onuDataRow) csv() []string {
	rx := ""
	if r.RxPowerDBm != nil {
		rx = strconv.FormatFloat(*r.RxPowerDBm, 'f', -1, 64)
	}
	return []string{r.OLTID, strconv.FormatInt(r.PonIndex, 10), strconv.FormatInt(r.ONUID, 10), r.Serial, r.Description, r.Status, rx,
		microsText(r.FirstSeen), microsText(r.LastSeen), r.LastExecutionID}
}

var onuDataHeader = []string{"olt_id", "pon_index", "onu_id", "serial", "description", "status", "rx_power_dbm", "first_seen", "last_seen", "last_execution_id"}

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

func microsText(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339Nano) }

// rowWriter writes rows of T as CSV or parquet.
type rowWriter[T interface{ csv() []string }] struct {
	csv     *csv.Writer
	parquet *parquet.GenericWriter[T]
	buf     []T
	n       int64
}

func newRowWriter[T interface{ csv() []string }](w io.Writer, format string, header []string) (*rowWriter[T], error) {
	switch format {
	case "csv":
		cw := csv.NewWriter(w) // buffered: flushed by close
		if err := cw.Write(header); err != nil {
			return nil, err
		}
		return &rowWriter[T]{csv: cw}, nil
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
		return rw.csv.Error()
	}
	if err := rw.flushParquet(); err != nil {
		return err
	}
	if err := rw.parquet.Close(); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	return nil
}

func runExport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("export: what? onu-data, varbinds (onu-history: not yet)")
	}
	what := args[0]
	fs := flag.NewFlagSet("export "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "varbinds: first message (sequence, RFC 3339 time or duration ago)")
	to := fs.String("to", "", "varbinds: last message (sequence or time; default: the stream's end)")
	olt := fs.String("olt", "", "only this OLT id")
	format := fs.String("format", "csv", "csv or parquet (zstd; DuckDB reads both)")
	dbURL := fs.String("db", getenv("DATABASE_URL"), "onu-data: Postgres URL (DATABASE_URL)")
	nf := addNATSFlags(fs, getenv)
	if ok, err := parseFlags(fs, args[1:]); !ok {
		return err
	}
	if *format != "csv" && *format != "parquet" {
		return fmt.Errorf("export: format %q: want csv or parquet", *format)
	}
	switch what {
	case "onu-history":
		return errNoHistory
	case "onu-data":
		if *dbURL == "" {
			return errors.New("export onu-data: DATABASE_URL (or --db) is required")
		}
		pool, err := pgxpool.New(ctx, *dbURL)
		if err != nil {
			return fmt.Errorf("export onu-data: database: %w", err)
		}
		defer pool.Close()
		_, err = exportONUData(ctx, pool, *olt, *format, stdout)
		return err
	case "varbinds":
		r := replay.Range{Stream: streams.StreamVarbinds}
		var err error
		if r.From, err = parsePosition(*from, time.Now()); err != nil {
			return fmt.Errorf("export --from: %w", err)
		}
		if r.To, err = parsePosition(*to, time.Now()); err != nil {
			return fmt.Errorf("export --to: %w", err)
		}
		if *olt != "" {
			r.Subjects = []string{streams.SubjectVarbinds(*olt)}
		}
		nc, js, err := nf.connect()
		if err != nil {
			return err
		}
		defer nc.Close()
		_, err = exportVarbinds(ctx, js, r, *format, stdout, newProgress(stderr, "export varbinds"))
		if ctx.Err() != nil {
			return fmt.Errorf("export varbinds: stopped: %w", ctx.Err()) // a cut file is not a result
		}
		return err
	}
	return fmt.Errorf("export: unknown %q: want onu-data, varbinds (onu-history: not yet)", what)
}

// exportONUData writes onu_data and returns the rows written.
func exportONUData(ctx context.Context, pool *pgxpool.Pool, olt, format string, w io.Writer) (int64, error) {
	out, err := newRowWriter[onuDataRow](w, format, onuDataHeader)
	if err != nil {
		return 0, err
	}
	rows, err := pool.Query(ctx, `SELECT olt_id, pon_index, onu_id, serial, description, status, rx_power_dbm, first_seen, last_seen, last_execution_id
		FROM onu_data WHERE $1 = '' OR olt_id = $1 ORDER BY olt_id, pon_index, onu_id`, olt)
	if err != nil {
		return 0, fmt.Errorf("export onu-data: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r onuDataRow
		var first, last time.Time
		if err := rows.Scan(&r.OLTID, &r.PonIndex, &r.ONUID, &r.Serial, &r.Description, &r.Status, &r.RxPowerDBm, &first, &last, &r.LastExecutionID); err != nil {
			return out.n, fmt.Errorf("export onu-data: %w", err)
		}
		r.FirstSeen, r.LastSeen = first.UnixMicro(), last.UnixMicro()
		if err := out.write(r); err != nil {
			return out.n, err
		}
	}
	if err := rows.Err(); err != nil {
		return out.n, fmt.Errorf("export onu-data: %w", err)
	}
	return out.n, out.close()
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
		for _, v := range b.Varbinds {
			row.OID, row.Type, row.Value = v.OID, v.Type, v.Value
			if err := out.write(row); err != nil {
				return err
			}
		}
		return nil
	})
	bar.finish()
	if err != nil {
		return out.n, err
	}
	return out.n, out.close()
}
