package oltsim

import (
	"errors"
	"fmt"
	"math"
)

// BER tags used by SNMP v2c.
const (
	tagInteger     byte = 0x02
	tagOctetString byte = 0x04
	tagNull        byte = 0x05
	tagOID         byte = 0x06
	tagSequence    byte = 0x30
	tagIPAddress   byte = 0x40
	tagCounter32   byte = 0x41
	tagGauge32     byte = 0x42
	tagTimeTicks   byte = 0x43
	tagOpaque      byte = 0x44
	tagCounter64   byte = 0x46

	tagNoSuchObject   byte = 0x80
	tagNoSuchInstance byte = 0x81
	tagEndOfMibView   byte = 0x82

	pduGet      byte = 0xa0
	pduGetNext  byte = 0xa1
	pduResponse byte = 0xa2
	pduSet      byte = 0xa3
	pduGetBulk  byte = 0xa5
)

// SNMP error-status values.
const (
	errNoError     = 0
	errTooBig      = 1
	errNotWritable = 17
)

var errMalformed = errors.New("malformed BER")

// value is one typed SNMP value.
type value struct {
	typ byte
	i   int64  // Integer
	u   uint64 // Counter32, Gauge32, TimeTicks, Counter64
	b   []byte // OctetString, IpAddress, Opaque
	o   oid    // OID
}

func intValue(v int64) value      { return value{typ: tagInteger, i: v} }
func strValue(s string) value     { return value{typ: tagOctetString, b: []byte(s)} }
func bytesValue(b []byte) value   { return value{typ: tagOctetString, b: b} }
func gaugeValue(v uint64) value   { return value{typ: tagGauge32, u: v} }
func counterValue(v uint64) value { return value{typ: tagCounter32, u: v} }
func oidValue(o oid) value        { return value{typ: tagOID, o: o} }

// lenLen is the number of bytes the BER length n takes.
func lenLen(n int) int {
	switch {
	case n < 0x80:
		return 1
	case n <= 0xff:
		return 2
	case n <= 0xffff:
		return 3
	case n <= 0xffffff:
		return 4
	}
	return 5
}

func appendLen(b []byte, n int) []byte {
	switch {
	case n < 0x80:
		return append(b, byte(n))
	case n <= 0xff:
		return append(b, 0x81, byte(n))
	case n <= 0xffff:
		return append(b, 0x82, byte(n>>8), byte(n))
	case n <= 0xffffff:
		return append(b, 0x83, byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, 0x84, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// putHeader writes tag and length so that they end right before pos; it
// returns the new start. The caller guarantees room.
func putHeader(buf []byte, pos int, tag byte, n int) int {
	l := lenLen(n)
	start := pos - 1 - l
	buf[start] = tag
	if l == 1 {
		buf[start+1] = byte(n)
		return start
	}
	buf[start+1] = 0x80 | byte(l-1)
	for i := 0; i < l-1; i++ {
		buf[pos-1-i] = byte(n >> (8 * i))
	}
	return start
}

func intLen(v int64) int {
	n := 1
	for v > 127 || v < -128 {
		v >>= 8
		n++
	}
	return n
}

func appendInt(b []byte, tag byte, v int64) []byte {
	n := intLen(v)
	b = append(b, tag, byte(n))
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func appendUint(b []byte, tag byte, v uint64) []byte {
	n := 1
	for x := v; x > 0xff; x >>= 8 {
		n++
	}
	pad := v>>(8*(n-1))&0x80 != 0
	l := n
	if pad {
		l++
	}
	b = append(b, tag, byte(l))
	if pad {
		b = append(b, 0)
	}
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func subidLen(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func appendSubid(b []byte, v uint32) []byte {
	n := subidLen(v)
	for i := n - 1; i > 0; i-- {
		b = append(b, byte(v>>(7*i))|0x80)
	}
	return append(b, byte(v&0x7f))
}

// oidContentLen is the BER content length of o.
func oidContentLen(o oid) int {
	if len(o) < 2 {
		return 1
	}
	n := subidLen(o[0]*40 + o[1])
	for _, v := range o[2:] {
		n += subidLen(v)
	}
	return n
}

func appendOID(b []byte, o oid) []byte {
	n := oidContentLen(o)
	b = append(b, tagOID)
	b = appendLen(b, n)
	if len(o) == 0 {
		return append(b, 0)
	}
	if len(o) == 1 {
		return append(b, byte(o[0]*40))
	}
	b = appendSubid(b, o[0]*40+o[1])
	for _, v := range o[2:] {
		b = appendSubid(b, v)
	}
	return b
}

// appendValue appends the TLV of v.
func appendValue(b []byte, v value) []byte {
	switch v.typ {
	case tagInteger:
		return appendInt(b, tagInteger, v.i)
	case tagOctetString, tagIPAddress, tagOpaque:
		b = append(b, v.typ)
		b = appendLen(b, len(v.b))
		return append(b, v.b...)
	case tagOID:
		return appendOID(b, v.o)
	case tagCounter32, tagGauge32, tagTimeTicks, tagCounter64:
		return appendUint(b, v.typ, v.u)
	}
	// Null and exceptions carry no content.
	return append(b, v.typ, 0)
}

// appendVarbind appends SEQUENCE{oid, value}.
func appendVarbind(b []byte, o oid, v value) []byte {
	start := len(b)
	b = appendOID(b, o)
	b = appendValue(b, v)
	return wrapSeq(b, start)
}

// wrapSeq turns b[start:] into the content of a SEQUENCE, in place.
func wrapSeq(b []byte, start int) []byte {
	n := len(b) - start
	l := 1 + lenLen(n)
	b = append(b, make([]byte, l)...)
	copy(b[start+l:], b[start:start+n])
	hdr := appendLen(append(make([]byte, 0, 6), tagSequence), n)
	copy(b[start:], hdr)
	return b
}

// appendExceptionVarbind appends SEQUENCE{oid, exception} where rawOID is
// the OID TLV as received.
func appendRawVarbind(b []byte, rawOID []byte, tag byte) []byte {
	n := len(rawOID) + 2
	b = append(b, tagSequence)
	b = appendLen(b, n)
	b = append(b, rawOID...)
	return append(b, tag, 0)
}

// decoder reads BER TLVs from a byte slice.
type decoder struct {
	b   []byte
	pos int
}

// next returns the tag and content of the next TLV.
func (d *decoder) next() (byte, []byte, error) {
	if d.pos+2 > len(d.b) {
		return 0, nil, errMalformed
	}
	tag := d.b[d.pos]
	l := int(d.b[d.pos+1])
	p := d.pos + 2
	if l&0x80 != 0 {
		nb := l & 0x7f
		if nb == 0 || nb > 4 || p+nb > len(d.b) {
			return 0, nil, errMalformed
		}
		l = 0
		for i := 0; i < nb; i++ {
			l = l<<8 | int(d.b[p+i])
		}
		p += nb
	}
	if l < 0 || p+l > len(d.b) {
		return 0, nil, errMalformed
	}
	d.pos = p + l
	return tag, d.b[p : p+l], nil
}

// nextRaw returns the whole TLV (header included) and its content.
func (d *decoder) nextRaw() (byte, []byte, []byte, error) {
	start := d.pos
	tag, content, err := d.next()
	if err != nil {
		return 0, nil, nil, err
	}
	return tag, d.b[start:d.pos], content, nil
}

func decodeInt(c []byte) (int64, error) {
	if len(c) == 0 || len(c) > 8 {
		return 0, errMalformed
	}
	v := int64(int8(c[0]))
	for _, x := range c[1:] {
		v = v<<8 | int64(x)
	}
	return v, nil
}

// decodeOIDInto appends the sub-identifiers of content to dst.
func decodeOIDInto(dst oid, c []byte) (oid, error) {
	if len(c) == 0 {
		return dst, errMalformed
	}
	var v uint64
	first := true
	for i, x := range c {
		v = v<<7 | uint64(x&0x7f)
		if v > 0xffffffff {
			return dst, errMalformed
		}
		if x&0x80 != 0 {
			if i == len(c)-1 {
				return dst, errMalformed
			}
			continue
		}
		if first {
			first = false
			switch {
			case v < 40:
				dst = append(dst, 0, uint32(v))
			case v < 80:
				dst = append(dst, 1, uint32(v-40))
			default:
				dst = append(dst, 2, uint32(v-80))
			}
		} else {
			dst = append(dst, uint32(v))
		}
		v = 0
	}
	return dst, nil
}

// request is a decoded SNMP v2c request. Slices point into the datagram.
type request struct {
	version     int64
	community   []byte
	pdu         byte
	rawReqID    []byte // INTEGER TLV of the request-id, echoed verbatim
	nonRep      int64
	maxRep      int64
	oids        []oid
	rawOIDs     [][]byte
	oidArena    oid
	varbindSize int
}

func (r *request) reset() {
	r.oids = r.oids[:0]
	r.rawOIDs = r.rawOIDs[:0]
	r.oidArena = r.oidArena[:0]
	r.community = nil
	r.rawReqID = nil
}

// parseRequest decodes msg into r.
func parseRequest(msg []byte, r *request) error {
	r.reset()
	d := decoder{b: msg}
	tag, body, err := d.next()
	if err != nil || tag != tagSequence {
		return fmt.Errorf("message: %w", errMalformed)
	}
	d = decoder{b: body}
	tag, c, err := d.next()
	if err != nil || tag != tagInteger {
		return fmt.Errorf("version: %w", errMalformed)
	}
	if r.version, err = decodeInt(c); err != nil {
		return fmt.Errorf("version: %w", err)
	}
	tag, c, err = d.next()
	if err != nil || tag != tagOctetString {
		return fmt.Errorf("community: %w", errMalformed)
	}
	r.community = c
	tag, pdu, err := d.next()
	if err != nil {
		return fmt.Errorf("pdu: %w", err)
	}
	r.pdu = tag
	d = decoder{b: pdu}
	tag, raw, c, err := d.nextRaw()
	if err != nil || tag != tagInteger {
		return fmt.Errorf("request-id: %w", errMalformed)
	}
	// The request-id is echoed verbatim, so it must be one a manager can
	// match: an Integer32 (RFC 3416), not an empty or oversized INTEGER.
	if id, err := decodeInt(c); err != nil || id < math.MinInt32 || id > math.MaxInt32 {
		return fmt.Errorf("request-id: %w", errMalformed)
	}
	r.rawReqID = raw
	tag, c, err = d.next()
	if err != nil || tag != tagInteger {
		return fmt.Errorf("error-status: %w", errMalformed)
	}
	if r.nonRep, err = decodeInt(c); err != nil {
		return err
	}
	tag, c, err = d.next()
	if err != nil || tag != tagInteger {
		return fmt.Errorf("error-index: %w", errMalformed)
	}
	if r.maxRep, err = decodeInt(c); err != nil {
		return err
	}
	tag, vbl, err := d.next()
	if err != nil || tag != tagSequence {
		return fmt.Errorf("varbind list: %w", errMalformed)
	}
	d = decoder{b: vbl}
	// Decode OIDs into one arena, then slice it.
	starts := make([]int, 0, 8)
	for d.pos < len(d.b) {
		tag, vb, err := d.next()
		if err != nil || tag != tagSequence {
			return fmt.Errorf("varbind: %w", errMalformed)
		}
		vd := decoder{b: vb}
		tag, raw, oc, err := vd.nextRaw()
		if err != nil || tag != tagOID {
			return fmt.Errorf("varbind oid: %w", errMalformed)
		}
		starts = append(starts, len(r.oidArena))
		if r.oidArena, err = decodeOIDInto(r.oidArena, oc); err != nil {
			return fmt.Errorf("varbind oid: %w", err)
		}
		r.rawOIDs = append(r.rawOIDs, raw)
	}
	for i, s := range starts {
		e := len(r.oidArena)
		if i+1 < len(starts) {
			e = starts[i+1]
		}
		r.oids = append(r.oids, r.oidArena[s:e:e])
	}
	return nil
}
