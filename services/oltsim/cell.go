package oltsim

import "strconv"

// cellCap bounds the bytes of a string cell. Generated strings are short
// ("cliente-64-32-256", "ONU-1/64/32:256", "HWTC01020304", "-27.99").
const cellCap = 32

// cell is one generated column value, returned by value so that serving a
// row allocates nothing: an integer (typ Integer, or an unsigned type with
// the value in i) or up to cellCap bytes of OctetString.
type cell struct {
	typ byte
	n   uint8
	i   int64
	s   [cellCap]byte
}

func intCell(v int64) cell { return cell{typ: tagInteger, i: v} }

func strCell(s string) cell {
	c := cell{typ: tagOctetString}
	c.str(s)
	return c
}

func (c *cell) bytes() []byte { return c.s[:c.n] }

// str appends s; what does not fit in cellCap is cut (generated values
// never come close).
func (c *cell) str(s string) {
	c.n += uint8(copy(c.s[c.n:], s))
}

func (c *cell) raw(b []byte) {
	c.n += uint8(copy(c.s[c.n:], b))
}

func (c *cell) num(v int64) {
	if v < 0 || v >= 1e9 {
		var tmp [20]byte
		c.raw(strconv.AppendInt(tmp[:0], v, 10))
		return
	}
	var tmp [10]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	c.raw(tmp[i:])
}

func (c *cell) hex(x byte) {
	const digits = "0123456789ABCDEF"
	if int(c.n)+2 <= cellCap {
		c.s[c.n], c.s[c.n+1] = digits[x>>4], digits[x&0xf]
		c.n += 2
	}
}

// encLen is the length of the value's TLV.
func (c *cell) encLen() int {
	switch c.typ {
	case tagInteger:
		return 2 + intLen(c.i)
	case tagOctetString, tagIPAddress, tagOpaque:
		return 1 + lenLen(int(c.n)) + int(c.n)
	case tagCounter32, tagGauge32, tagTimeTicks, tagCounter64:
		return len(appendUint(make([]byte, 0, 12), c.typ, uint64(c.i)))
	}
	return 2
}

// appendCell appends the value's TLV.
func appendCell(b []byte, c *cell) []byte {
	switch c.typ {
	case tagInteger:
		return appendInt(b, tagInteger, c.i)
	case tagOctetString, tagIPAddress, tagOpaque:
		b = append(b, c.typ)
		b = appendLen(b, int(c.n))
		return append(b, c.s[:c.n]...)
	case tagCounter32, tagGauge32, tagTimeTicks, tagCounter64:
		return appendUint(b, c.typ, uint64(c.i))
	}
	return append(b, c.typ, 0)
}

// value converts to the general (allocating) form.
func (c *cell) value() value {
	switch c.typ {
	case tagInteger:
		return intValue(c.i)
	case tagOctetString, tagIPAddress, tagOpaque:
		return value{typ: c.typ, b: append([]byte(nil), c.s[:c.n]...)}
	case tagCounter32, tagGauge32, tagTimeTicks, tagCounter64:
		return value{typ: c.typ, u: uint64(c.i)}
	}
	return value{typ: c.typ}
}

// rowIdx is a row index of up to 4 sub-identifiers, passed by value.
type rowIdx struct {
	n uint8
	v [4]uint32
}

func idx1(a uint32) rowIdx       { return rowIdx{n: 1, v: [4]uint32{a}} }
func idx2(a, b uint32) rowIdx    { return rowIdx{n: 2, v: [4]uint32{a, b}} }
func idx3(a, b, c uint32) rowIdx { return rowIdx{n: 3, v: [4]uint32{a, b, c}} }

func (r rowIdx) oid() oid { return append(oid(nil), r.v[:r.n]...) }

func (r rowIdx) String() string { return r.oid().String() }

// compareIdx compares the row index with an OID suffix, as compareOID.
func compareIdx(r *rowIdx, s oid) int { return compareOID(r.v[:r.n], s) }
