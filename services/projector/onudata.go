package projector

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// decodeVarbinds decodes a varbind batch with its own columns and returns
// the onu_data upsert, which also writes the ONU-change events it causes to
// the outbox, and their publication after commit.
func (p *projector) decodeVarbinds(m jsrouter.Msg) (projection.Change, error) {
	_, b, err := streams.Decode[streams.VarbindBatch](m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	d, err := DecodeBatch(b)
	if err != nil {
		return projection.Change{}, err
	}
	collected := b.CollectedAt
	if collected.IsZero() {
		return projection.Change{}, fmt.Errorf("%w: varbind batch without collected_at", streams.ErrMalformed)
	}
	seenBy := rxReader(b)
	apply := func(ctx context.Context, tx pgx.Tx) error {
		n, changes, err := upsertONUs(ctx, tx, b.OLTID, b.ExecutionID, seenBy, collected.UTC(), d)
		if err != nil {
			return err
		}
		if b.Last && readsRx(b) {
			cleared, err := clearUnreadRx(ctx, tx, b.OLTID, seenBy)
			if err != nil {
				return err
			}
			changes = withCleared(changes, cleared)
		}
		rows, err := changeEvents(p.cfg.Source, m.Seq, b, changes)
		if err != nil {
			return err
		}
		if err := insertOutbox(ctx, tx, rows); err != nil {
			return err
		}
		// Counted inside the transaction: a rollback after this point is
		// rare (commit failure) and only over-counts.
		p.metrics.onuRows.Add(float64(n))
		for reason, c := range d.Skipped {
			p.metrics.varbindsSkipped.WithLabelValues(reason).Add(float64(c))
		}
		for _, c := range changes {
			p.metrics.onuEvents.WithLabelValues(c.Change).Inc()
		}
		return nil
	}
	// The events are committed in the outbox: a failed publish is retried
	// by the outbox loop, not by redelivering the batch.
	return projection.Change{Apply: apply, Committed: p.outbox.flushLogged}, nil
}

// onuChange is one ONU whose state a batch changed.
type onuChange struct {
	Key      ONUKey
	Change   string
	Previous *streams.ONUState
	Current  streams.ONUState
}

// upsertONUs merges the batch into onu_data in two statements (read the
// current rows, then one INSERT ... SELECT FROM unnest ... ON CONFLICT), and
// returns how many rows it wrote and which ONUs changed.
// seenBy tags the ONUs whose Rx power the batch read (see rxReader).
func upsertONUs(ctx context.Context, tx pgx.Tx, oltID, executionID, seenBy string, collected time.Time, d Decoded) (int, []onuChange, error) {
	keys := d.Keys()
	if len(keys) == 0 {
		return 0, nil, nil
	}
	pons := make([]int64, len(keys))
	onus := make([]int64, len(keys))
	for i, k := range keys {
		pons[i], onus[i] = k.PonIndex, k.ONUID
	}
	prev := make(map[ONUKey]streams.ONUState, len(keys))
	rows, err := tx.Query(ctx, `SELECT o.pon_index, o.onu_id, o.serial, o.description, o.status, o.rx_power_dbm
		FROM onu_data o JOIN unnest($2::bigint[], $3::bigint[]) AS k(pon_index, onu_id)
		ON o.pon_index = k.pon_index AND o.onu_id = k.onu_id
		WHERE o.olt_id = $1`, oltID, pons, onus)
	if err != nil {
		return 0, nil, fmt.Errorf("read onu_data of olt %s: %w", oltID, err)
	}
	for rows.Next() {
		var k ONUKey
		var s streams.ONUState
		if err := rows.Scan(&k.PonIndex, &k.ONUID, &s.Serial, &s.Description, &s.Status, &s.RxPowerDBm); err != nil {
			rows.Close()
			return 0, nil, fmt.Errorf("scan onu_data of olt %s: %w", oltID, err)
		}
		prev[k] = s
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("read onu_data of olt %s: %w", oltID, err)
	}
	// An ONU the batch only knows to have no optical row is not created.
	kept := keys[:0]
	for _, k := range keys {
		if _, existed := prev[k]; existed || !d.ONUs[k].onlyRxGone() {
			kept = append(kept, k)
		}
	}
	keys = kept
	if len(keys) == 0 {
		return 0, nil, nil
	}
	pons, onus = pons[:0], onus[:0]
	for _, k := range keys {
		pons, onus = append(pons, k.PonIndex), append(onus, k.ONUID)
	}

	serials := make([]string, len(keys))
	descs := make([]string, len(keys))
	statuses := make([]string, len(keys))
	rx := make([]*float64, len(keys))
	rxRead := make([]bool, len(keys))
	var changes []onuChange
	for i, k := range keys {
		old, existed := prev[k]
		cur := merge(old, existed, d.ONUs[k])
		rxRead[i] = d.ONUs[k].RxPowerSet
		serials[i], descs[i], statuses[i], rx[i] = cur.Serial, cur.Description, cur.Status, cur.RxPowerDBm
		switch {
		case !existed:
			changes = append(changes, onuChange{Key: k, Change: streams.ONUDiscovered, Current: cur})
		case old.Status != cur.Status:
			o := old
			changes = append(changes, onuChange{Key: k, Change: streams.ONUStatusChanged, Previous: &o, Current: cur})
		case !sameState(old, cur):
			o := old
			changes = append(changes, onuChange{Key: k, Change: streams.ONUUpdated, Previous: &o, Current: cur})
		}
	}
	// rx_seen_by moves only for the ONUs whose Rx power this batch read.
	tag, err := tx.Exec(ctx, `INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, description, status, rx_power_dbm, first_seen, last_seen, last_execution_id, rx_seen_by)
		SELECT $1, u.pon_index, u.onu_id, u.serial, u.description, u.status, u.rx, $8, $8, $9, CASE WHEN u.rx_read THEN $11 END
		FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::float8[], $10::bool[]) AS u(pon_index, onu_id, serial, description, status, rx, rx_read)
		ON CONFLICT (olt_id, pon_index, onu_id) DO UPDATE SET serial = EXCLUDED.serial, description = EXCLUDED.description,
		status = EXCLUDED.status, rx_power_dbm = EXCLUDED.rx_power_dbm, last_seen = EXCLUDED.last_seen,
		last_execution_id = EXCLUDED.last_execution_id, rx_seen_by = COALESCE(EXCLUDED.rx_seen_by, onu_data.rx_seen_by)`,
		oltID, pons, onus, serials, descs, statuses, rx, collected, executionID, rxRead, seenBy)
	if err != nil {
		return 0, nil, fmt.Errorf("upsert %d onus of olt %s: %w", len(keys), oltID, err)
	}
	return int(tag.RowsAffected()), changes, nil
}

// merge overlays the fields a batch read on the stored state; a new ONU
// starts from the table's defaults.
func merge(old streams.ONUState, existed bool, f *ONUFields) streams.ONUState {
	cur := old
	if !existed {
		cur = streams.ONUState{Status: "UNKNOWN"}
	}
	if f.Serial != nil {
		cur.Serial = *f.Serial
	}
	if f.Description != nil {
		cur.Description = *f.Description
	}
	if f.Status != nil {
		cur.Status = *f.Status
	}
	if f.RxPowerSet {
		cur.RxPowerDBm = nil
		if f.RxPowerDBm != nil {
			v := *f.RxPowerDBm
			cur.RxPowerDBm = &v
		}
	}
	return cur
}

func sameState(a, b streams.ONUState) bool {
	if a.Serial != b.Serial || a.Description != b.Description || a.Status != b.Status {
		return false
	}
	if (a.RxPowerDBm == nil) != (b.RxPowerDBm == nil) {
		return false
	}
	return a.RxPowerDBm == nil || *a.RxPowerDBm == *b.RxPowerDBm
}

// changeEvents builds the ONU-change events of a batch. Their ids derive
// from the batch's stream sequence and the ONU, so publishing them again
// (outbox retry) is dropped by the stream's duplicate window.
func changeEvents(source string, seq uint64, b streams.VarbindBatch, changes []onuChange) ([]outboxRow, error) {
	rows := make([]outboxRow, 0, len(changes))
	for _, c := range changes {
		ev := streams.ONUChanged{
			OLTID: b.OLTID, PonIndex: c.Key.PonIndex, ONUID: c.Key.ONUID, Change: c.Change,
			Previous: c.Previous, Current: c.Current, ExecutionID: b.ExecutionID, ObservedAt: b.CollectedAt.UTC(),
		}
		id := streams.MsgID("onu", b.OLTID, seq, c.Key.PonIndex, c.Key.ONUID)
		payload, err := streams.EncodeWithID(id, source, b.CollectedAt, ev)
		if err != nil {
			return nil, fmt.Errorf("encode onu change of olt %s: %w", b.OLTID, err)
		}
		rows = append(rows, outboxRow{MsgID: id, Subject: streams.SubjectONU(b.OLTID, c.Change), Payload: payload})
	}
	return rows, nil
}
