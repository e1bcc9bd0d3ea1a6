package poller

import (
	"sort"
	"strconv"
	"strings"

	"github.com/facho-olt/facho/streams"
)

// A walk reads a table column by column, so its varbinds of one ONU are
// far apart (one per column). The poller buffers the varbinds of an
// execution and, when the walk ends (or the buffer reaches
// Config.RowBufferVarbinds), publishes them grouped by table row
// (streams.VarbindRow): every column of an ONU in one batch, which the
// projector upserts once. A varbind belongs to the column whose OID is
// the longest prefix of its OID; its row index is the rest ("4194304000.1"
// under column "...43.1.3"). A varbind under no column (a scalar, a
// subtree that is no table) is published raw in Varbinds.

// rowColumn is one column of the node, its OID with a trailing dot.
type rowColumn struct {
	prefix string
	pos    int // position in the node's OIDs (RowValue.Column)
	// shadowed: a longer column starts with this one's prefix, so a
	// match of this one must still look for the longer one.
	shadowed bool
}

// rowEntry is one buffered varbind: its column and row index, or column
// -1 and its whole OID.
type rowEntry struct {
	col        int32
	key        string // row index, or the OID for col -1
	typ, value string
}

// rowBuffer holds an execution's varbinds until they are published.
type rowBuffer struct {
	cols    []rowColumn // longest prefix first
	last    int         // the column matched last (a walk reads one at a time), -1: none
	entries []rowEntry
	// scratch of drain, kept between flushes.
	rowOf []int32
}

func newRowBuffer(oids []streams.OIDSpec) *rowBuffer {
	rb := &rowBuffer{last: -1}
	for i, s := range oids {
		oid := strings.Trim(s.OID, ".")
		if oid == "" {
			continue
		}
		rb.cols = append(rb.cols, rowColumn{prefix: oid + ".", pos: i})
	}
	sort.SliceStable(rb.cols, func(i, j int) bool { return len(rb.cols[i].prefix) > len(rb.cols[j].prefix) })
	for i := range rb.cols {
		for j := 0; j < i; j++ { // only longer (or equal) ones come before
			if len(rb.cols[j].prefix) > len(rb.cols[i].prefix) && strings.HasPrefix(rb.cols[j].prefix, rb.cols[i].prefix) {
				rb.cols[i].shadowed = true
			}
		}
	}
	return rb
}

// column returns the position of the column oid is under (the longest
// prefix) and its row index, or -1.
func (rb *rowBuffer) column(oid string) (int, string) {
	if rb.last >= 0 {
		c := &rb.cols[rb.last]
		if !c.shadowed && len(oid) > len(c.prefix) && oid[:len(c.prefix)] == c.prefix {
			return c.pos, oid[len(c.prefix):]
		}
	}
	for i := range rb.cols {
		c := &rb.cols[i]
		if len(oid) > len(c.prefix) && oid[:len(c.prefix)] == c.prefix {
			rb.last = i
			return c.pos, oid[len(c.prefix):]
		}
	}
	return -1, ""
}

// add buffers vb.
func (rb *rowBuffer) add(vb streams.Varbind) {
	pos, index := rb.column(vb.OID)
	rb.put(pos, index, vb)
}

// put buffers vb, of column pos at row index (what column returned).
func (rb *rowBuffer) put(pos int, index string, vb streams.Varbind) {
	if pos < 0 {
		rb.entries = append(rb.entries, rowEntry{col: -1, key: vb.OID, typ: vb.Type, value: vb.Value})
		return
	}
	rb.entries = append(rb.entries, rowEntry{col: int32(pos), key: index, typ: vb.Type, value: vb.Value})
}

// addRow buffers a value known to be column pos's at row index key.
func (rb *rowBuffer) addRow(pos int, key, typ, value string) {
	rb.entries = append(rb.entries, rowEntry{col: int32(pos), key: key, typ: typ, value: value})
}

func (rb *rowBuffer) len() int { return len(rb.entries) }

// batchPart is the content of one batch: rows and raw varbinds.
type batchPart struct {
	rows     []streams.VarbindRow
	varbinds []streams.Varbind
}

// drain groups the buffered varbinds by row, in the order each row was
// first read (a walk's first column gives the table's order), and cuts
// them into batches of whole rows of at most maxVarbinds varbinds and
// about maxBytes of JSON; a row larger than that alone is split. The
// varbinds under no column come after the rows, in the order read. The
// buffer is empty afterwards.
func (rb *rowBuffer) drain(maxVarbinds, maxBytes int) []batchPart {
	if len(rb.entries) == 0 {
		return nil
	}
	maxVarbinds = max(1, maxVarbinds)
	// Pass 1: the row of each entry, and each row's size.
	if cap(rb.rowOf) < len(rb.entries) {
		rb.rowOf = make([]int32, len(rb.entries))
	}
	rowOf := rb.rowOf[:len(rb.entries)]
	index := make(map[string]int32, len(rb.entries)/max(1, len(rb.cols))+1)
	var keys []string
	var counts []int32
	loose := 0
	for i := range rb.entries {
		e := &rb.entries[i]
		if e.col < 0 {
			rowOf[i] = -1
			loose++
			continue
		}
		if i > 0 && rowOf[i-1] >= 0 && rb.entries[i-1].key == e.key {
			// The row of the entry before (a get reads an ONU's
			// columns one after the other): no map lookup.
			r := rowOf[i-1]
			rowOf[i] = r
			counts[r]++
			continue
		}
		r, ok := index[e.key]
		if !ok {
			r = int32(len(keys))
			index[e.key] = r
			keys = append(keys, e.key)
			counts = append(counts, 0)
		}
		rowOf[i] = r
		counts[r]++
	}
	// Pass 2: every row's values in one array.
	values := make([]streams.RowValue, len(rb.entries)-loose)
	starts := make([]int32, len(keys)+1)
	for r, n := range counts {
		starts[r+1] = starts[r] + n
	}
	fill := append([]int32(nil), starts[:len(keys)]...)
	var looseVBs []streams.Varbind
	if loose > 0 {
		looseVBs = make([]streams.Varbind, 0, loose)
	}
	for i := range rb.entries {
		e := &rb.entries[i]
		r := rowOf[i]
		if r < 0 {
			looseVBs = append(looseVBs, streams.Varbind{OID: e.key, Type: e.typ, Value: e.value})
			continue
		}
		values[fill[r]] = streams.RowValue{Column: int(e.col), Type: e.typ, Value: e.value}
		fill[r]++
	}
	clear(rb.entries) // let the strings go
	rb.entries = rb.entries[:0]

	// Cut into batches.
	var out []batchPart
	var cur batchPart
	n, size := 0, 0
	cut := func() {
		if n > 0 {
			out = append(out, cur)
		}
		cur, n, size = batchPart{}, 0, 0
	}
	for r, key := range keys {
		vals := values[starts[r]:starts[r+1]]
		for len(vals) > 0 {
			// As many of the row's values as fit in an empty batch.
			take, sz := 0, rowJSONBase(key)
			for take < len(vals) && take < maxVarbinds {
				vs := rowValueJSONSize(vals[take])
				if take > 0 && sz+vs > maxBytes {
					break
				}
				sz += vs
				take++
			}
			if n > 0 && (n+take > maxVarbinds || size+sz > maxBytes) {
				cut()
			}
			cur.rows = append(cur.rows, streams.VarbindRow{Index: key, Values: vals[:take:take]})
			n += take
			size += sz
			vals = vals[take:]
			if n >= maxVarbinds || size >= maxBytes {
				cut()
			}
		}
	}
	for _, vb := range looseVBs {
		vs := varbindJSONSize(vb)
		if n > 0 && (n+1 > maxVarbinds || size+vs > maxBytes) {
			cut()
		}
		cur.varbinds = append(cur.varbinds, vb)
		n++
		size += vs
	}
	cut()
	return out
}

// rowJSONBase is the size of a row without values: ["<index>"],
func rowJSONBase(index string) int { return len(index) + 6 }

// rowValueJSONSize is the size of one value in a row's compact form:
// ,<column>,"<type code>","<value>". Values are hex, decimal or dotted,
// so nothing is escaped; an unusual type is written with its full name.
func rowValueJSONSize(v streams.RowValue) int {
	return 3 + digits(v.Column) + len(v.Type) + 2 + len(v.Value) + 2
}

func digits(n int) int {
	if n >= 0 && n < 10 {
		return 1
	}
	return len(strconv.Itoa(n))
}
