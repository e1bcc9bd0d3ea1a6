package trapd

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gosnmp/gosnmp"
	"github.com/rs/zerolog"
	"golang.org/x/net/ipv4"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/streams"
)

// OIDs every SNMPv2 notification starts with (RFC 3416).
const (
	oidSysUpTime   = "1.3.6.1.2.1.1.3.0"
	oidSnmpTrapOID = "1.3.6.1.6.3.1.1.4.1.0"
	// oidSnmpTraps is RFC 3584's root of the generic v1 traps (coldStart
	// is .1).
	oidSnmpTraps = "1.3.6.1.6.3.1.1.5"
)

// receiver turns datagrams into trap events.
type receiver struct {
	cfg  Config
	dir  *directory
	lim  *limiter
	logs *logThrottle
	log  zerolog.Logger
	m    *metrics
	pub  *publisher
	now  func() time.Time
	seq  atomic.Uint64
	// queued is the bytes of the datagrams read and not yet handled.
	queued atomic.Int64
}

// verdict is what became of one datagram.
type verdict struct {
	drop     string // a drop reason; "" accepted
	detail   string // why, for the log (never the community)
	olt      string
	received *streams.TrapReceived
	decoded  *streams.TrapDecoded
	trapID   string
	ack      []byte // the inform's acknowledgement to send back
}

// accept decides about one datagram from src; oversize says it filled the
// read buffer. g is the reader's own gosnmp value (one per goroutine).
func (r *receiver) accept(g *gosnmp.GoSNMP, pkt []byte, oversize bool, src netip.AddrPort, now time.Time) verdict {
	cands, v := r.screen(oversize, src, now)
	if v.drop != "" {
		return v
	}
	return r.decode(g, pkt, cands, src, now)
}

// screen is what the reader decides before any decoding, on the source
// address alone: the size, the source's bucket, whether it is an OLT.
func (r *receiver) screen(oversize bool, src netip.AddrPort, now time.Time) ([]*oltEntry, verdict) {
	addr := src.Addr().Unmap()
	switch {
	case oversize:
		return nil, verdict{drop: dropTooLarge, detail: fmt.Sprintf("datagram over %d bytes", r.cfg.MaxPacket)}
	case !r.lim.allow(addr, now):
		return nil, verdict{drop: dropRateLimited}
	}
	cands := r.dir.cur.Load().lookup(addr)
	if len(cands) == 0 {
		return nil, verdict{drop: dropUnknownSource}
	}
	return cands, verdict{}
}

// decode reads a screened datagram: BER, version, community, bounds, the
// profile's meaning.
func (r *receiver) decode(g *gosnmp.GoSNMP, pkt []byte, cands []*oltEntry, src netip.AddrPort, now time.Time) verdict {
	p, err := unmarshal(g, pkt)
	if err != nil {
		return verdict{drop: dropMalformed, detail: bounded(err.Error())}
	}
	version := ""
	switch {
	case p.Version == gosnmp.Version1 && p.PDUType == gosnmp.Trap:
		version = streams.TrapV1
	case p.Version == gosnmp.Version2c && p.PDUType == gosnmp.SNMPv2Trap:
		version = streams.TrapV2c
	case p.Version == gosnmp.Version2c && p.PDUType == gosnmp.InformRequest:
		version = streams.TrapV2cInform
	default:
		return verdict{drop: dropUnsupported, detail: fmt.Sprintf("SNMP %s %s", p.Version, p.PDUType)}
	}
	var olt *oltEntry
	for _, c := range cands {
		if subtle.ConstantTimeCompare([]byte(p.Community), c.community) == 1 && olt == nil {
			olt = c
		}
	}
	if olt == nil {
		return verdict{drop: dropBadCommunity}
	}
	v := verdict{olt: olt.id}
	if len(p.Variables) > streams.TrapMaxVarbinds {
		v.drop, v.detail = dropTooLarge, fmt.Sprintf("%d varbinds, at most %d", len(p.Variables), streams.TrapMaxVarbinds)
		return v
	}
	ev := &streams.TrapReceived{OLTID: olt.id, Source: src.String(), Version: version, Receiver: r.cfg.Instance, ReceivedAt: now.UTC(),
		Varbinds: make([]streams.TrapVarbind, 0, len(p.Variables))}
	for _, pdu := range p.Variables {
		tv, ok := varbind(pdu)
		if !ok {
			v.drop, v.detail = dropTooLarge, fmt.Sprintf("varbind %s over %d bytes", bounded(tv.OID), streams.TrapMaxValueBytes)
			return v
		}
		ev.Varbinds = append(ev.Varbinds, tv)
		switch tv.OID {
		case oidSysUpTime:
			if n, err := strconv.ParseUint(tv.Value, 10, 32); err == nil {
				ev.Uptime = uint32(n)
			}
		case oidSnmpTrapOID:
			ev.TrapOID = strings.TrimPrefix(tv.Value, ".")
		}
	}
	if version == streams.TrapV1 {
		ev.TrapOID, ev.Uptime = v1TrapOID(p.Enterprise, p.GenericTrap, p.SpecificTrap), uint32(p.Timestamp)
	}
	if len(ev.TrapOID) > streams.TrapMaxOIDBytes {
		v.drop, v.detail = dropTooLarge, "trap OID too long"
		return v
	}
	v.trapID = streams.MsgID("trap", olt.id, r.cfg.Instance, now.UnixNano(), r.seq.Add(1))
	v.received = ev
	if version == streams.TrapV2cInform {
		p.PDUType, p.Error, p.ErrorIndex = gosnmp.GetResponse, gosnmp.NoError, 0
		if b, err := p.MarshalMsg(); err == nil {
			v.ack = b
		}
	}
	if olt.decoder == nil {
		r.m.undecoded.WithLabelValues(undecodedNoProfile).Inc()
		return v
	}
	mean, err := olt.decoder.Decode(ev.TrapOID, ev.Varbinds)
	switch {
	case errors.Is(err, profiles.ErrTrapUnmapped):
		r.m.undecoded.WithLabelValues(undecodedUnmapped).Inc()
		return v
	case err != nil:
		r.m.undecoded.WithLabelValues(undecodedInvalid).Inc()
		r.logDrop(undecodedInvalid, src, olt.id, err.Error(), now)
		return v
	}
	r.m.decoded.WithLabelValues(mean.Kind).Inc()
	v.decoded = &streams.TrapDecoded{OLTID: olt.id, TrapID: v.trapID, Profile: olt.decoder.Profile(), Rule: mean.Rule, Kind: mean.Kind,
		TrapOID: ev.TrapOID, PonIndex: mean.PonIndex, ONUID: mean.ONUID, Index: mean.Index, PortName: mean.PortName, At: ev.ReceivedAt}
	return v
}

// unmarshal decodes a trap with gosnmp, which must not panic the reader
// on any input.
func unmarshal(g *gosnmp.GoSNMP, pkt []byte) (p *gosnmp.SnmpPacket, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			p, err = nil, fmt.Errorf("BER decoder failed: %v", rec)
		}
	}()
	p, err = g.UnmarshalTrap(pkt, false)
	if err == nil && p == nil {
		err = errors.New("no packet")
	}
	return p, err
}

// v1TrapOID is RFC 3584's SNMPv2 form of an SNMPv1 trap's identity.
func v1TrapOID(enterprise string, generic, specific int) string {
	if generic >= 0 && generic < 6 {
		return oidSnmpTraps + "." + strconv.Itoa(generic+1)
	}
	return strings.Trim(enterprise, ".") + ".0." + strconv.Itoa(specific)
}

// varbind renders a received varbind; false when its value is over the
// bound.
func varbind(pdu gosnmp.SnmpPDU) (streams.TrapVarbind, bool) {
	tv := streams.TrapVarbind{OID: strings.TrimPrefix(pdu.Name, "."), Type: pdu.Type.String()}
	if len(tv.OID) > streams.TrapMaxOIDBytes {
		return tv, false
	}
	switch v := pdu.Value.(type) {
	case nil:
	case []byte:
		if len(v) > streams.TrapMaxValueBytes {
			return tv, false
		}
		if printable(v) {
			tv.Value = string(v)
		} else {
			tv.Value, tv.Hex = hex.EncodeToString(v), true
		}
	case string:
		tv.Value = strings.TrimPrefix(v, ".")
	case int:
		tv.Value = strconv.Itoa(v)
	case uint:
		tv.Value = strconv.FormatUint(uint64(v), 10)
	case uint32:
		tv.Value = strconv.FormatUint(uint64(v), 10)
	case uint64:
		tv.Value = strconv.FormatUint(v, 10)
	case int64:
		tv.Value = strconv.FormatInt(v, 10)
	default:
		tv.Value = fmt.Sprint(v)
	}
	if len(tv.Value) > 2*streams.TrapMaxValueBytes {
		return tv, false
	}
	return tv, true
}

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r != '\n' && r != '\t' && r != '\r' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// bounded cuts a text for a log line.
func bounded(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// logDrop logs a dropped (or undecodable) trap, at most once per period
// per reason. The community is never logged.
func (r *receiver) logDrop(reason string, src netip.AddrPort, olt, detail string, now time.Time) {
	ok, missed := r.logs.take(reason, now)
	if !ok {
		return
	}
	ev := r.log.Warn().Str("reason", reason).Str("source", src.String()).Int("suppressed", missed)
	if olt != "" {
		ev = ev.Str("olt", olt)
	}
	if detail != "" {
		ev = ev.Str("detail", detail)
	}
	ev.Msg("trap not published")
}

// shard is the handler of a source address.
func shard(a netip.Addr, n int) int {
	b := a.Unmap().As16()
	h := uint32(2166136261)
	for _, x := range b {
		h = (h ^ uint32(x)) * 16777619
	}
	return int(h % uint32(n))
}

// serve reads the socket with cfg.Readers goroutines and handles what
// they queue with cfg.Handlers goroutines until ctx ends.
func (r *receiver) serve(ctx context.Context, conn *net.UDPConn) {
	jobs := make([]chan job, r.cfg.Handlers)
	for i := range jobs {
		jobs[i] = make(chan job, queueSlots/r.cfg.Handlers)
	}
	done := make(chan struct{})
	for range r.cfg.Readers {
		go func() {
			defer func() { done <- struct{}{} }()
			r.read(ctx, conn, jobs)
		}()
	}
	for i := range r.cfg.Handlers {
		go func() {
			defer func() { done <- struct{}{} }()
			r.work(ctx, conn, jobs[i])
		}()
	}
	<-ctx.Done()
	_ = conn.Close()
	for range r.cfg.Readers + r.cfg.Handlers {
		<-done
	}
}

// queueSlots bounds the queued datagrams by count (QueueBytes bounds
// their bytes).
const queueSlots = 1 << 16

// readBatch is how many datagrams one read takes from the socket
// (recvmmsg where the platform has it): a flood costs one system call per
// batch, not per datagram.
const readBatch = 64

// job is a screened datagram waiting for a handler.
type job struct {
	pkt   []byte
	src   netip.AddrPort
	cands []*oltEntry
	at    time.Time
}

// read is one reader: up to readBatch datagrams per read, screened on
// their source (a flood is shed here, before any decoding) and queued for
// the handlers. The queue is bounded in bytes (QueueBytes): a datagram
// beyond it is dropped (backlog), so a burst waits in memory rather than
// overflowing the socket's buffer while the handlers publish.
func (r *receiver) read(ctx context.Context, conn *net.UDPConn, jobs []chan job) {
	pc := ipv4.NewPacketConn(conn)
	msgs := make([]ipv4.Message, readBatch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, r.cfg.MaxPacket+1)}
	}
	for {
		n, err := pc.ReadBatch(msgs, 0)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			r.log.Warn().Err(err).Msg("read the trap socket")
			continue
		}
		now := r.now()
		for i := range n {
			m := &msgs[i]
			ua, ok := m.Addr.(*net.UDPAddr)
			if !ok {
				continue
			}
			src := ua.AddrPort()
			cands, v := r.screen(m.N > r.cfg.MaxPacket, src, now)
			if v.drop == "" && r.queued.Add(int64(m.N)) > int64(r.cfg.QueueBytes) {
				r.queued.Add(-int64(m.N))
				v.drop, v.detail = dropBacklog, fmt.Sprintf("handlers %d bytes behind", r.cfg.QueueBytes)
			}
			if v.drop != "" {
				r.dropped(v, src, now)
				continue
			}
			// One source's datagrams go to one handler, in the order read:
			// an ONU's down and up traps are published in that order.
			select {
			case jobs[shard(src.Addr(), len(jobs))] <- job{pkt: append([]byte(nil), m.Buffers[0][:m.N]...), src: src, cands: cands, at: now}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// work is one handler: decodes and publishes queued datagrams.
func (r *receiver) work(ctx context.Context, conn *net.UDPConn, jobs <-chan job) {
	g := &gosnmp.GoSNMP{}
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-jobs:
			r.queued.Add(-int64(len(j.pkt)))
			start := time.Now()
			v := r.decode(g, j.pkt, j.cands, j.src, j.at)
			if v.drop != "" {
				r.dropped(v, j.src, j.at)
				continue
			}
			r.m.received.WithLabelValues(v.received.Version).Inc()
			// An inform is acknowledged once JetStream stored its events
			// (publisher.settle): one not stored is sent again by the OLT.
			src := j.src
			r.pub.trap(ctx, v, func(ack []byte) {
				if _, err := conn.WriteToUDPAddrPort(ack, src); err == nil {
					r.m.acked.Inc()
				}
			})
			r.m.handle.Observe(time.Since(start).Seconds())
		}
	}
}

// dropped counts and logs (throttled) a dropped datagram.
func (r *receiver) dropped(v verdict, src netip.AddrPort, now time.Time) {
	r.m.receivedDropped.Inc()
	r.m.drop(v.drop)
	r.logDrop(v.drop, src, v.olt, v.detail, now)
}
