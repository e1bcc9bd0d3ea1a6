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
}

// run reads every OID of node and hands each varbind to emit, in order.
// It stops at the first error of emit, of the OLT, or of ctx (which the
// caller cancels on timeout, lease loss or shutdown).
func (op snmpOp) run(ctx context.Context, kind string, oids []streams.OIDSpec, emit func(streams.Varbind) error) error {
	g := &gosnmp.GoSNMP{
		Target:         op.target.Host,
		Port:           uint16(op.target.Port),
		Transport:      "udp",
		Community:      op.community,
		Version:        gosnmp.Version2c,
		Timeout:        op.cfg.SNMPTimeout,
		Retries:        op.cfg.SNMPRetries,
		MaxRepetitions: uint32(op.cfg.MaxRepetitions),
		MaxOids:        op.cfg.GetChunk,
		Context:        ctx,
	}
	if err := g.Connect(); err != nil {
		return fmt.Errorf("connect %s:%d: %w", op.target.Host, op.target.Port, err)
	}
	defer g.Conn.Close()
	// A request blocks in a socket read until its own timeout; closing the
	// socket when ctx ends makes lease loss and shutdown take effect now.
	stop := context.AfterFunc(ctx, func() { _ = g.Conn.Close() })
	defer stop()

	var err error
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

func (op snmpOp) bulkWalk(ctx context.Context, g *gosnmp.GoSNMP, oids []streams.OIDSpec, emit func(streams.Varbind) error) error {
	for _, spec := range oids {
		err := g.BulkWalk(spec.OID, func(pdu gosnmp.SnmpPDU) error {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			return emit(toVarbind(pdu))
		})
		if err != nil {
			return fmt.Errorf("bulkwalk %s: %w", spec.OID, err)
		}
	}
	return nil
}

func (op snmpOp) get(ctx context.Context, g *gosnmp.GoSNMP, oids []streams.OIDSpec, emit func(streams.Varbind) error) error {
	for start := 0; start < len(oids); start += op.cfg.GetChunk {
		end := min(start+op.cfg.GetChunk, len(oids))
		names := make([]string, 0, end-start)
		for _, spec := range oids[start:end] {
			names = append(names, spec.OID)
		}
		pkt, err := g.Get(names)
		if err != nil {
			return fmt.Errorf("get %s: %w", strings.Join(names, ","), err)
		}
		if pkt.Error != gosnmp.NoError {
			return fmt.Errorf("get %s: agent error %s at index %d", strings.Join(names, ","), pkt.Error, pkt.ErrorIndex)
		}
		for _, pdu := range pkt.Variables {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			if err := emit(toVarbind(pdu)); err != nil {
				return err
			}
		}
	}
	return nil
}

// isTimeout says whether an SNMP error means the OLT did not answer.
func isTimeout(err error) bool {
	return errors.Is(err, gosnmp.ErrMaxRetriesExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(err.Error(), "timeout")
}
