package oltsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// maxInFlightPerOLT bounds the goroutines serving one OLT; when reached, the
// reader stops reading and the kernel queues (then drops) datagrams.
const maxInFlightPerOLT = 1024

// OLT is one simulated agent listening on its own UDP socket.
type OLT struct {
	name      string
	cfg       OLTConfig
	prof      *profile // nil when serving a recording
	log       zerolog.Logger
	conn      *net.UDPConn
	addr      *net.UDPAddr
	community []byte
	maxBytes  int
	pools     *pools

	mib    atomic.Pointer[mibView] // static + ONU tables; nil: rebuild
	static atomic.Pointer[mibView] // the encoded static part, built once
	boot   atomic.Int64            // unix nanoseconds of the last (simulated) boot
	rec    recorder
	faults *faultState
	traps  trapState // where ONU changes are sent as traps (traps.go)

	mu sync.Mutex // guards onus and life state
	// onus is never modified in place once a view serves it: changes
	// (life ticks, SetONUOnline) work on a copy (mutableONUs).
	onus []onuState
	tick uint64
	// health is the OLT's own state (health.go), replaced, never changed
	// in place, by PatchHealth.
	health Health

	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}
	wg     sync.WaitGroup
}

// pools are shared by all OLTs of a fleet.
type pools struct {
	in  sync.Pool // *[]byte datagram buffers
	out sync.Pool // *[]byte response buffers
	req sync.Pool // *request
}

func newPools() *pools {
	p := &pools{}
	p.in.New = func() any { b := make([]byte, 65536); return &b }
	p.out.New = func() any { b := make([]byte, 0, 65536+4096); return &b }
	p.req.New = func() any { return &request{} }
	return p
}

// newOLT builds the agent's data; it does not listen yet.
func newOLT(ctx context.Context, cfg OLTConfig, log zerolog.Logger, pl *pools) (*OLT, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	o := &OLT{
		name:      cfg.Name,
		cfg:       cfg,
		log:       log.With().Str("olt", cfg.Name).Logger(),
		community: []byte(cfg.Community),
		maxBytes:  cfg.MaxResponseBytes,
		pools:     pl,
		faults:    newFaultState(cfg.Faults, cfg.Seed),
		sem:       make(chan struct{}, maxInFlightPerOLT),
	}
	if o.maxBytes == 0 {
		o.maxBytes = DefaultMaxResponseBytes
	}
	o.boot.Store(time.Now().UnixNano())
	if cfg.Recording != "" {
		view, err := loadSnmprec(cfg.Recording)
		if err != nil {
			return nil, fmt.Errorf("olt %s: %w", cfg.Name, err)
		}
		o.mib.Store(view)
	} else {
		p, err := profileByName(cfg.Profile)
		if err != nil {
			return nil, fmt.Errorf("olt %s: %w", cfg.Name, err)
		}
		o.prof = p
		o.onus = p.generate(cfg.Shape, cfg.Seed)
		o.health = newHealth(p, cfg.Shape, cfg.Seed)
		// The MIB view is built on first use: big fleets start fast and
		// only the OLTs actually polled hold encoded tables.
	}
	if err := o.SetTrapTarget(cfg.Traps); err != nil {
		return nil, err
	}
	o.ctx, o.cancel = context.WithCancel(ctx)
	return o, nil
}

func (o *OLT) listen() error {
	listen := o.cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	addr, err := net.ResolveUDPAddr("udp", listen)
	if err != nil {
		return fmt.Errorf("olt %s: resolve %q: %w", o.name, o.cfg.Listen, err)
	}
	conn, err := net.ListenUDP("udp", addr)
	if err != nil {
		return fmt.Errorf("olt %s: listen %q: %w", o.name, o.cfg.Listen, err)
	}
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	o.conn = conn
	o.addr = conn.LocalAddr().(*net.UDPAddr)
	return nil
}

// Name is the OLT's unique name in the fleet.
func (o *OLT) Name() string { return o.name }

// Addr is the bound UDP address.
func (o *OLT) Addr() *net.UDPAddr { return o.addr }

// Profile is the vendor profile name, empty for a recording.
func (o *OLT) Profile() string { return o.cfg.Profile }

// ONUs is the ground truth of the profile's ONU table right now (nil for a
// recording).
func (o *OLT) ONUs() []ONU {
	if o.prof == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]ONU, len(o.onus))
	for i := range o.onus {
		out[i] = o.onus[i].public(o.prof)
	}
	return out
}

// SetFaults replaces the injected faults; safe while running.
func (o *OLT) SetFaults(f Faults) { o.faults.set(f) }

// Faults returns the faults in force.
func (o *OLT) Faults() Faults { return o.faults.get() }

// Record is a snapshot of the traffic seen so far.
func (o *OLT) Record() Record { return o.rec.snapshot() }

// ResetRecord clears the traffic record.
func (o *OLT) ResetRecord() { o.rec.reset() }

// Uptime is the simulated time since the agent's last boot.
func (o *OLT) Uptime() time.Duration {
	return time.Duration(time.Now().UnixNano() - o.boot.Load())
}

func (o *OLT) uptimeTicks(now time.Time) uint32 {
	d := now.UnixNano() - o.boot.Load()
	if d < 0 {
		d = 0
	}
	return uint32(d / int64(10*time.Millisecond))
}

// serve runs the read loop until the socket is closed.
func (o *OLT) serve() {
	defer o.wg.Done()
	for {
		bp := o.pools.in.Get().(*[]byte)
		n, from, err := o.conn.ReadFromUDPAddrPort(*bp)
		if err != nil {
			o.pools.in.Put(bp)
			if errors.Is(err, net.ErrClosed) || o.ctx.Err() != nil {
				return
			}
			o.log.Warn().Err(err).Msg("read")
			continue
		}
		in := o.rec.begin(time.Now(), n)
		select {
		case o.sem <- struct{}{}:
		case <-o.ctx.Done():
			o.rec.end(time.Now(), 0, true)
			o.pools.in.Put(bp)
			return
		}
		o.wg.Add(1)
		go o.handle(bp, n, from, in)
	}
}

// handle answers one datagram.
func (o *OLT) handle(bp *[]byte, n int, from netip.AddrPort, inFlight int) {
	defer func() {
		o.pools.in.Put(bp)
		<-o.sem
		o.wg.Done()
	}()
	now := time.Now()
	v := o.faults.decide(now, inFlight)
	if v.drop {
		o.rec.end(time.Now(), 0, true)
		return
	}
	req := o.pools.req.Get().(*request)
	defer o.pools.req.Put(req)
	outp := o.pools.out.Get().(*[]byte)
	defer o.pools.out.Put(outp)
	resp, ok := answer((*bp)[:n], req, o.community, o.view, (*outp)[:0], o.maxBytes, o.uptimeTicks(now))
	if !ok || (v.maxVarbinds > 0 && len(req.oids) > v.maxVarbinds) {
		o.rec.end(time.Now(), 0, true)
		return
	}
	if v.echoNext {
		if echo := echoNext(req); echo != nil {
			resp = echo
		}
	}
	if v.delay > 0 {
		t := time.NewTimer(v.delay)
		select {
		case <-t.C:
		case <-o.ctx.Done():
			t.Stop()
			o.rec.end(time.Now(), 0, true)
			return
		}
	}
	if v.malformed {
		resp = corrupt(resp, v.corrupt)
	}
	// Leave the in-flight set before the write: the client may send its
	// next request as soon as the datagram is out.
	o.rec.end(time.Now(), len(resp), false)
	if _, err := o.conn.WriteToUDPAddrPort(resp, from); err != nil && o.ctx.Err() == nil {
		o.log.Debug().Err(err).Msg("write")
	}
}

// close stops the OLT and waits for its goroutines.
func (o *OLT) close() error {
	o.cancel()
	var err error
	if o.conn != nil {
		if e := o.conn.Close(); e != nil && !errors.Is(e, net.ErrClosed) {
			err = fmt.Errorf("close olt %s: %w", o.name, e)
		}
	}
	o.wg.Wait()
	return err
}

func (o *OLT) onuCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.onus)
}

// view returns the served MIB, building it from the ONU state if needed:
// the static part is encoded on the first request, the ONU tables are
// served from the ONU records as they are (no copy, nothing encoded).
func (o *OLT) view() *mibView {
	if m := o.mib.Load(); m != nil {
		return m
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if m := o.mib.Load(); m != nil {
		return m
	}
	st := o.static.Load()
	if st == nil {
		st = o.prof.buildStaticHealth(o.name, o.cfg.Shape, o.health)
		o.static.Store(st)
	}
	m := st.withTable(o.prof, o.onus)
	o.mib.Store(m)
	return m
}

// mutableONUs gives o.onus a private copy when a published view may be
// reading it, and drops that view; the caller holds o.mu and changes
// o.onus afterwards.
func (o *OLT) mutableONUs() {
	if o.mib.Swap(nil) != nil {
		o.onus = slices.Clone(o.onus)
	}
}
