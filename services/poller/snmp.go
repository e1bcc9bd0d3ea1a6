package poller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gosnmp/gosnmp"

	"github.com/facho-olt/facho/streams"
)

// snmpOp is one SNMP operation against one OLT with its own client: a
// gosnmp.GoSNMP is never shared between goroutines.
type snmpOp struct {
	cfg       Config
	target    streams.Target
	community string
	// retries counts and bounds the PDU retries of the execution (see
	// exchange); nil: a budget of its own for this run.
	retries *pduRetries
	// getNext walks with GETNEXT instead of GETBULK; maxReps is the
	// GETBULK max-repetitions (0: Config.MaxRepetitions). See tuned.
	getNext bool
	maxReps int
	// budget counts the bytes of the answers received against the
	// execution's bytes_per_execution bound (bounds.go); nil: no bound.
	budget *byteBudget
}

// run reads every OID of node and hands each varbind to emit, in order.
// It stops at the first error of emit, of the OLT, or of ctx (which the
// caller cancels on timeout, lease loss or shutdown).
func (op snmpOp) run(ctx context.Context, kind string, oids []streams.OIDSpec, emit func(streams.Varbind) error) error {
	if op.retries == nil {
		op.retries = newPDURetries(op.cfg.PDURetryBudget, nil)
	}
	g, err := op.dial(ctx)
	if err != nil {
		return err
	}
	defer g.Close()
	// A request blocks in a socket read until its own timeout; closing the
	// socket when ctx ends makes lease loss and shutdown take effect now.
	stop := context.AfterFunc(ctx, func() { _ = g.Close() })
	defer stop()

	switch kind {
	case streams.KindGet:
		err = op.get(ctx, g, oids, emit)
	default: // discovery, walk, bulkwalk: a table or subtree per OID
		err = op.bulkWalk(ctx, g, oids, emit)
	}
	if ctx.Err() != nil {
		// The socket error of a cancelled operation says nothing useful.
		return context.Cause(ctx)
	}
	return err
}

// dial connects the operation's client to the OLT.
func (op snmpOp) dial(ctx context.Context) (*v2cClient, error) {
	g, err := dialV2C(ctx, op.target.Host, op.target.Port, op.community, op.cfg.SNMPTimeout, op.cfg.SNMPRetries)
	if err != nil {
		return nil, fmt.Errorf("connect %s:%d: %w", op.target.Host, op.target.Port, err)
	}
	g.budget = op.budget
	return g, nil
}

func (op snmpOp) bulkWalk(ctx context.Context, g *v2cClient, oids []streams.OIDSpec, emit func(streams.Varbind) error) error {
	for _, spec := range oids {
		if err := op.walk(ctx, g, spec.OID, emit); err != nil {
			return fmt.Errorf("walk %s: %w", spec.OID, err)
		}
	}
	return nil
}

// walk reads the subtree under root with GETBULKs, as gosnmp's BulkWalk
// does (or GETNEXTs when op.getNext, as gosnmp's Walk), but each request
// goes through exchange: a lost one is sent again
// from the last OID received, so a lossy OLT completes the walk instead
// of starting over. Unlike BulkWalk it fails on an agent error instead of
// ending the walk early (a short walk would pass for a complete table),
// and halves max-repetitions on tooBig.
func (op snmpOp) walk(ctx context.Context, g *v2cClient, root string, emit func(streams.Varbind) error) error {
	root = "." + strings.TrimPrefix(root, ".")
	if root == "." {
		root = ".1.3.6.1" // as gosnmp: the internet subtree
	}
	cur := root
	reps := op.cfg.MaxRepetitions
	if op.maxReps > 0 {
		reps = op.maxReps
	}
	verb := "getbulk"
	if op.getNext {
		verb = "getnext"
	}
	answered := false        // a GETBULK of this walk returned varbinds
	prefix := root[1:] + "." // the answers' OIDs have no leading dot
	for {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		from := cur
		pkt, err := op.exchange(ctx, verb+" "+strings.TrimPrefix(from, "."), func() (*v2cResponse, error) {
			if op.getNext {
				return g.GetNext([]string{from})
			}
			return g.GetBulk([]string{from}, 0, uint32(reps))
		})
		if err != nil {
			return err
		}
		switch pkt.Error {
		case gosnmp.NoError:
		case gosnmp.TooBig:
			if reps > 1 && !op.getNext {
				reps = max(1, reps/2)
				continue
			}
			return fmt.Errorf("%s %s: agent says tooBig for a single repetition", verb, strings.TrimPrefix(from, "."))
		case gosnmp.NoSuchName:
			// An SNMPv1 habit of some agents at the end of the MIB.
			return nil
		default:
			return fmt.Errorf("%s %s: agent error %s at index %d", verb, strings.TrimPrefix(from, "."), pkt.Error, pkt.ErrorIndex)
		}
		if len(pkt.Variables) == 0 {
			return nil
		}
		for i, vb := range pkt.Variables {
			if endOfWalk(vb.Type) {
				return nil
			}
			if oidCompare(cur, vb.OID) >= 0 {
				// Checked before the subtree: an agent answering the
				// OID asked (or an earlier one) is not "past the
				// subtree", it cannot be walked (verdict.go).
				return readFailure(CauseOIDNotIncreasing, "%s %s: the agent answered %s, not after the OID asked: OIDs not increasing (a broken agent; the walk cannot go on)",
					verb, shortIndex(strings.TrimPrefix(from, ".")), shortIndex(vb.OID))
			}
			if len(vb.OID) <= len(prefix) || vb.OID[:len(prefix)] != prefix {
				if !answered && i == 0 {
					// Nothing under root: root may be a leaf (a scalar
					// instance), which a GET reads, as gosnmp does.
					return op.getLeaf(ctx, g, root, emit)
				}
				return nil // past the subtree: done
			}
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			if err := emit(vb); err != nil {
				return err
			}
			cur = vb.OID
		}
		answered = true
	}
}

// getLeaf reads root itself when a walk found nothing under it.
func (op snmpOp) getLeaf(ctx context.Context, g *v2cClient, root string, emit func(streams.Varbind) error) error {
	pkt, err := op.exchange(ctx, "get "+strings.TrimPrefix(root, "."), func() (*v2cResponse, error) {
		return g.Get([]string{root})
	})
	if err != nil {
		return err
	}
	if pkt.Error != gosnmp.NoError {
		return nil // as gosnmp: no such leaf, nothing to read
	}
	for _, vb := range pkt.Variables {
		if vb.OID == root[1:] && !endOfWalk(vb.Type) {
			return emit(vb)
		}
	}
	return nil
}

func (op snmpOp) get(ctx context.Context, g *v2cClient, oids []streams.OIDSpec, emit func(streams.Varbind) error) error {
	for start := 0; start < len(oids); start += op.cfg.GetChunk {
		end := min(start+op.cfg.GetChunk, len(oids))
		names := make([]string, 0, end-start)
		for _, spec := range oids[start:end] {
			names = append(names, spec.OID)
		}
		what := "get " + strings.Join(names, ",")
		pkt, err := op.exchange(ctx, what, func() (*v2cResponse, error) { return g.Get(names) })
		if err != nil {
			return err
		}
		if pkt.Error != gosnmp.NoError {
			return fmt.Errorf("%s: agent error %s at index %d", what, pkt.Error, pkt.ErrorIndex)
		}
		for _, vb := range pkt.Variables {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			if err := emit(vb); err != nil {
				return err
			}
		}
	}
	return nil
}

// endOfWalk says whether a varbind type is an exception that ends a walk
// (or means no such leaf).
func endOfWalk(t string) bool {
	return t == streams.VTEndOfMibView || t == streams.VTNoSuchObject || t == streams.VTNoSuchInstance
}

// isTimeout says whether an SNMP error means the OLT did not answer.
func isTimeout(err error) bool {
	return errors.Is(err, gosnmp.ErrMaxRetriesExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(err.Error(), "timeout")
}
