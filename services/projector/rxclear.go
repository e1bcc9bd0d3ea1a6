package projector

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/streams"
)

// rxReader names the attempt that read a batch: "<execution_id>:<lease
// revision>". Every attempt holds a new lease, so a retry is told apart
// from the attempt it replaces: a row read only by a failed first attempt
// is still "not read" for the successful one.
func rxReader(b streams.VarbindBatch) string {
	return fmt.Sprintf("%s:%d", b.ExecutionID, b.LeaseRevision)
}

// readsRx says whether the batch's columns include the Rx power.
func readsRx(b streams.VarbindBatch) bool {
	for _, c := range b.Columns {
		if c.Field == streams.FieldRxPower {
			return true
		}
	}
	return false
}

// clearUnreadRx runs on the Last batch of a walk that read the Rx column:
// the walk covered the whole table, so an ONU of the OLT whose Rx was not
// read by this attempt (onu_walk_seen) has no optical row any more
// (FiberHome and V-SOL omit it for an offline ONU) and its last reading
// must not stay next to an OFFLINE status. It returns the ONUs it cleared.
//
// It relies on every earlier batch of the attempt being applied already:
// the poller publishes them in order on the OLT's one subject
// facho.varbinds.<olt>, the OLT's lease keeps attempts from interleaving,
// and the projector applies each OLT's batches in stream order (one
// holder; an OLT's batches of a group go to one worker).
//
// Applying it again changes nothing: the rows are NULL already (and the
// checkpoint skips a redelivery anyway).
//
// reads is what the attempt read (loadWalkReads).
func clearUnreadRx(ctx context.Context, tx pgx.Tx, oltID string, reads walkReads) ([]onuChange, error) {
	// The difference is taken here, not by the planner: on a table whose
	// statistics are not gathered yet it picked a nested-loop anti join,
	// a million comparisons per walk.
	unread, err := keysWhere(ctx, tx, oltID, "rx_power_dbm IS NOT NULL", func(k ONUKey) bool { return !reads.rx[k] })
	if err != nil || len(unread) == 0 {
		return nil, err
	}
	pons, onus := keyArrays(unread)
	rows, err := tx.Query(ctx, `UPDATE onu_data o SET rx_power_dbm = NULL
		FROM (SELECT d.pon_index, d.onu_id, d.rx_power_dbm FROM onu_data d
		      JOIN unnest($2::bigint[], $3::bigint[]) AS k(pon_index, onu_id) ON d.pon_index = k.pon_index AND d.onu_id = k.onu_id
		      WHERE d.olt_id = $1 AND d.rx_power_dbm IS NOT NULL FOR UPDATE OF d) old
		WHERE o.olt_id = $1 AND o.pon_index = old.pon_index AND o.onu_id = old.onu_id
		RETURNING o.pon_index, o.onu_id, o.serial, o.description, o.status, old.rx_power_dbm`, oltID, pons, onus)
	if err != nil {
		return nil, fmt.Errorf("clear unread rx power of olt %s: %w", oltID, err)
	}
	var out []onuChange
	for rows.Next() {
		var k ONUKey
		var prev streams.ONUState
		if err := rows.Scan(&k.PonIndex, &k.ONUID, &prev.Serial, &prev.Description, &prev.Status, &prev.RxPowerDBm); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan cleared onu of olt %s: %w", oltID, err)
		}
		cur := prev
		cur.RxPowerDBm = nil
		out = append(out, onuChange{Key: k, Change: streams.ONUUpdated, Previous: &prev, Current: cur})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("clear unread rx power of olt %s: %w", oltID, err)
	}
	return out, nil
}

// withCleared folds the cleared ONUs into the batch's changes: an ONU the
// batch changed already keeps its one event (event ids derive from the
// batch and the ONU), now showing no Rx power; the others get an
// "updated" event of their own.
func withCleared(changes, cleared []onuChange) []onuChange {
	if len(cleared) == 0 {
		return changes
	}
	at := make(map[ONUKey]int, len(changes))
	for i, c := range changes {
		at[c.Key] = i
	}
	for _, c := range cleared {
		if i, ok := at[c.Key]; ok {
			changes[i].Current.RxPowerDBm = nil
			continue
		}
		changes = append(changes, c)
	}
	return changes
}
