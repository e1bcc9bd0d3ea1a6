package oltsim

import (
	"slices"
)

// dynamic value kinds computed at request time.
const (
	dynNone = iota
	dynUptime
)

// entry is one served object instance with its pre-encoded varbind.
type entry struct {
	oid oid
	val value
	dyn int
	enc []byte // SEQUENCE{oid, value}; nil when dyn != dynNone
	// getEnc, when set, is what GET answers instead of enc (a recording
	// with a duplicate OID).
	getEnc []byte
}

// mibView is an immutable, sorted set of varbinds served by one agent:
// pre-encoded entries (a recording; the system group and ifTable of a
// generated OLT) and, for a generated OLT, its ONU tables computed on
// demand (tab). Requests address it by position (see table.go).
type mibView struct {
	entries []entry
	// objects are the OIDs of objects (table columns, scalars) for the
	// noSuchObject/noSuchInstance distinction. When strict is false every GET
	// miss is noSuchInstance, as snmpsim answers for recordings.
	objects []oid
	strict  bool

	// tab, when set, serves the ONU tables; segs interleave entries and
	// table columns in OID order over positions 0..total-1.
	tab   *onuTable
	segs  []segment
	total int
}

// mibBuilder collects entries before freezing them into a mibView.
type mibBuilder struct {
	entries []entry
	objects []oid
	strict  bool
}

func (b *mibBuilder) add(o oid, v value) {
	b.entries = append(b.entries, entry{oid: o, val: v})
}

func (b *mibBuilder) addDyn(o oid, kind int) {
	b.entries = append(b.entries, entry{oid: o, val: value{typ: tagTimeTicks}, dyn: kind})
}

func (b *mibBuilder) object(o oid) {
	b.objects = append(b.objects, o)
}

// build sorts and de-duplicates (last added wins) and pre-encodes entries.
func (b *mibBuilder) build() *mibView {
	es := b.entries
	slices.SortStableFunc(es, func(x, y entry) int { return compareOID(x.oid, y.oid) })
	out := es[:0]
	for i := range es {
		if len(out) > 0 && compareOID(out[len(out)-1].oid, es[i].oid) == 0 {
			out[len(out)-1] = es[i]
			continue
		}
		out = append(out, es[i])
	}
	total := 0
	for i := range out {
		if out[i].dyn == dynNone {
			total += 8 + oidContentLen(out[i].oid) + 12 + len(out[i].val.b) + 5*len(out[i].val.o)
		}
	}
	arena := make([]byte, 0, total)
	for i := range out {
		if out[i].dyn != dynNone {
			continue
		}
		start := len(arena)
		arena = appendVarbind(arena, out[i].oid, out[i].val)
		out[i].enc = arena[start:len(arena):len(arena)]
	}
	objs := slices.Clone(b.objects)
	slices.SortFunc(objs, compareOID)
	objs = slices.CompactFunc(objs, func(x, y oid) bool { return compareOID(x, y) == 0 })
	return &mibView{entries: out, objects: objs, strict: b.strict}
}

// find returns the index of the first entry >= q and whether it equals q.
func (m *mibView) find(q oid) (int, bool) {
	return slices.BinarySearchFunc(m.entries, q, func(e entry, q oid) int { return compareOID(e.oid, q) })
}

// nextIndex returns the index of the first entry strictly greater than q.
func (m *mibView) nextIndex(q oid) int {
	i, ok := m.find(q)
	if ok {
		i++
	}
	return i
}

// missTag tells which exception a GET of a missing q gets.
func (m *mibView) missTag(q oid) byte {
	if !m.strict {
		return tagNoSuchInstance
	}
	i, ok := slices.BinarySearchFunc(m.objects, q, compareOID)
	if ok {
		return tagNoSuchInstance
	}
	// Objects do not nest, so only the greatest object below q can be a
	// prefix of q.
	if i > 0 && q.hasPrefix(m.objects[i-1]) {
		return tagNoSuchInstance
	}
	return tagNoSuchObject
}
