package poller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/streams"
)

// healthPart is the last part of an olt.health event's Nats-Msg-Id
// (<execution_id>:<attempt>:health), so a retried publish is stored once.
const healthPart = "health"

// health runs a job of kind health under the OLT's lease: it walks each
// distinct OID of the node once (tables may share an IF-MIB column), decodes
// the tables (profiles.DecodeHealth) and publishes one streams.OLTHealth
// on facho.olt.<olt_id>.health. A walk that reads no value at all is a
// failure (empty_read): the OLT has none of the profile's health tables.
func (ex *execution) health(ctx context.Context, op snmpOp) error {
	node := ex.node
	var uniq []streams.OIDSpec
	seen := map[string]bool{}
	for _, o := range node.OIDs {
		oid := strings.Trim(o.OID, ".")
		if !seen[oid] {
			seen[oid] = true
			uniq = append(uniq, o)
		}
	}
	// Every input from an OLT is bounded: a table past this is cut, not
	// held whole.
	limit := len(uniq)*16*streams.MaxHealthRows + 64
	var vbs []streams.Varbind
	err := op.run(ctx, streams.KindWalk, uniq, func(vb streams.Varbind) error {
		if len(vbs) >= limit {
			return readFailure(CauseSNMP, "health of olt %s: more than %d varbinds under %d OIDs: not an OLT's health tables", node.OLTID, limit, len(uniq))
		}
		vbs = append(vbs, vb)
		ex.varbinds++
		if isValue(vb.Type) {
			ex.values++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if ex.values == 0 {
		return readFailure(CauseEmptyRead, "health %s read no value from olt %s (%d OIDs walked to their end): does the profile's health section fit this OLT?", node.JobID, node.OLTID, len(uniq))
	}
	h := profiles.DecodeHealth(node.OIDs, vbs)
	h.OLTID, h.ExecutionID, h.JobID, h.ObservedAt = node.OLTID, node.ExecutionID, node.JobID, time.Now().UTC()
	if err := h.Validate(); err != nil {
		return fmt.Errorf("health of olt %s: %w", node.OLTID, err)
	}
	if err := ex.lease.Err(); err != nil {
		return err // a stale holder publishes nothing
	}
	if err := ex.publish(ctx, streams.SubjectOLTHealth(node.OLTID), healthPart, h); err != nil {
		return fmt.Errorf("%w: %w", errPublish, err)
	}
	ex.p.metrics.health.Inc()
	ex.log.Debug().Int("pons", len(h.PONs)).Int("fans", len(h.Fans)).Int("psus", len(h.PSUs)).Int("uplinks", len(h.Uplinks)).
		Int("skipped", h.Skipped).Msg("health reading published")
	return nil
}
