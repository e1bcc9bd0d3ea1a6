package poller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// A get job reads its column OIDs at the row index of every ONU the OLT is
// known to have (getonus.go): (ONU x column) varbinds, ONU by ONU, in PDUs
// of up to K varbinds with up to C PDUs in flight on the OLT.
//
//   - K starts at the size remembered from the OLT's last get (key
//     get.<olt_id> of streams.BucketOLTSNMP, shared by every replica), else
//     the OLT's or brand's snmp.get_varbinds, else Config.GetChunk.
//   - C is the OLT's or brand's snmp.get_concurrency, else
//     Config.GetConcurrency: some OLTs cannot take concurrency.
//   - Progressive subdivision: a PDU that times out (after gosnmp's own
//     SNMPRetries), comes back unreadable, tooBig or with an agent error is
//     split in halves and each half is sent, down to single OIDs. A single
//     OID is sent with the PDU retries of a walk (exchange). The PDUs that
//     follow start at half the size that failed, and after growAfter
//     answered PDUs in a row the size doubles again, never to a size that
//     failed in this run nor above the configured one.
//   - An OID that still fails alone is a per-ONU failure: listed in the
//     execution's result (ExecutionSucceeded.ONUFailures) and in a
//     coordinator log (audit ONU_READ_FAILED), never dropped silently. Only
//     an OLT that answered nothing at all fails the execution.

// growAfter is how many PDUs in a row must be answered before the PDU
// size doubles again.
const growAfter = 32

// getResult is what a get read and what it could not.
type getResult struct {
	onus           int
	varbinds       int // OIDs asked: ONUs x columns
	failedVarbinds int
	failures       []streams.ONUFailure // every failed ONU, in ONU order
	splits         int                  // PDUs split in halves
	startSize      int
	finalSize      int
	concurrency    int
}

// getItem is one OID of a get: column col of ONU onu.
type getItem struct {
	onu int // index in getRun.onus
	col int // position in the node's OIDs
	// key is the row index under the column: the ONU's index, then the
	// column's index suffix, if any.
	key string
	// ber is the OID's BER content, built once from the column's and
	// the index's encoded arcs; nil if either did not encode (the dotted
	// OID is then sent and parsed as a walk's).
	ber []byte
}

// getColumn is one column of a get.
type getColumn struct {
	oid string // dotted, without leading or trailing dot
	// direct: a varbind of this column can be buffered by (column, row
	// index) without matching its OID against the node's columns, since
	// no other column's OID starts with this one's (the row buffer would
	// attribute it to the same column).
	direct bool
}

type getRun struct {
	op    snmpOp
	onus  []onuInstance
	cols  []getColumn
	items []getItem
	// emit takes a varbind whose OID names its column and row; emitRow
	// one known to be column col, row index key. Called under emitMu.
	emit     func(streams.Varbind) error
	emitRow  func(col int, key, typ, value string) error
	emitMu   sync.Mutex
	mu       sync.Mutex // guards what follows
	next     int
	size     int
	maxSize  int
	minFail  int // smallest size that failed in this run (0: none)
	streak   int
	answered bool
	failed   map[int]*streams.ONUFailure
	nFailed  int
	splits   int
}

// getONUs runs a get job: the ONU set, the batches, the remembered size.
func (ex *execution) getONUs(ctx context.Context, op snmpOp) error {
	p, node := ex.p, ex.node
	onus, err := p.discoveredONUs(ctx, node)
	if err != nil {
		return err
	}
	if len(onus) == 0 && ex.awaitONUs > 0 {
		onus, err = ex.waitONUs(ctx)
		if err != nil {
			return err
		}
	}
	res := &getResult{onus: len(onus)}
	ex.get = res
	if len(onus) == 0 {
		// Nothing to read: verdict.go makes it a no_onus_known failure.
		return nil
	}
	if b := ex.bounds; b != nil && len(onus) > b.lim.ONUsPerOLT {
		return boundFailure("onus_per_olt", int64(b.lim.ONUsPerOLT), b.from, "the OLT has %d known ONUs to read", len(onus))
	}
	configured := p.cfg.GetChunk
	if node.SNMP.GetVarbinds > 0 {
		configured = node.SNMP.GetVarbinds
	}
	start := configured
	kv, kvErr := p.oltKV(ctx)
	if kvErr == nil {
		if e, err := kv.Get(ctx, streams.KeyGetSizes(node.OLTID)); err == nil {
			var gs streams.GetSizes
			if json.Unmarshal(e.Value(), &gs) == nil && gs.Varbinds >= 1 {
				start = min(gs.Varbinds, configured)
			}
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			ex.log.Warn().Err(err).Msg("read remembered get size")
		}
	}
	conc := p.cfg.GetConcurrency
	if node.SNMP.GetConcurrency > 0 {
		conc = node.SNMP.GetConcurrency
	}
	run := newGetRun(op, onus, node.OIDs, start, configured, func(vb streams.Varbind) error { return ex.add(ctx, vb) })
	run.emitRow = func(col int, key, typ, value string) error { return ex.addRow(ctx, col, key, typ, value) }
	res.varbinds, res.startSize, res.concurrency = len(run.items), start, conc
	err = run.run(ctx, conc)
	res.failedVarbinds, res.splits, res.finalSize = run.nFailed, run.splits, run.size
	res.failures = run.failures()
	for i := range res.failures {
		res.failures[i].Error = ex.sanitize(res.failures[i].Error)
	}
	if err == nil && run.nFailed == len(run.items) {
		// Not one OID read: a failed execution (retried, counted toward
		// disabling the OLT), not a success with every ONU failed.
		return fmt.Errorf("get read none of %d OIDs of %d ONUs (first: %s: %s)", len(run.items), len(onus),
			res.failures[0].OIDs[0], res.failures[0].Error)
	}
	ex.log.Info().Int("onus", len(onus)).Int("oids", len(run.items)).Int("failed_varbinds", run.nFailed).Int("splits", run.splits).
		Int("pdu_size_start", start).Int("pdu_size_end", run.size).Int("concurrency", conc).Err(err).Msg("get read")
	if err == nil && run.answered && kvErr == nil {
		b, _ := json.Marshal(streams.GetSizes{Varbinds: run.size, UpdatedAt: time.Now().UTC()})
		if _, perr := kv.Put(ctx, streams.KeyGetSizes(node.OLTID), b); perr != nil {
			ex.log.Warn().Err(perr).Msg("remember get size")
		}
	}
	return err
}

func newGetRun(op snmpOp, onus []onuInstance, cols []streams.OIDSpec, start, maxSize int, emit func(streams.Varbind) error) *getRun {
	r := &getRun{op: op, onus: onus, emit: emit, size: max(1, start), maxSize: max(1, maxSize), failed: map[int]*streams.ONUFailure{}}
	r.cols = make([]getColumn, len(cols))
	colBER := make([][]byte, len(cols))
	suffixBER := make([][]byte, len(cols))
	for i, c := range cols {
		oid := strings.Trim(c.OID, ".")
		r.cols[i] = getColumn{oid: oid, direct: oid != ""}
		for j, d := range cols {
			if j != i && oid != "" && strings.HasPrefix(strings.Trim(d.OID, ".")+".", oid+".") {
				r.cols[i].direct = false
			}
		}
		if b, err := appendOID(nil, oid); err == nil {
			colBER[i] = b
			if c.IndexSuffix != "" {
				if suffixBER[i], err = appendArcs(nil, c.IndexSuffix); err != nil {
					colBER[i] = nil
				}
			}
		}
	}
	// The BER of every OID, in one array.
	var size int
	indexBER := make([][]byte, len(onus))
	for i, o := range onus {
		if b, err := appendArcs(nil, o.index); err == nil {
			indexBER[i] = b
		}
	}
	for i := range onus {
		for c := range cols {
			size += len(colBER[c]) + len(indexBER[i]) + len(suffixBER[c])
		}
	}
	arena := make([]byte, 0, size)
	r.items = make([]getItem, 0, len(onus)*len(cols))
	for i, o := range onus {
		for c, spec := range cols {
			it := getItem{onu: i, col: c, key: o.index}
			if spec.IndexSuffix != "" {
				it.key += "." + spec.IndexSuffix // a table indexed below the ONU
			}
			if colBER[c] != nil && indexBER[i] != nil {
				from := len(arena)
				arena = append(arena, colBER[c]...)
				arena = append(arena, indexBER[i]...)
				arena = append(arena, suffixBER[c]...)
				if len(arena)-from <= 127 {
					it.ber = arena[from:len(arena):len(arena)]
				}
			}
			r.items = append(r.items, it)
		}
	}
	return r
}

// oid is the dotted OID of it, with a leading dot.
func (r *getRun) oid(it getItem) string { return "." + r.cols[it.col].oid + "." + it.key }

// appendArcs appends the BER of the arcs of a dotted row index (after a
// column's first two arcs: each arc on its own). An index appendOID would
// not take after a column (an empty arc, a leading or trailing dot, an arc
// above 32 bits) is an error: its OID is then sent dotted, as before.
func appendArcs(b []byte, index string) ([]byte, error) {
	for s, more := index, true; more; {
		part := s
		if i := strings.IndexByte(s, '.'); i >= 0 {
			part, s = s[:i], s[i+1:]
		} else {
			more = false
		}
		v, err := strconv.ParseUint(part, 10, 32)
		if err != nil {
			return b, fmt.Errorf("index %q: %w", index, err)
		}
		b = appendBase128(b, v)
	}
	return b, nil
}

// run sends the PDUs with conc clients, each its own socket (a gosnmp
// client is never shared between goroutines).
func (r *getRun) run(ctx context.Context, conc int) error {
	conc = max(1, min(conc, (len(r.items)+r.size-1)/r.size))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	errs := make([]error, conc)
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.worker(ctx); err != nil {
				errs[w] = err
				cancel(err)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
		// The first error (or the caller's cause) says why; the others
		// are its consequences.
		for _, e := range errs {
			if e != nil && !errors.Is(e, context.Canceled) {
				return e
			}
		}
		return err
	}
	return errors.Join(errs...)
}

func (r *getRun) worker(ctx context.Context) error {
	g, err := r.op.dial(ctx)
	if err != nil {
		return err
	}
	defer g.Close()
	stop := context.AfterFunc(ctx, func() { _ = g.Close() })
	defer stop()
	for {
		chunk := r.take()
		if chunk == nil {
			return nil
		}
		if err := r.read(ctx, g, chunk); err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return err
		}
	}
}

// take returns the next PDU's items at the current size, nil at the end.
func (r *getRun) take() []getItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next >= len(r.items) {
		return nil
	}
	end := min(r.next+r.size, len(r.items))
	chunk := r.items[r.next:end]
	r.next = end
	return chunk
}

// read sends one PDU and, when it is not answered usefully, its halves.
func (r *getRun) read(ctx context.Context, g *v2cClient, chunk []getItem) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	// The encoded OIDs, unless one did not encode: then the dotted ones.
	var names []string
	bers := make([][]byte, len(chunk))
	for i, it := range chunk {
		if it.ber == nil {
			bers = nil
			break
		}
		bers[i] = it.ber
	}
	if bers == nil {
		names = make([]string, len(chunk))
		for i, it := range chunk {
			names[i] = r.oid(it)
		}
	}
	get := func() (*v2cResponse, error) {
		if bers != nil {
			return g.GetBER(bers)
		}
		return g.Get(names)
	}
	var pkt *v2cResponse
	var err error
	if len(chunk) == 1 {
		// Alone, an OID gets the PDU retries of a walk: loss, not size.
		pkt, err = r.op.exchange(ctx, "get "+strings.TrimPrefix(r.oid(chunk[0]), "."), get)
	} else {
		pkt, err = get()
	}
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if !retryablePDU(err) {
			return fmt.Errorf("get %d oids: %w", len(chunk), err)
		}
		why := "no answer"
		if !isTimeout(err) {
			why = "unreadable answer: " + err.Error()
		}
		return r.failed1(ctx, g, chunk, why, true, err)
	}
	r.mu.Lock()
	r.answered = true
	r.mu.Unlock()
	switch {
	case pkt.Error == gosnmp.TooBig:
		return r.failed1(ctx, g, chunk, "tooBig", true, nil)
	case pkt.Error != gosnmp.NoError:
		// Split to isolate the OID the agent refuses; the size is not
		// to blame.
		return r.failed1(ctx, g, chunk, fmt.Sprintf("agent error %s", pkt.Error), false, nil)
	case len(pkt.Variables) != len(chunk):
		return r.failed1(ctx, g, chunk, fmt.Sprintf("%d varbinds answered for %d asked", len(pkt.Variables), len(chunk)), false, nil)
	}
	if !pkt.Matched {
		for i, vb := range pkt.Variables {
			if want := r.oid(chunk[i]); vb.OID != want[1:] {
				return r.failed1(ctx, g, chunk, fmt.Sprintf("answer names %s for %s", vb.OID, want), false, nil)
			}
		}
	}
	r.emitMu.Lock()
	for i, vb := range pkt.Variables {
		var err error
		switch it := chunk[i]; {
		case pkt.Matched && r.cols[it.col].direct && r.emitRow != nil:
			err = r.emitRow(it.col, it.key, vb.Type, vb.Value)
		case pkt.Matched:
			vb.OID = r.oid(it)[1:]
			err = r.emit(vb)
		default:
			err = r.emit(vb)
		}
		if err != nil {
			r.emitMu.Unlock()
			return err
		}
	}
	r.emitMu.Unlock()
	r.answeredPDU(len(chunk))
	return nil
}

// failed1 handles a PDU not answered usefully: its halves are sent, or,
// for a single OID, it is recorded failed. sizeFault says the PDU's size
// may be the cause (timeout, tooBig): the PDUs that follow get smaller.
// cause is the request error, when there was one.
func (r *getRun) failed1(ctx context.Context, g *v2cClient, chunk []getItem, why string, sizeFault bool, cause error) error {
	if len(chunk) > 1 {
		r.mu.Lock()
		r.splits++
		r.streak = 0
		if sizeFault {
			if r.minFail == 0 || len(chunk) < r.minFail {
				r.minFail = len(chunk)
			}
			r.size = max(1, min(r.size, len(chunk)/2))
		}
		r.mu.Unlock()
		half := len(chunk) / 2
		if err := r.read(ctx, g, chunk[:half]); err != nil {
			return err
		}
		return r.read(ctx, g, chunk[half:])
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.answered && cause != nil {
		// Not one PDU answered, down to a single OID with its retries:
		// the OLT is not answering, which fails the execution.
		return fmt.Errorf("get %s: %w", strings.TrimPrefix(r.oid(chunk[0]), "."), cause)
	}
	r.nFailed++
	it := chunk[0]
	f := r.failed[it.onu]
	if f == nil {
		o := r.onus[it.onu]
		f = &streams.ONUFailure{Instance: o.index, PonIndex: o.pon, ONUID: o.onu}
		r.failed[it.onu] = f
	}
	f.OIDs = append(f.OIDs, strings.TrimPrefix(r.oid(it), "."))
	f.Error = why
	return nil
}

// answeredPDU counts an answered PDU of n OIDs and grows the size after
// growAfter in a row.
func (r *getRun) answeredPDU(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n < r.size {
		return // a half of a split PDU, or the tail
	}
	r.streak++
	if r.streak < growAfter {
		return
	}
	r.streak = 0
	next := min(2*r.size, r.maxSize)
	if r.minFail > 0 && next >= r.minFail {
		next = r.minFail - 1
	}
	r.size = max(r.size, next)
}

// failures lists the failed ONUs in ONU order, their OIDs sorted.
func (r *getRun) failures() []streams.ONUFailure {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := make([]int, 0, len(r.failed))
	for i := range r.failed {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]streams.ONUFailure, 0, len(idx))
	for _, i := range idx {
		f := *r.failed[i]
		sort.Strings(f.OIDs)
		out = append(out, f)
	}
	return out
}

// chainONUPoll is how often waitONUs folds the discovered events again.
const chainONUPoll = 200 * time.Millisecond

// waitONUs folds the OLT's discovered events again until ONUs are known
// and their count held still over one more poll (the projector publishes
// a discovery's ONUs one event each, a moment after its batches: a get
// that started at the first would read a few), ex.awaitONUs has passed or
// ctx ends (a chained get right after its composite's discovery).
func (ex *execution) waitONUs(ctx context.Context) ([]onuInstance, error) {
	deadline := time.Now().Add(ex.awaitONUs)
	t := time.NewTicker(chainONUPoll)
	defer t.Stop()
	var last []onuInstance
	for {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-t.C:
		}
		onus, err := ex.p.discoveredONUs(ctx, ex.node)
		if err != nil {
			return nil, err
		}
		settled := len(onus) > 0 && len(onus) == len(last)
		if settled || time.Now().After(deadline) {
			if len(onus) > 0 {
				ex.log.Info().Int("onus", len(onus)).Msg("get: the discovery before it in the chain was folded")
			}
			return onus, nil
		}
		last = onus
	}
}
