package oltsim

import "bytes"

// answer is the whole agent for one datagram: it decodes msg into req and
// returns the response built into out (reusing its storage); ok is false
// when the datagram gets no answer (garbage, SNMPv1/v3, wrong community:
// a v2c-only agent stays silent). view is called only for a request worth
// answering, so an OLT's MIB is built on first real use.
func answer(msg []byte, req *request, community []byte, view func() *mibView, out []byte, maxBytes int, uptime uint32) ([]byte, bool) {
	if err := parseRequest(msg, req); err != nil || req.version != 1 || !bytes.Equal(req.community, community) {
		return nil, false
	}
	return respond(req, view(), out, maxBytes, uptime)
}

// headroomFor is the room left in front of the varbinds for the message
// headers; it bounds their size from above.
func headroomFor(r *request) int {
	return 48 + len(r.community) + len(r.rawReqID)
}

// appendExceptionVB appends SEQUENCE{o, tag NULL-like} without allocating.
func appendExceptionVB(b []byte, o oid, tag byte) []byte {
	c := oidContentLen(o)
	oidTLV := 1 + lenLen(c) + c
	b = append(b, tagSequence)
	b = appendLen(b, oidTLV+2)
	b = appendOID(b, o)
	return append(b, tag, 0)
}

// appendEntry appends the varbind of e, encoding dynamic values on the fly.
func appendEntry(b []byte, e *entry, uptime uint32) []byte {
	if e.enc != nil {
		return append(b, e.enc...)
	}
	v := e.val
	if e.dyn == dynUptime {
		v = value{typ: tagTimeTicks, u: uint64(uptime)}
	}
	var tmp [96]byte
	t := appendOID(tmp[:0], e.oid)
	t = appendValue(t, v)
	b = append(b, tagSequence)
	b = appendLen(b, len(t))
	return append(b, t...)
}

// respond builds the response to r into out (reusing its storage) and
// returns it; ok is false when the request gets no answer at all.
// maxBytes bounds the whole message.
func respond(r *request, m *mibView, out []byte, maxBytes int, uptime uint32) ([]byte, bool) {
	h := headroomFor(r)
	if cap(out) < h+maxBytes+64 {
		out = make([]byte, 0, h+maxBytes+64)
	}
	limit := maxBytes - h // varbind bytes allowed after the headroom
	if limit < 0 {
		limit = 0
	}
	b := out[:h]
	errStatus, errIndex := 0, 0
	tooBig := false
	switch r.pdu {
	case pduGet:
		for i, q := range r.oids {
			if pos, ok := m.seek(q); ok {
				b = m.appendGetAt(b, pos, uptime)
			} else {
				b = appendRawVarbind(b, r.rawOIDs[i], m.missTag(q))
			}
		}
		tooBig = len(b)-h > limit
	case pduGetNext:
		for i, q := range r.oids {
			pos := m.after(q)
			if pos < m.size() {
				b = m.appendAt(b, pos, uptime)
			} else {
				b = appendRawVarbind(b, r.rawOIDs[i], tagEndOfMibView)
			}
		}
		tooBig = len(b)-h > limit
	case pduGetBulk:
		b, tooBig = getBulk(r, m, b, h, limit, uptime)
	case pduSet:
		for i := range r.oids {
			b = appendRawVarbind(b, r.rawOIDs[i], tagNull)
		}
		if len(r.oids) > 0 {
			errStatus, errIndex = errNotWritable, 1
		}
		tooBig = len(b)-h > limit
	default:
		return nil, false
	}
	if tooBig {
		b = b[:h]
		errStatus, errIndex = errTooBig, 0
	}
	msg := finish(r, b, h, errStatus, errIndex)
	if len(msg) > maxBytes && len(b) > h {
		// The headroom estimate let through more than fits (a tiny
		// maxBytes): answer tooBig with no varbinds instead.
		msg = finish(r, b[:h], h, errTooBig, 0)
	}
	if len(msg) > maxBytes {
		// Even the empty tooBig does not fit: RFC 3416 4.2.1 drops it.
		return nil, false
	}
	return msg, true
}

func getBulk(r *request, m *mibView, b []byte, h, limit int, uptime uint32) ([]byte, bool) {
	n := len(r.oids)
	nonRep := int(max(0, min(r.nonRep, int64(n))))
	maxRep := int(max(0, min(r.maxRep, 1<<20)))
	for i := 0; i < nonRep; i++ {
		pos := m.after(r.oids[i])
		if pos < m.size() {
			b = m.appendAt(b, pos, uptime)
		} else {
			b = appendRawVarbind(b, r.rawOIDs[i], tagEndOfMibView)
		}
		if len(b)-h > limit {
			return b, true
		}
	}
	reps := n - nonRep
	if reps == 0 || maxRep == 0 {
		return b, false
	}
	var small, smallLast [16]int
	pos, last := small[:0], smallLast[:0]
	if reps > len(small) {
		pos, last = make([]int, 0, reps), make([]int, 0, reps)
	}
	for j := nonRep; j < n; j++ {
		pos = append(pos, m.after(r.oids[j]))
		last = append(last, -1)
	}
	size := m.size()
	for rep := 0; rep < maxRep; rep++ {
		allEnd := true
		for k := 0; k < reps; k++ {
			mark := len(b)
			idx := pos[k]
			if idx < size {
				b, pos[k] = m.appendNext(b, idx, uptime)
				last[k] = idx
				allEnd = false
			} else if last[k] >= 0 {
				b = m.appendExceptionAt(b, last[k], tagEndOfMibView)
			} else {
				b = appendRawVarbind(b, r.rawOIDs[nonRep+k], tagEndOfMibView)
			}
			if len(b)-h > limit {
				// Truncate to what fits, as net-snmp does; tooBig only
				// when nothing fits at all.
				b = b[:mark]
				return b, len(b) == h
			}
		}
		if allEnd {
			break
		}
	}
	return b, false
}

// finish writes the headers in front of the varbinds at b[h:] and returns
// the complete message.
func finish(r *request, b []byte, h, errStatus, errIndex int) []byte {
	buf := b[:cap(b)]
	end := len(b)
	pos := putHeader(buf, h, tagSequence, end-h)
	pos = prependInt(buf, pos, int64(errIndex))
	pos = prependInt(buf, pos, int64(errStatus))
	pos -= len(r.rawReqID)
	copy(buf[pos:], r.rawReqID)
	pos = putHeader(buf, pos, pduResponse, end-pos)
	pos -= len(r.community)
	copy(buf[pos:], r.community)
	pos = putHeader(buf, pos, tagOctetString, len(r.community))
	pos = prependInt(buf, pos, r.version)
	pos = putHeader(buf, pos, tagSequence, end-pos)
	return buf[pos:end]
}

func prependInt(buf []byte, pos int, v int64) int {
	n := intLen(v)
	for i := 0; i < n; i++ {
		buf[pos-1-i] = byte(v >> (8 * i))
	}
	pos -= n
	return putHeader(buf, pos, tagInteger, n)
}
