package poller

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/streams"
)

// Bounds: what one execution may read from its OLT, so one broken or
// hostile agent (an endless table, a flood of answers, megabyte strings)
// cannot flood the streams, the read models or the poller's memory. A
// node's bounds are its brand's vendor profile's (profiles.Bounds, the
// vendor's plausible maxima unless the profile sets its own), each capped
// by Config.Bounds, the global ceiling; a brand made by hand has the
// ceiling alone.
//
//   - rows per table: varbinds of one column of a walk;
//   - ONUs per PON and per OLT: distinct ONUs a walk read, by the node's
//     index scheme (columns with an index of their own are not ONU rows);
//     a get of more known ONUs than the OLT's bound does not start;
//   - varbinds per execution;
//   - bytes per execution: the UDP payloads of every answer received
//     (late answers and answers to another request id included);
//   - value bytes: a longer value is cut to it (an octet string keeps its
//     first value bytes), counted, not a failure.
//
// Reaching one of the first five ends the execution FAILED with the cause
// bound_exceeded and an error naming the bound, its value and where it
// comes from; the varbind that crossed it is not buffered, so nothing past
// the bound is published (what was read before it is, as for any failed
// walk, never as a Last batch). The execution.failed event is what the
// auditor records and the alerter notifies, once per execution.

// rowBufferBytes bounds the bytes of varbinds an execution buffers before
// publishing them (as Config.RowBufferVarbinds bounds their number), so its
// memory stays bounded whatever the values' length.
const rowBufferBytes = 32 << 20

// boundsOf is the bounds of node: its brand's profile's under the ceiling.
func (p *poller) boundsOf(node streams.NodeDue) (profiles.Bounds, string) {
	if p.profiles != nil && node.BrandID != "" {
		if prof, ok := p.profiles.Get(node.BrandID); ok {
			return prof.EffectiveBounds(p.cfg.Bounds), "profile " + prof.ID + " under the poller's ceiling"
		}
	}
	return p.cfg.Bounds, "the poller's ceiling"
}

// boundFailure is the error of a bound reached.
func boundFailure(bound string, limit int64, from, format string, args ...any) error {
	text := fmt.Sprintf("bound exceeded: %s %d (%s): %s; nothing past it is published", bound, limit, from, fmt.Sprintf(format, args...))
	return &readError{cause: CauseBoundExceeded, err: &boundError{bound: bound, text: text}}
}

// byteBudget counts the bytes of answers an execution received; the
// clients of a get share it.
type byteBudget struct {
	limit int64
	from  string
	n     atomic.Int64
}

// take counts n more bytes received.
func (b *byteBudget) take(n int) error {
	if b == nil {
		return nil
	}
	if total := b.n.Add(int64(n)); total > b.limit {
		return boundFailure("bytes_per_execution", b.limit, b.from, "the OLT's answers reached %d bytes", total)
	}
	return nil
}

// onuKey names an ONU by its parsed index.
type onuKey struct{ pon, onu int64 }

// execBounds checks what an execution buffers against its bounds. Not safe
// for concurrent use: a get's PDUs emit under its lock.
type execBounds struct {
	lim  profiles.Bounds
	from string
	// walk: count rows and ONUs (a get reads the known ONUs, checked
	// before it starts).
	walk bool
	// rows per column position; primary: the column is indexed by the
	// node's scheme (its rows are ONUs).
	rows    []int
	primary []bool
	colName []string
	parser  *streams.IndexParser
	// onuOf memoises a row index's ONU (ok false: unparsable); every
	// column of a walk reads the same rows.
	onuOf map[string]onuMemo
	onus  map[onuKey]struct{}
	onPON map[int64]int
	// noPON: the index names no PON (a constant pon_index, as the
	// generic IF-MIB profile's interfaces): no per-PON count.
	noPON bool
	// truncated counts the values cut to ValueBytes.
	truncated int
}

type onuMemo struct {
	key onuKey
	ok  bool
}

func newExecBounds(lim profiles.Bounds, from string, node streams.NodeDue) *execBounds {
	b := &execBounds{lim: lim, from: from, walk: node.Kind != streams.KindGet,
		rows: make([]int, len(node.OIDs)), primary: make([]bool, len(node.OIDs)), colName: make([]string, len(node.OIDs))}
	for i, c := range node.OIDs {
		b.colName[i] = strings.Trim(c.OID, ".")
		if c.ID != "" {
			b.colName[i] = c.ID + " (" + b.colName[i] + ")"
		}
	}
	if !b.walk {
		return b
	}
	if spec, err := streams.ResolveIndex(node.IndexScheme, node.Index); err == nil {
		b.parser = spec.Parser()
		b.onuOf, b.onus, b.onPON = map[string]onuMemo{}, map[onuKey]struct{}{}, map[int64]int{}
		_, err := strconv.ParseInt(strings.TrimSpace(spec.PonIndex), 10, 64)
		b.noPON = err == nil
	}
	for i, c := range node.OIDs {
		b.primary[i] = c.Index == nil
	}
	return b
}

// admit checks one more varbind of column pos (-1: none) at row index
// before it is buffered; varbinds is how many the execution read before.
func (b *execBounds) admit(varbinds, pos int, index string) error {
	if varbinds >= b.lim.VarbindsPerExecution {
		return boundFailure("varbinds_per_execution", int64(b.lim.VarbindsPerExecution), b.from, "the OLT sent more varbinds")
	}
	if !b.walk || pos < 0 || pos >= len(b.rows) {
		return nil
	}
	if b.rows[pos] >= b.lim.RowsPerTable {
		return boundFailure("rows_per_table", int64(b.lim.RowsPerTable), b.from, "the table of column %s has more rows", b.colName[pos])
	}
	b.rows[pos]++
	if b.parser == nil || !b.primary[pos] {
		return nil
	}
	m, seen := b.onuOf[index]
	if !seen {
		pi, err := b.parser.Parse(index)
		m = onuMemo{key: onuKey{pi.PonIndex, pi.ONUID}, ok: err == nil}
		if len(b.onuOf) < 2*b.lim.ONUsPerOLT {
			// The index is a slice of a whole answer: cloned, so the
			// memo does not keep the answer alive after its batch is
			// published. Bounded: past twice the ONUs an OLT may have
			// (rows that are no new ONU), indexes are parsed again.
			b.onuOf[strings.Clone(index)] = m
		}
	}
	if !m.ok {
		return nil // the projector counts it unplaced (bad_index)
	}
	if _, ok := b.onus[m.key]; ok {
		return nil
	}
	if len(b.onus) >= b.lim.ONUsPerOLT {
		return boundFailure("onus_per_olt", int64(b.lim.ONUsPerOLT), b.from, "the OLT listed more ONUs (row %s)", shortIndex(index))
	}
	if !b.noPON && b.onPON[m.key.pon] >= b.lim.ONUsPerPON {
		return boundFailure("onus_per_pon", int64(b.lim.ONUsPerPON), b.from, "PON %d listed more ONUs (row %s)", m.key.pon, shortIndex(index))
	}
	b.onus[m.key] = struct{}{}
	b.onPON[m.key.pon]++
	return nil
}

// shortIndex is a row index or an OID fit for an error text: an OLT's OID may be
// kilobytes long.
func shortIndex(index string) string {
	const maxLen = 128
	if len(index) <= maxLen {
		return index
	}
	return index[:maxLen] + "..."
}

// capValue cuts a value longer than ValueBytes: an octet string (hex) to
// its first ValueBytes bytes, any other to ValueBytes characters.
func (b *execBounds) capValue(typ, value string) string {
	limit := b.lim.ValueBytes
	if typ == streams.VTOctetString {
		limit *= 2
	}
	if len(value) <= limit {
		return value
	}
	b.truncated++
	return strings.Clone(value[:limit])
}

// boundError is a bound reached: which, and the operator's text.
type boundError struct {
	bound string
	text  string
}

func (e *boundError) Error() string { return e.text }

// boundName is the bound a bound_exceeded error names (a metric label).
func boundName(err error) string {
	var be *boundError
	if errors.As(err, &be) {
		return be.bound
	}
	return "other"
}
