package projector

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/streams"
)

// AuditVarbindsUnplaced: a complete walk placed none or few of its
// varbinds in ONU fields (wrong OIDs, index scheme or decoders for this
// OLT): a WARNING coordinator log, so a green execution with 0 ONUs does
// not go unnoticed.
const AuditVarbindsUnplaced = streams.AuditVarbindsUnplaced

// unplacedWarnRatio: a walk that could not place at least this share of
// its varbinds (or placed none of them) is warned about.
const unplacedWarnRatio = 0.1

// placement is what an execution's batches placed so far.
type placement struct {
	Placed, Unplaced int
	Reasons          map[string]int
}

// recordPlacement adds a batch's placed and unplaced varbinds to its
// execution's counts and returns the execution's totals.
func recordPlacement(ctx context.Context, tx pgx.Tx, b streams.VarbindBatch, d Decoded) (placement, error) {
	unplaced := 0
	for _, n := range d.Skipped {
		unplaced += n
	}
	placed := max(b.VarbindCount()-unplaced-d.Filtered, 0)
	reasons, err := json.Marshal(d.Skipped)
	if err != nil {
		return placement{}, fmt.Errorf("encode unplaced reasons: %w", err)
	}
	var p placement
	var total []byte
	err = tx.QueryRow(ctx, `INSERT INTO execution_placement AS e (execution_id, olt_id, placed_varbinds, unplaced_varbinds, unplaced_reasons)
		VALUES ($1, $2, $3, $4, $5::jsonb)
		ON CONFLICT (olt_id, execution_id) DO UPDATE SET placed_varbinds = e.placed_varbinds + EXCLUDED.placed_varbinds,
		unplaced_varbinds = e.unplaced_varbinds + EXCLUDED.unplaced_varbinds,
		unplaced_reasons = (SELECT COALESCE(jsonb_object_agg(k, v), '{}'::jsonb) FROM (
			SELECT k, SUM(v::int) AS v FROM (
				SELECT key AS k, value AS v FROM jsonb_each_text(e.unplaced_reasons)
				UNION ALL SELECT key, value FROM jsonb_each_text(EXCLUDED.unplaced_reasons)) u GROUP BY k) s)
		RETURNING placed_varbinds, unplaced_varbinds, unplaced_reasons`,
		b.ExecutionID, b.OLTID, placed, unplaced, string(reasons)).Scan(&p.Placed, &p.Unplaced, &total)
	if err != nil {
		return placement{}, fmt.Errorf("record placement of execution %s: %w", b.ExecutionID, err)
	}
	if err := json.Unmarshal(total, &p.Reasons); err != nil {
		return placement{}, fmt.Errorf("read placement of execution %s: %w", b.ExecutionID, err)
	}
	return p, nil
}

// unplacedWarning is the audit event of a complete walk that placed none
// or few of its varbinds; nil when it placed enough.
func unplacedWarning(b streams.VarbindBatch, p placement) *streams.AuditEvent {
	if !b.Last || p.Unplaced == 0 {
		return nil
	}
	total := p.Placed + p.Unplaced
	if p.Placed > 0 && float64(p.Unplaced) < unplacedWarnRatio*float64(total) {
		return nil
	}
	what := "few"
	if p.Placed == 0 {
		what = "none"
	}
	return &streams.AuditEvent{
		OLTID: b.OLTID, Kind: AuditVarbindsUnplaced, Level: streams.LevelWarning,
		Message: fmt.Sprintf("walk placed %s of its varbinds: %d of %d could not be placed in an ONU field %v (check the brand's OIDs, index scheme and decoders)",
			what, p.Unplaced, total, p.Reasons),
		Details: map[string]any{"execution_id": b.ExecutionID, "job_id": b.JobID, "brand_id": b.BrandID, "index_scheme": b.IndexScheme,
			"placed_varbinds": p.Placed, "unplaced_varbinds": p.Unplaced, "unplaced_reasons": p.Reasons},
	}
}

// auditRow is the outbox row of an audit event of the projector.
func auditRow(source string, seq uint64, at time.Time, ev streams.AuditEvent) (outboxRow, error) {
	id := streams.MsgID("projector-audit", ev.Kind, seq)
	payload, err := streams.EncodeWithID(id, source, at, ev)
	if err != nil {
		return outboxRow{}, fmt.Errorf("encode audit event: %w", err)
	}
	return outboxRow{MsgID: id, Subject: streams.SubjectAudit(AuditCategory), Payload: payload}, nil
}

// AuditCategory is the projector's audit subject token
// (facho.audit.projector).
const AuditCategory = "projector"

// readsONUTable says whether the batch walked the ONU table itself (a
// serial column, or any column read by a discovery job): its rows list
// every ONU the OLT has, so a complete walk of it tells which ONUs are
// gone, and every ONU it read was seen then (last_seen). Optical tables do
// not (FiberHome and V-SOL omit offline ONUs there).
func readsONUTable(b streams.VarbindBatch) bool {
	if discoveryWalk(b) {
		return true
	}
	for _, c := range b.Columns {
		if c.Field == streams.FieldSerial && c.Index == nil {
			return true
		}
	}
	return false
}

// markRemoved runs on the Last batch of a complete walk of the ONU table:
// every ONU of the OLT this attempt did not read is marked removed (when)
// and gets a "removed" change; a removed ONU seen again is present again.
//
// reads is what the attempt read (onu_walk_seen, this transaction's
// batches included); the difference is taken here (see clearUnreadRx).
func markRemoved(ctx context.Context, tx pgx.Tx, oltID string, reads walkReads, at time.Time) ([]onuChange, error) {
	gone, err := keysWhere(ctx, tx, oltID, "removed_at IS NULL", func(k ONUKey) bool { return !reads.seen[k] })
	if err != nil || len(gone) == 0 {
		return nil, err
	}
	pons, onus := keyArrays(gone)
	rows, err := tx.Query(ctx, `UPDATE onu_data o SET removed_at = $4
		FROM unnest($2::bigint[], $3::bigint[]) AS k(pon_index, onu_id)
		WHERE o.olt_id = $1 AND o.pon_index = k.pon_index AND o.onu_id = k.onu_id AND o.removed_at IS NULL
		RETURNING o.pon_index, o.onu_id, o.serial, o.description, o.status, o.rx_power_dbm, o.onu_index, o.port_name`, oltID, pons, onus, at)
	if err != nil {
		return nil, fmt.Errorf("mark removed onus of olt %s: %w", oltID, err)
	}
	defer rows.Close()
	var out []onuChange
	for rows.Next() {
		var c onuChange
		if err := rows.Scan(&c.Key.PonIndex, &c.Key.ONUID, &c.Current.Serial, &c.Current.Description, &c.Current.Status, &c.Current.RxPowerDBm,
			&c.Current.Index, &c.Current.PortName); err != nil {
			return nil, fmt.Errorf("mark removed onus of olt %s: %w", oltID, err)
		}
		c.Change = streams.ONURemoved
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mark removed onus of olt %s: %w", oltID, err)
	}
	return out, nil
}

// discoveryWalk: the batch is of a discovery job's walk whose columns are
// indexed by the ONU table's own scheme (an IF-MIB table without a serial
// column: generic-if-mib).
func discoveryWalk(b streams.VarbindBatch) bool {
	if b.JobKind != streams.KindDiscovery {
		return false
	}
	for _, c := range b.Columns {
		if c.Index == nil {
			return true
		}
	}
	return false
}
