package oltsim

import (
	"slices"
)

// onuTable serves a generated OLT's ONU tables without materialising them:
// the profile's columns (shared by every OLT of the profile) crossed with
// the OLT's ONU records. A row's OID and value are computed when a request
// reaches it; positions in a column are found by binary search over the
// ONUs, whose order (slot, port, id) is the row-index order for every
// built-in profile. The table is immutable: a life tick publishes a new one.
type onuTable struct {
	p    *profile
	onus []onuState
	// perm[c], when set, lists the ONUs of column c in row-index order,
	// without duplicate indexes (the last ONU with a value wins, as in a
	// sorted list built from the rows with values). It
	// is only needed by a profile whose index is not increasing in (slot,
	// port, id); none of the built-in ones.
	perm [][]int32
}

func newONUTable(p *profile, onus []onuState) *onuTable {
	t := &onuTable{p: p, onus: onus}
	for ci := range p.columns {
		c := &p.columns[ci]
		sorted := true
		for i := 1; i < len(onus); i++ {
			a, b := c.index(&onus[i-1]), c.index(&onus[i])
			if compareIdx(&a, b.v[:b.n]) >= 0 {
				sorted = false
				break
			}
		}
		if sorted {
			continue
		}
		if t.perm == nil {
			t.perm = make([][]int32, len(p.columns))
		}
		perm := make([]int32, len(onus))
		for i := range perm {
			perm[i] = int32(i)
		}
		cmp := func(x, y int32) int {
			a, b := c.index(&onus[x]), c.index(&onus[y])
			return compareIdx(&a, b.v[:b.n])
		}
		slices.SortStableFunc(perm, cmp)
		// Of ONUs with the same index, the last one with a value wins
		// (the last one when none has a value).
		out := perm[:0]
		for _, r := range perm {
			if k := len(out) - 1; k >= 0 && cmp(out[k], r) == 0 {
				if c.hasRow(&onus[r]) || !c.hasRow(&onus[out[k]]) {
					out[k] = r
				}
				continue
			}
			out = append(out, r)
		}
		t.perm[ci] = out
	}
	return t
}

// rows is the number of rows of column c, present or not.
func (t *onuTable) rows(c int) int {
	if t.perm != nil && t.perm[c] != nil {
		return len(t.perm[c])
	}
	return len(t.onus)
}

func (t *onuTable) row(c, r int) *onuState {
	if t.perm != nil && t.perm[c] != nil {
		return &t.onus[t.perm[c][r]]
	}
	return &t.onus[r]
}

// present tells whether row r of column c is served (offline ONUs have no
// optical rows in some profiles).
func (t *onuTable) present(c, r int) bool {
	return t.p.columns[c].hasRow(t.row(c, r))
}

// lowerBound returns the first row of column c whose OID is >= q, q being
// inside or before the column, and whether that row's OID is q.
func (t *onuTable) lowerBound(c int, q oid) (int, bool) {
	col := &t.p.columns[c]
	n := t.rows(c)
	if !q.hasPrefix(col.oid) {
		return 0, false
	}
	suffix := q[len(col.oid):]
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		ix := col.index(t.row(c, mid))
		if compareIdx(&ix, suffix) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < n {
		ix := col.index(t.row(c, lo))
		return lo, compareIdx(&ix, suffix) == 0
	}
	return lo, false
}

// appendVarbind appends SEQUENCE{oid, value} of row r of column c.
func (t *onuTable) appendVarbind(b []byte, c, r int) []byte {
	col := &t.p.columns[c]
	s := t.row(c, r)
	ix := col.index(s)
	v := col.value(s)
	oidLen := len(col.enc)
	for _, x := range ix.v[:ix.n] {
		oidLen += subidLen(x)
	}
	b = append(b, tagSequence)
	b = appendLen(b, 1+lenLen(oidLen)+oidLen+v.encLen())
	b = append(b, tagOID)
	b = appendLen(b, oidLen)
	b = append(b, col.enc...)
	for _, x := range ix.v[:ix.n] {
		b = appendSubid(b, x)
	}
	return appendCell(b, &v)
}

// appendException appends SEQUENCE{oid of row r of column c, tag}.
func (t *onuTable) appendException(b []byte, c, r int, tag byte) []byte {
	col := &t.p.columns[c]
	ix := col.index(t.row(c, r))
	var tmp [40]uint32
	o := append(tmp[:0], col.oid...)
	o = append(o, ix.v[:ix.n]...)
	return appendExceptionVB(b, o, tag)
}

// segment is a run of positions of a mibView with a table: static entries
// entries[lo:lo+n], or the n rows of column col.
type segment struct {
	start, n int
	col      int // -1: static entries
	lo       int
}

// withTable returns a view serving m's entries (the static part) and the
// ONU tables of p over onus, in OID order.
func (m *mibView) withTable(p *profile, onus []onuState) *mibView {
	v := &mibView{entries: m.entries, objects: m.objects, strict: m.strict, tab: newONUTable(p, onus)}
	pos, e := 0, 0
	addStatic := func(hi int) {
		if hi > e {
			v.segs = append(v.segs, segment{start: pos, n: hi - e, col: -1, lo: e})
			pos += hi - e
			e = hi
		}
	}
	for c := range p.columns {
		co := p.columns[c].oid
		// Static entries before the column.
		hi := e
		for hi < len(m.entries) && compareOID(m.entries[hi].oid, co) < 0 {
			if m.entries[hi].oid.hasPrefix(co) {
				break
			}
			hi++
		}
		addStatic(hi)
		for e < len(m.entries) && m.entries[e].oid.hasPrefix(co) {
			// A static entry inside a column subtree would break the
			// order; profiles never do that (profile tests check it).
			panic("oltsim: static entry " + m.entries[e].oid.String() + " inside column " + co.String())
		}
		n := v.tab.rows(c)
		v.segs = append(v.segs, segment{start: pos, n: n, col: c})
		pos += n
	}
	addStatic(len(m.entries))
	v.total = pos
	return v
}

// Positions. A view's varbinds are numbered 0..size()-1 in OID order; for a
// view with a table some positions are absent rows (skipped by seek and
// advance, never served).

func (m *mibView) size() int {
	if m.tab == nil {
		return len(m.entries)
	}
	return m.total
}

// segOf returns the segment holding pos < total.
func (m *mibView) segOf(pos int) *segment {
	lo, hi := 0, len(m.segs)
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if m.segs[mid].start <= pos {
			lo = mid
		} else {
			hi = mid
		}
	}
	return &m.segs[lo]
}

// skip returns the first present position >= pos (or size()).
func (m *mibView) skip(pos int) int {
	if m.tab == nil {
		return pos
	}
	for pos < m.total {
		s := m.segOf(pos)
		if s.col < 0 {
			return pos
		}
		for end := s.start + s.n; pos < end; pos++ {
			if m.tab.present(s.col, pos-s.start) {
				return pos
			}
		}
	}
	return m.total
}

// segBelow tells whether every OID of s is < q.
func (m *mibView) segBelow(s *segment, q oid) bool {
	if s.col < 0 {
		return compareOID(m.entries[s.lo+s.n-1].oid, q) < 0
	}
	co := m.tab.p.columns[s.col].oid
	return compareOID(co, q) < 0 && !q.hasPrefix(co)
}

// seek returns the first present position whose OID is >= q and whether it
// is q.
func (m *mibView) seek(q oid) (int, bool) {
	if m.tab == nil {
		return m.find(q)
	}
	lo, hi := 0, len(m.segs)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if m.segBelow(&m.segs[mid], q) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(m.segs) {
		return m.total, false
	}
	s := &m.segs[lo]
	if s.col < 0 {
		j, ok := slices.BinarySearchFunc(m.entries[s.lo:s.lo+s.n], q, func(e entry, q oid) int { return compareOID(e.oid, q) })
		return s.start + j, ok
	}
	r, exact := m.tab.lowerBound(s.col, q)
	pos := s.start + r
	if exact && m.tab.present(s.col, r) {
		return pos, true
	}
	return m.skip(pos), false
}

// after returns the first present position whose OID is > q.
func (m *mibView) after(q oid) int {
	pos, ok := m.seek(q)
	if ok {
		return m.advance(pos)
	}
	return pos
}

// advance returns the present position following pos.
func (m *mibView) advance(pos int) int { return m.skip(pos + 1) }

// appendAt appends the varbind at pos (present, < size()).
func (m *mibView) appendAt(b []byte, pos int, uptime uint32) []byte {
	if m.tab == nil {
		return appendEntry(b, &m.entries[pos], uptime)
	}
	s := m.segOf(pos)
	if s.col < 0 {
		return appendEntry(b, &m.entries[s.lo+pos-s.start], uptime)
	}
	return m.tab.appendVarbind(b, s.col, pos-s.start)
}

// appendNext appends the varbind at pos (present, < size()) and returns
// the present position following it: a GETBULK repetition in one step.
func (m *mibView) appendNext(b []byte, pos int, uptime uint32) ([]byte, int) {
	if m.tab == nil {
		return appendEntry(b, &m.entries[pos], uptime), pos + 1
	}
	s := m.segOf(pos)
	if s.col < 0 {
		return appendEntry(b, &m.entries[s.lo+pos-s.start], uptime), m.skip(pos + 1)
	}
	r := pos - s.start
	b = m.tab.appendVarbind(b, s.col, r)
	col := &m.tab.p.columns[s.col]
	for r++; r < s.n; r++ {
		if col.has == nil || col.has(m.tab.row(s.col, r)) {
			return b, s.start + r
		}
	}
	return b, m.skip(s.start + s.n)
}

// appendGetAt appends what a GET of the OID at pos answers (a recording's
// duplicate OID answers its last record).
func (m *mibView) appendGetAt(b []byte, pos int, uptime uint32) []byte {
	var e *entry
	if m.tab == nil {
		e = &m.entries[pos]
	} else if s := m.segOf(pos); s.col < 0 {
		e = &m.entries[s.lo+pos-s.start]
	}
	if e != nil && e.getEnc != nil {
		return append(b, e.getEnc...)
	}
	return m.appendAt(b, pos, uptime)
}

// appendExceptionAt appends SEQUENCE{OID at pos, tag}.
func (m *mibView) appendExceptionAt(b []byte, pos int, tag byte) []byte {
	if m.tab == nil {
		return appendExceptionVB(b, m.entries[pos].oid, tag)
	}
	s := m.segOf(pos)
	if s.col < 0 {
		return appendExceptionVB(b, m.entries[s.lo+pos-s.start].oid, tag)
	}
	return m.tab.appendException(b, s.col, pos-s.start, tag)
}

// walk calls f with the OID and value of every present varbind in order
// (uptime as 0); for tests, tools and the ground truth of a whole view.
func (m *mibView) walk(f func(o oid, v value, dyn int)) {
	for pos := m.skip(0); pos < m.size(); pos = m.advance(pos) {
		if m.tab == nil {
			e := &m.entries[pos]
			f(e.oid, e.val, e.dyn)
			continue
		}
		s := m.segOf(pos)
		if s.col < 0 {
			e := &m.entries[s.lo+pos-s.start]
			f(e.oid, e.val, e.dyn)
			continue
		}
		col := &m.tab.p.columns[s.col]
		st := m.tab.row(s.col, pos-s.start)
		ix := col.index(st)
		v := col.value(st)
		f(col.oid.join(ix.v[:ix.n]...), v.value(), dynNone)
	}
}
