package poller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/facho-olt/facho/streams"
)

// v2cClient is the poller's SNMPv2c client for GET, GETNEXT and GETBULK
// on one connected UDP socket. It speaks the same protocol as gosnmp's
// GoSNMP with the same retry rules (Retries more sends after a timeout or
// an unreadable answer; an answer to any of the request's sends counts),
// but decodes a response straight into streams.Varbind: no intermediate
// gosnmp.SnmpPDU with boxed values, no per-packet debug string (gosnmp
// formats the whole outgoing packet for its logger on every send, logger
// or not), buffers reused between requests. A response with anything it
// does not decode itself (an unusual type, a non-minimal length, a
// trailing byte) is decoded by gosnmp's decoder and converted by toVarbind,
// so the result is gosnmp's in every case (see FuzzV2CDecodeMatchesGosnmp).
// Not safe for concurrent use: one per goroutine.
type v2cClient struct {
	conn      *net.UDPConn
	community string
	timeout   time.Duration
	retries   int
	ctx       context.Context
	reqID     uint32
	out, vbl  []byte
	in        []byte
	ids       []uint32
	arena     []byte
	spans     []span
	resp      v2cResponse
	// berOIDs, during GetBER, are the OIDs asked as BER contents.
	berOIDs [][]byte
	// budget counts every answer's bytes (bounds.go); nil: unbounded.
	budget *byteBudget
	// stray counts the answers of the current request skipped for a
	// request id that is none of its sends' (said when it times out).
	stray int
}

// v2cResponse is a decoded GetResponse. Variables is reused by the next
// request of the same client.
type v2cResponse struct {
	Error      gosnmp.SNMPError
	ErrorIndex int
	Variables  []streams.Varbind
	// Matched (GetBER only): the answer names exactly the OIDs asked, in
	// order; its Variables then carry no OID (the caller knows them).
	Matched bool
}

// BER tags the client writes or reads.
const (
	berInteger     = 0x02
	berOctetString = 0x04
	berNull        = 0x05
	berOID         = 0x06
	berSequence    = 0x30
	berIPAddress   = 0x40
	berCounter32   = 0x41
	berGauge32     = 0x42
	berTimeTicks   = 0x43
	berCounter64   = 0x46
	berNoSuchObj   = 0x80
	berNoSuchInst  = 0x81
	berEndOfMib    = 0x82
	pduGet         = 0xa0
	pduGetNext     = 0xa1
	pduResponse    = 0xa2
	pduGetBulk     = 0xa5
)

// dialV2C connects a client to host:port.
func dialV2C(ctx context.Context, host string, port int, community string, timeout time.Duration, retries int) (*v2cClient, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial udp %s: %w", addr, err)
	}
	// A request ID that differs between clients, as gosnmp's random start.
	seed := uint32(time.Now().UnixNano()) ^ uint32(os.Getpid())<<16
	return &v2cClient{conn: c.(*net.UDPConn), community: community, timeout: timeout, retries: max(0, retries), ctx: ctx,
		reqID: seed, in: make([]byte, 65536)}, nil
}

// Close closes the socket (also what ends a request blocked in a read).
func (c *v2cClient) Close() error { return c.conn.Close() }

// Get reads the OIDs (dotted, leading dot or not).
func (c *v2cClient) Get(oids []string) (*v2cResponse, error) {
	return c.request(pduGet, oids, 0, 0)
}

// GetBER reads OIDs given as BER contents (what appendOID appends), so a
// caller that reads the same OIDs again, or builds them from encoded parts,
// does not format and parse dotted strings. When the answer names exactly
// the OIDs asked (the usual answer to a GET) it sets Matched and leaves the
// varbinds' OID empty: no OID is rendered.
func (c *v2cClient) GetBER(oids [][]byte) (*v2cResponse, error) {
	c.berOIDs = oids
	defer func() { c.berOIDs = nil }()
	return c.request(pduGet, nil, 0, 0)
}

// GetNext reads the OID after each of oids.
func (c *v2cClient) GetNext(oids []string) (*v2cResponse, error) {
	return c.request(pduGetNext, oids, 0, 0)
}

// GetBulk reads up to maxReps OIDs after each of oids.
func (c *v2cClient) GetBulk(oids []string, nonRepeaters, maxReps uint32) (*v2cResponse, error) {
	return c.request(pduGetBulk, oids, int(nonRepeaters), int(maxReps))
}

func (c *v2cClient) request(pdu byte, oids []string, a, b int) (*v2cResponse, error) {
	c.ids = c.ids[:0]
	c.stray = 0
	var err error
	for try := 0; ; try++ {
		if try > 0 && try > c.retries {
			if isTimeout(err) && c.stray > 0 {
				return nil, fmt.Errorf("request timeout (after %d retries; %d answers with a request id not asked were ignored): %w", try-1, c.stray, gosnmp.ErrMaxRetriesExceeded)
			}
			if isTimeout(err) {
				return nil, fmt.Errorf("request timeout (after %d retries): %w", try-1, gosnmp.ErrMaxRetriesExceeded)
			}
			return nil, err
		}
		if cerr := c.ctx.Err(); cerr != nil {
			return nil, cerr
		}
		deadline := time.Now().Add(c.timeout)
		ctxDeadline := false
		if d, ok := c.ctx.Deadline(); ok && d.Before(deadline) {
			deadline, ctxDeadline = d, true
		}
		if err = c.conn.SetDeadline(deadline); err != nil {
			return nil, fmt.Errorf("set deadline: %w", err)
		}
		c.reqID = (c.reqID + 1) & 0x7fffffff
		if c.reqID == 0 {
			c.reqID = 1
		}
		c.ids = append(c.ids, c.reqID)
		if err = c.encode(pdu, c.reqID, oids, a, b); err != nil {
			return nil, fmt.Errorf("marshal: %w", err)
		}
		if _, err = c.conn.Write(c.out); err != nil {
			err = fmt.Errorf("write: %w", err)
			continue
		}
		var resp *v2cResponse
		resp, err = c.receive()
		if err == nil {
			return resp, nil
		}
		if _, bound := readCause(err); bound {
			return nil, err // a bound reached: sending again would not help
		}
		if ctxDeadline && isTimeout(err) {
			return nil, context.DeadlineExceeded
		}
	}
}

// receive reads until an answer to one of the request's sends arrives
// (others are late answers to earlier requests: skipped), the deadline
// passes, or an answer cannot be read (the caller sends again).
func (c *v2cClient) receive() (*v2cResponse, error) {
	for {
		n, err := c.conn.Read(c.in)
		if err != nil {
			return nil, fmt.Errorf("error reading from socket: %w", err)
		}
		if err := c.budget.take(n); err != nil {
			return nil, err
		}
		id, err := c.decode(c.in[:n])
		if err != nil {
			return nil, err
		}
		if id == 0 {
			return &c.resp, nil // as gosnmp: request ID 0 answers anything
		}
		for _, want := range c.ids {
			if id == want {
				return &c.resp, nil
			}
		}
		c.stray++
	}
}

// encode writes the request into c.out.
func (c *v2cClient) encode(pdu byte, reqID uint32, oids []string, a, b int) error {
	vbl := c.vbl[:0]
	for _, o := range c.berOIDs {
		if len(o) == 0 || len(o) > 127 {
			return fmt.Errorf("ber oid of %d bytes", len(o))
		}
		vbl = append(vbl, berSequence, byte(len(o)+4), berOID, byte(len(o)))
		vbl = append(vbl, o...)
		vbl = append(vbl, berNull, 0)
	}
	for _, o := range oids {
		start := len(vbl)
		vbl = append(vbl, berSequence, 0, berOID, 0) // lengths patched below (short form)
		var err error
		vbl, err = appendOID(vbl, o)
		if err != nil {
			return err
		}
		oidLen := len(vbl) - start - 4
		if oidLen > 127 {
			return fmt.Errorf("oid %s too long", o)
		}
		vbl[start+3] = byte(oidLen)
		vbl = append(vbl, berNull, 0)
		vbl[start+1] = byte(oidLen + 4)
	}
	c.vbl = vbl
	var body [3 * 7]byte
	h := appendInt(body[:0], berInteger, int64(reqID))
	h = appendInt(h, berInteger, int64(a))
	h = appendInt(h, berInteger, int64(b))
	pduLen := len(h) + 1 + lenSize(len(vbl)) + len(vbl)
	msgLen := 3 + 1 + lenSize(len(c.community)) + len(c.community) + 1 + lenSize(pduLen) + pduLen
	out := c.out[:0]
	out = append(out, berSequence)
	out = appendLen(out, msgLen)
	out = append(out, berInteger, 1, 1) // version 2c
	out = append(out, berOctetString)
	out = appendLen(out, len(c.community))
	out = append(out, c.community...)
	out = append(out, pdu)
	out = appendLen(out, pduLen)
	out = append(out, h...)
	out = append(out, berSequence)
	out = appendLen(out, len(vbl))
	out = append(out, vbl...)
	c.out = out
	return nil
}

// appendOID appends the BER content of a dotted OID.
func appendOID(b []byte, oid string) ([]byte, error) {
	s := strings.TrimPrefix(oid, ".")
	var arcs [2]uint64
	n := 0
	for s != "" {
		part := s
		if i := strings.IndexByte(s, '.'); i >= 0 {
			part, s = s[:i], s[i+1:]
			if s == "" {
				return b, fmt.Errorf("oid %q: trailing dot", oid)
			}
		} else {
			s = ""
		}
		v, err := strconv.ParseUint(part, 10, 32)
		if err != nil {
			return b, fmt.Errorf("oid %q: %w", oid, err)
		}
		switch {
		case n < 2:
			arcs[n] = v
			if n == 1 {
				if arcs[0] > 2 || (arcs[0] < 2 && arcs[1] > 39) {
					return b, fmt.Errorf("oid %q: invalid first arcs", oid)
				}
				b = appendBase128(b, arcs[0]*40+arcs[1])
			}
		default:
			b = appendBase128(b, v)
		}
		n++
	}
	if n < 2 {
		return b, fmt.Errorf("oid %q: fewer than 2 arcs", oid)
	}
	return b, nil
}

func appendBase128(b []byte, v uint64) []byte {
	var tmp [10]byte
	i := len(tmp) - 1
	tmp[i] = byte(v & 0x7f)
	for v >>= 7; v > 0; v >>= 7 {
		i--
		tmp[i] = byte(v&0x7f) | 0x80
	}
	return append(b, tmp[i:]...)
}

// appendInt appends a minimal two's complement INTEGER TLV.
func appendInt(b []byte, tag byte, v int64) []byte {
	n := 1
	for x := v; x > 127 || x < -128; x >>= 8 {
		n++
	}
	b = append(b, tag, byte(n))
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func lenSize(n int) int {
	switch {
	case n < 0x80:
		return 1
	case n < 0x100:
		return 2
	case n < 0x10000:
		return 3
	}
	return 4
}

func appendLen(b []byte, n int) []byte {
	switch {
	case n < 0x80:
		return append(b, byte(n))
	case n < 0x100:
		return append(b, 0x81, byte(n))
	case n < 0x10000:
		return append(b, 0x82, byte(n>>8), byte(n))
	}
	return append(b, 0x83, byte(n>>16), byte(n>>8), byte(n))
}

// errUnusual sends a response to gosnmp's decoder.
var errUnusual = errors.New("unusual encoding")

// decode reads a response into c.resp and returns its request ID.
func (c *v2cClient) decode(p []byte) (uint32, error) {
	id, err := c.decodeFast(p)
	if err == nil {
		return id, nil
	}
	return c.decodeGosnmp(p)
}

// decodeGosnmp decodes with gosnmp, for what decodeFast leaves to it.
func (c *v2cClient) decodeGosnmp(p []byte) (uint32, error) {
	pkt, err := (&gosnmp.GoSNMP{Version: gosnmp.Version2c}).SnmpDecodePacket(p)
	if err != nil {
		return 0, fmt.Errorf("unmarshal response: %w", err)
	}
	c.resp.Error, c.resp.ErrorIndex, c.resp.Matched = pkt.Error, int(pkt.ErrorIndex), false
	c.resp.Variables = c.resp.Variables[:0]
	for _, v := range pkt.Variables {
		c.resp.Variables = append(c.resp.Variables, toVarbind(v))
	}
	return pkt.RequestID, nil
}

// berReader reads TLVs of the well-formed subset decodeFast accepts:
// definite lengths of at most 3 octets, minimal.
type berReader struct {
	b   []byte
	off int
}

// next returns the next TLV's tag and content.
func (r *berReader) next() (byte, []byte, error) {
	if r.off+2 > len(r.b) {
		return 0, nil, errUnusual
	}
	tag := r.b[r.off]
	l := int(r.b[r.off+1])
	r.off += 2
	if l >= 0x80 {
		k := l & 0x7f
		if k == 0 || k > 3 || r.off+k > len(r.b) {
			return 0, nil, errUnusual
		}
		l = 0
		for i := 0; i < k; i++ {
			l = l<<8 | int(r.b[r.off+i])
		}
		r.off += k
		if l < 0x80 || l < 1<<(8*(k-1)) {
			return 0, nil, errUnusual // not minimal
		}
	}
	if r.off+l > len(r.b) {
		return 0, nil, errUnusual
	}
	v := r.b[r.off : r.off+l]
	r.off += l
	return tag, v, nil
}

func (r *berReader) int(maxLen int) (int64, error) {
	tag, v, err := r.next()
	if err != nil || tag != berInteger || len(v) == 0 || len(v) > maxLen {
		return 0, errUnusual
	}
	return beInt(v), nil
}

func beInt(v []byte) int64 {
	var x int64
	for _, c := range v {
		x = x<<8 | int64(c)
	}
	sh := 64 - 8*uint(len(v))
	return x << sh >> sh
}

// decodeFast decodes a v2c GetResponse of the usual types into c.resp.
func (c *v2cClient) decodeFast(p []byte) (uint32, error) {
	r := berReader{b: p}
	tag, msg, err := r.next()
	if err != nil || tag != berSequence || r.off != len(p) {
		return 0, errUnusual
	}
	r = berReader{b: msg}
	if v, err := r.int(1); err != nil || v != 1 {
		return 0, errUnusual
	}
	if tag, _, err := r.next(); err != nil || tag != berOctetString {
		return 0, errUnusual
	}
	tag, pdu, err := r.next()
	if err != nil || tag != pduResponse || r.off != len(msg) {
		return 0, errUnusual
	}
	r = berReader{b: pdu}
	id, err := r.int(4)
	if err != nil || id < 0 {
		return 0, errUnusual
	}
	status, err := r.int(4)
	if err != nil || status < 0 || status > 255 {
		return 0, errUnusual
	}
	index, err := r.int(4)
	if err != nil || index < 0 {
		return 0, errUnusual
	}
	tag, list, err := r.next()
	if err != nil || tag != berSequence || r.off != len(pdu) {
		return 0, errUnusual
	}
	// Every OID and value of the response is rendered into one buffer,
	// made a string once: two allocations per response, not per varbind
	// (the strings share it; a batch publishes them together anyway).
	matched := c.berOIDs != nil && c.matches(list)
	arena := c.arena[:0]
	spans := c.spans[:0]
	r = berReader{b: list}
	for r.off < len(list) {
		tag, vb, err := r.next()
		if err != nil || tag != berSequence {
			return 0, errUnusual
		}
		vr := berReader{b: vb}
		tag, name, err := vr.next()
		if err != nil || tag != berOID {
			return 0, errUnusual
		}
		tag, val, err := vr.next()
		if err != nil || vr.off != len(vb) {
			return 0, errUnusual
		}
		sp := span{oid: len(arena)}
		var ok bool
		if matched {
			// The OID asked, which appendOID wrote: valid, not rendered.
		} else if arena, ok = appendOIDString(arena, name); !ok {
			return 0, errUnusual
		}
		sp.val = len(arena)
		if arena, sp.typ, ok = appendValue(arena, tag, val); !ok {
			return 0, errUnusual
		}
		sp.end = len(arena)
		spans = append(spans, sp)
	}
	c.arena, c.spans = arena, spans
	all := string(arena)
	vars := c.resp.Variables[:0]
	for _, sp := range spans {
		vars = append(vars, streams.Varbind{OID: all[sp.oid:sp.val], Type: sp.typ, Value: all[sp.val:sp.end]})
	}
	c.resp.Variables = vars
	c.resp.Error, c.resp.ErrorIndex, c.resp.Matched = gosnmp.SNMPError(status), int(index), matched
	return uint32(id), nil
}

// matches says whether the varbind list names exactly c.berOIDs, in order.
func (c *v2cClient) matches(list []byte) bool {
	r := berReader{b: list}
	i := 0
	for r.off < len(list) {
		tag, vb, err := r.next()
		if err != nil || tag != berSequence || i >= len(c.berOIDs) {
			return false
		}
		vr := berReader{b: vb}
		tag, name, err := vr.next()
		if err != nil || tag != berOID || !bytes.Equal(name, c.berOIDs[i]) {
			return false
		}
		i++
	}
	return i == len(c.berOIDs)
}

// span locates one varbind in decodeFast's buffer.
type span struct {
	oid, val, end int
	typ           string
}

// appendValue renders a value as toVarbind renders gosnmp's decoding of
// it, and its type; false for what decodeFast leaves to gosnmp.
func appendValue(b []byte, tag byte, val []byte) ([]byte, string, bool) {
	switch tag {
	case berInteger:
		if len(val) == 0 || len(val) > 8 {
			return b, "", false
		}
		return strconv.AppendInt(b, beInt(val), 10), streams.VTInteger, true
	case berOctetString:
		const digits = "0123456789abcdef"
		for _, c := range val {
			b = append(b, digits[c>>4], digits[c&0x0f])
		}
		return b, streams.VTOctetString, true
	case berNull:
		return b, streams.VTNull, len(val) == 0
	case berOID:
		b, ok := appendOIDString(b, val)
		return b, streams.VTOID, ok
	case berIPAddress:
		if len(val) != 4 {
			return b, "", false
		}
		for i, c := range val {
			if i > 0 {
				b = append(b, '.')
			}
			b = strconv.AppendUint(b, uint64(c), 10)
		}
		return b, streams.VTIPAddress, true
	case berCounter32, berGauge32, berTimeTicks, berCounter64:
		if len(val) == 9 && val[0] == 0 {
			val = val[1:] // a positive 64-bit value's sign octet
		}
		if len(val) == 0 || len(val) > 8 {
			return b, "", false
		}
		var x uint64
		for _, c := range val {
			x = x<<8 | uint64(c)
		}
		typ := streams.VTCounter64
		switch tag {
		case berCounter32:
			typ = streams.VTCounter32
		case berGauge32:
			typ = streams.VTGauge32
		case berTimeTicks:
			typ = streams.VTTimeTicks
		}
		return strconv.AppendUint(b, x, 10), typ, true
	case berNoSuchObj:
		return b, streams.VTNoSuchObject, len(val) == 0
	case berNoSuchInst:
		return b, streams.VTNoSuchInstance, len(val) == 0
	case berEndOfMib:
		return b, streams.VTEndOfMibView, len(val) == 0
	}
	return b, "", false
}

// appendOIDString renders BER OID content dotted, without a leading dot.
func appendOIDString(out []byte, b []byte) ([]byte, bool) {
	if len(b) == 0 || b[len(b)-1]&0x80 != 0 {
		return out, false
	}
	first := true
	var x uint64
	for i, c := range b {
		if x == 0 && c == 0x80 && (i == 0 || b[i-1]&0x80 == 0) {
			// A padded sub-identifier: gosnmp reads it; left to it.
			return out, false
		}
		x = x<<7 | uint64(c&0x7f)
		if x > 0xffffffff {
			return out, false
		}
		if c&0x80 != 0 {
			continue
		}
		if first {
			if x < 80 {
				out = strconv.AppendUint(out, x/40, 10)
				out = append(out, '.')
				out = strconv.AppendUint(out, x%40, 10)
			} else {
				out = append(out, '2', '.')
				out = strconv.AppendUint(out, x-80, 10)
			}
			first = false
		} else {
			out = append(out, '.')
			out = strconv.AppendUint(out, x, 10)
		}
		x = 0
	}
	return out, true
}
