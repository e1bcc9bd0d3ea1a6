package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/bits"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// pgCSVBegin starts copyCSV's transaction and sets in it the time text
// the rewriter expects ("2026-01-02 03:04:05.5+00") and the shortest
// exact text of a double.
const pgCSVBegin = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL TimeZone TO 'UTC'; SET LOCAL DateStyle TO 'ISO'; SET LOCAL extra_float_digits TO 1`

// copyFix is what an export applies to the rows of a copyCSV: pre, a
// query whose rows (as text) fix is built from, in the COPY's snapshot.
type copyFix struct {
	pre   string
	build func(rows [][][]byte) (func(fields [][]byte) (changed uint64), error)
}

// copyCSV writes the rows of query as CSV with its column names as the
// header, through COPY: Postgres formats the rows, and they pass through
// a pgCSV rewriter on the way out (the time columns to RFC 3339, empty
// strings to empty cells, and fix's changes, if any). It runs in one
// read-only repeatable-read transaction, fix's query in it before the
// COPY, in three round trips (begin, settings and fix's query in one;
// the COPY; the rollback): on a busy machine each costs a wake-up of
// the server. It returns the rows written (COPY's count); bar, if on,
// counts them against total.
func copyCSV(ctx context.Context, pool *pgxpool.Pool, w io.Writer, query string, times []int, fix *copyFix, bar *progress, total int64) (int64, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release() // after the rollback: the pool closes a connection left in a transaction
	pc := conn.Conn().PgConn()
	if v := pc.ParameterStatus("standard_conforming_strings"); v != "on" {
		return 0, fmt.Errorf("standard_conforming_strings is %q: the export quotes its literals for on", v)
	}
	begin := pgCSVBegin
	if fix != nil {
		begin += "; " + fix.pre
	}
	results, err := pc.Exec(ctx, begin).ReadAll()
	defer func() { _, _ = pc.Exec(context.WithoutCancel(ctx), "ROLLBACK").ReadAll() }() // read only: nothing to keep
	if err != nil {
		return 0, err
	}
	rw := newPGCSV(w, times)
	rw.bar, rw.total = bar, uint64(max(total, 0))
	if fix != nil {
		if rw.fix, err = fix.build(results[len(results)-1].Rows); err != nil {
			return 0, err
		}
	}
	tag, err := pc.CopyTo(ctx, rw, `COPY (`+query+`) TO STDOUT (FORMAT csv, HEADER)`)
	if err == nil {
		err = rw.flush()
	}
	if err != nil {
		return 0, err
	}
	bar.finish()
	return tag.RowsAffected(), nil
}

// pgCSV passes on the CSV that Postgres's COPY writes, rewriting in each
// row (the header line passes unchanged):
//   - the fields of the time columns, from Postgres's timestamptz text in
//     UTC to RFC 3339 as microsText writes it ("2026-01-02 03:04:05.5+00"
//     to "2026-01-02T03:04:05.5Z"; other text, e.g. infinity, unchanged);
//     formatting that in SQL (to_char) costs as much as the COPY itself;
//   - an empty string (which COPY quotes, "", to tell it from NULL) to an
//     empty cell, as encoding/csv writes it, instead of NULLIF per column
//     in SQL;
//   - with fix, whatever fix changes in the row's fields.
//
// COPY sends each row in one message, so a Write is normally one whole
// row, read in place: a row without quotes (without fix) is searched for
// its time fields only, others are split into fields (raw as COPY wrote
// them, quotes included); only a row cut across writes is held and
// copied. The rewritten fields are appended one by one, the bytes
// between them in runs.
type pgCSV struct {
	w     io.Writer
	times []bool // by column
	// fix may replace fields of a row's first 64 columns, returning the
	// bits of the columns it changed.
	fix      func(fields [][]byte) (changed uint64)
	timeMask uint64 // times, of the first 64 columns
	empties  uint64 // the current row's fields that are "" (first 64)
	out      []byte
	pending  []byte   // the start of a row cut across writes
	fields   [][]byte // the current row's
	starts   []int    // where each field starts in the row
	header   bool     // the header line is next
	rows     uint64
	bar      *progress
	total    uint64
}

func newPGCSV(w io.Writer, times []int) *pgCSV {
	t := &pgCSV{w: w, header: true, bar: &progress{}}
	for _, c := range times {
		for len(t.times) <= c {
			t.times = append(t.times, false)
		}
		t.times[c] = true
		if c < 64 {
			t.timeMask |= 1 << c
		}
	}
	return t
}

func (t *pgCSV) Write(p []byte) (int, error) {
	n := len(p)
	if len(t.pending) > 0 {
		t.pending = append(t.pending, p...)
		p = t.pending
	}
	for len(p) > 0 {
		if t.fix == nil && !t.header {
			// A row without quotes (the common case, and the only
			// one with no line break but at its end) needs a look at
			// its time fields only.
			if nl := bytes.IndexByte(p, '\n'); nl >= 0 && bytes.IndexByte(p[:nl], '"') < 0 {
				t.plainRow(p[:nl+1])
				p = p[nl+1:]
				continue
			}
		}
		end, ok := t.split(p)
		if !ok {
			break
		}
		t.row(p[:end])
		p = p[end:]
	}
	// What is left is a row cut short, held until the rest comes (p may
	// be the end of pending: append copies as copy does).
	t.pending = append(t.pending[:0], p...)
	if len(t.out) >= rawFlushBytes {
		if err := t.writeOut(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// split reads the fields of the row at the start of p into t.fields and
// t.starts and returns the row's length with its line break; ok is false
// when p ends before the row does. Fields are short (numbers, times,
// ids): a plain loop finds their ends faster than a search per field.
func (t *pgCSV) split(p []byte) (end int, ok bool) {
	t.fields, t.starts, t.empties = t.fields[:0], t.starts[:0], 0
	i := 0
	for {
		start := i
		if i < len(p) && p[i] == '"' {
			// A quoted field ends at a quote not followed by another.
			i++
			for {
				k := bytes.IndexByte(p[i:], '"')
				if k < 0 {
					return 0, false
				}
				i += k + 1
				if i < len(p) && p[i] == '"' {
					i++
					continue
				}
				break
			}
			if i-start == 2 && len(t.fields) < 64 {
				t.empties |= 1 << len(t.fields)
			}
		} else {
			for i < len(p) && p[i] != ',' && p[i] != '\n' {
				i++
			}
		}
		t.fields = append(t.fields, p[start:i])
		t.starts = append(t.starts, start)
		switch {
		case i >= len(p):
			return 0, false
		case p[i] == ',':
			i++
		case p[i] == '\n':
			return i + 1, true
		default:
			return 0, false // not CSV as COPY writes it; cannot happen
		}
	}
}

// row writes the row split into t.fields (raw, with its line break):
// the fields to rewrite (time columns, empty strings, fix's) one by one,
// the bytes between them in runs.
func (t *pgCSV) row(raw []byte) {
	if t.header {
		t.header = false
		t.out = append(t.out, raw...)
		return
	}
	t.rows++
	t.bar.update(t.rows, t.total)
	var changed uint64
	if t.fix != nil {
		changed = t.fix(t.fields)
	}
	done := 0 // raw[:done] is written
	rewrite := func(c int) {
		f := t.fields[c]
		t.out = append(t.out, raw[done:t.starts[c]]...)
		done = t.fieldEnd(raw, c) // fix's field may be of another length
		switch {
		case len(f) == 2 && f[0] == '"' && f[1] == '"':
			// an empty string: an empty cell
		case c < len(t.times) && t.times[c]:
			t.out = appendPGTime(t.out, f)
		default:
			t.out = append(t.out, f...)
		}
	}
	mask := t.timeMask | t.empties | changed
	if len(t.fields) < 64 {
		mask &= 1<<len(t.fields) - 1
	}
	for ; mask != 0; mask &= mask - 1 {
		rewrite(bits.TrailingZeros64(mask))
	}
	for c := 64; c < len(t.fields); c++ { // past the masks: times and empty strings
		if f := t.fields[c]; (c < len(t.times) && t.times[c]) || (len(f) == 2 && f[0] == '"' && f[1] == '"') {
			rewrite(c)
		}
	}
	t.out = append(t.out, raw[done:]...)
}

// fieldEnd is where field c of raw ends: before the next field's comma,
// or before the line break.
func (t *pgCSV) fieldEnd(raw []byte, c int) int {
	if c+1 < len(t.starts) {
		return t.starts[c+1] - 1
	}
	return len(raw) - 1
}

// plainRow writes row r (with its line break), which has no quote.
func (t *pgCSV) plainRow(r []byte) {
	t.rows++
	t.bar.update(t.rows, t.total)
	done := 0 // r[:done] is written
	i := 0    // the start of field c
	for c := 0; c < len(t.times); c++ {
		k := bytes.IndexByte(r[i:], ',')
		end := i + k
		if k < 0 {
			end = len(r) - 1
		}
		if t.times[c] {
			t.out = appendPGTime(append(t.out, r[done:i]...), r[i:end])
			done = end
		}
		if k < 0 {
			break
		}
		i = end + 1
	}
	t.out = append(t.out, r[done:]...)
}

// appendPGTime appends Postgres's timestamptz text in UTC as RFC 3339.
func appendPGTime(out, f []byte) []byte {
	if n := len(f); n >= 22 && f[10] == ' ' && f[n-3] == '+' && f[n-2] == '0' && f[n-1] == '0' {
		out = append(out, f[:10]...)
		out = append(out, 'T')
		out = append(out, f[11:n-3]...)
		return append(out, 'Z')
	}
	return append(out, f...)
}

func (t *pgCSV) writeOut() error {
	if len(t.out) == 0 {
		return nil
	}
	_, err := t.w.Write(t.out)
	t.out = t.out[:0]
	return err
}

// flush writes what is held, at the end of the COPY.
func (t *pgCSV) flush() error {
	if len(t.pending) > 0 {
		return fmt.Errorf("copy: the last row is cut short (%d bytes)", len(t.pending))
	}
	return t.writeOut()
}

// csvUnquote is the text of a raw CSV field.
func csvUnquote(f []byte) []byte {
	if len(f) < 2 || f[0] != '"' {
		return f
	}
	return bytes.ReplaceAll(f[1:len(f)-1], []byte(`""`), []byte(`"`))
}

// pgTimeAfter reports whether Postgres timestamptz text a (UTC, ISO) is
// later than b: by bytes when both have the usual form (the same length
// up to the seconds, then an optional fraction and +00), else parsed; ok
// is false when either does not parse.
func pgTimeAfter(a, b []byte) (after, ok bool) {
	canonical := func(s []byte) bool {
		n := len(s)
		return n >= 22 && s[4] == '-' && s[10] == ' ' && (s[19] == '.' || s[19] == '+') && s[n-3] == '+' && s[n-2] == '0' && s[n-1] == '0'
	}
	if canonical(a) && canonical(b) {
		if c := bytes.Compare(a[:19], b[:19]); c != 0 {
			return c > 0, true
		}
		// The fractions, as digit strings padded with zeros.
		fa, fb := a[19:len(a)-3], b[19:len(b)-3]
		fa, fb = bytes.TrimPrefix(fa, []byte{'.'}), bytes.TrimPrefix(fb, []byte{'.'})
		for i := 0; i < max(len(fa), len(fb)); i++ {
			ca, cb := byte('0'), byte('0')
			if i < len(fa) {
				ca = fa[i]
			}
			if i < len(fb) {
				cb = fb[i]
			}
			if ca != cb {
				return ca > cb, true
			}
		}
		return false, true
	}
	const layout = "2006-01-02 15:04:05.999999999-07"
	ta, err := time.Parse(layout, string(a))
	if err != nil {
		return false, false
	}
	tb, err := time.Parse(layout, string(b))
	if err != nil {
		return false, false
	}
	return ta.After(tb), true
}
