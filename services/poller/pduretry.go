package poller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxPDUBackoff caps the wait before one PDU retry.
const maxPDUBackoff = 10 * time.Second

// pduRetries counts the PDU retries of one execution and holds what is
// left of its budget. A get's PDUs in flight share it: it locks.
type pduRetries struct {
	mu     sync.Mutex
	left   int
	used   int
	metric prometheus.Counter // nil: not exported
}

func newPDURetries(budget int, metric prometheus.Counter) *pduRetries {
	return &pduRetries{left: budget, metric: metric}
}

// take uses one retry of the budget; false when it is spent.
func (r *pduRetries) take() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left <= 0 {
		return false
	}
	r.left--
	r.used++
	if r.metric != nil {
		r.metric.Inc()
	}
	return true
}

// count is the number of PDU retries so far (0 for nil).
func (r *pduRetries) count() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.used
}

// exchange sends one request through req and, when it got no usable
// answer (lost, or garbled beyond gosnmp's own SNMPRetries), sends it
// again after a backoff: up to PDURetries more times per request and while
// the execution's budget lasts. what names the request in errors.
func (op snmpOp) exchange(ctx context.Context, what string, req func() (*v2cResponse, error)) (*v2cResponse, error) {
	wait := op.cfg.PDUBackoff
	for try := 0; ; try++ {
		pkt, err := req()
		if err == nil {
			return pkt, nil
		}
		if ctx.Err() != nil {
			// The socket error of a cancelled request says nothing.
			return nil, context.Cause(ctx)
		}
		if !retryablePDU(err) {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if try >= op.cfg.PDURetries {
			return nil, fmt.Errorf("%s: %w (no answer after %d pdu retries)", what, err, try)
		}
		if !op.retries.take() {
			return nil, fmt.Errorf("%s: %w (pdu retry budget of %d per execution spent)", what, err, op.cfg.PDURetryBudget)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
		wait = min(2*wait, maxPDUBackoff)
	}
}

// retryablePDU says whether a request error means the answer was lost or
// unreadable, so sending it again may work. Errors raised before anything
// was sent (the request itself cannot be encoded) would only repeat.
func retryablePDU(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	if _, ok := readCause(err); ok {
		return false // a bound reached (bounds.go)
	}
	msg := err.Error()
	for _, permanent := range []string{"marshal:", "unable to marshal", "oid count", "not supported", "recover:", "Conn is missing"} {
		if strings.Contains(msg, permanent) {
			return false
		}
	}
	return true
}

// oidCompare compares two dotted OIDs numerically, component by
// component; a prefix sorts first. A component that is not a number
// compares as text (it never is in a gosnmp answer).
func oidCompare(a, b string) int {
	a, b = strings.TrimPrefix(a, "."), strings.TrimPrefix(b, ".")
	// Fast path: only the component where they first differ decides.
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) && i == len(b) {
		return 0
	}
	j := i
	for j > 0 && a[j-1] != '.' {
		j--
	}
	x, _, _ := strings.Cut(a[j:], ".")
	y, _, _ := strings.Cut(b[j:], ".")
	if x != y {
		if c := compareComponent(x, y); c != 0 {
			return c
		}
		// Equal with leading zeros: compare the rest below.
	}
	return oidCompareSlow(a, b)
}

func oidCompareSlow(a, b string) int {
	// Component by component, without splitting (a walk compares every
	// varbind it receives).
	for {
		if a == "" || b == "" {
			switch {
			case a == "" && b == "":
				return 0
			case a == "":
				return -1
			}
			return 1
		}
		x, restA, _ := strings.Cut(a, ".")
		y, restB, _ := strings.Cut(b, ".")
		if c := compareComponent(x, y); c != 0 {
			return c
		}
		a, b = restA, restB
	}
}

// compareComponent compares two decimal numbers without parsing them
// (components may exceed 64 bits in a broken answer).
func compareComponent(x, y string) int {
	x, y = strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
	if len(x) != len(y) {
		if len(x) < len(y) {
			return -1
		}
		return 1
	}
	return strings.Compare(x, y)
}
