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
		if b.Last && readsONUTable(b) {
			removed, err := markRemoved(ctx, tx, b.OLTID, seenBy, collected.UTC())
			if err != nil {
				return err
			}
			changes = append(changes, removed...)
		}
		placed, err := recordPlacement(ctx, tx, b, d)
		if err != nil {
			return err
		}
		rows, err := changeEvents(p.cfg.Source, m.Seq, b, changes)
		if err != nil {
			return err
		}
		if warn := unplacedWarning(b, placed); warn != nil {
			row, err := auditRow(p.cfg.Source, m.Seq, collected, *warn)
			if err != nil {
				return err
			}
			rows = append(rows, row)
		}
		if err := insertOutbox(ctx, tx, rows); err != nil {
			return err
		}
		// Counted inside the transaction: a rollback after this point is
		// rare (commit failure) and only over-counts.
		p.metrics.onuRows.Add(float64(n))
		unplaced := 0
		for reason, c := range d.Skipped {
			p.metrics.varbindsSkipped.WithLabelValues(reason).Add(float64(c))
			unplaced += c
		}
		if unplaced > 0 {
			p.metrics.varbindsUnplaced.WithLabelValues(b.OLTID).Add(float64(unplaced))
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
	// wasRemoved: rows a complete walk had marked removed; seen again, they
	// are discovered again (the pollers' ONU sets fold both events).
	wasRemoved := map[ONUKey]bool{}
	rows, err := tx.Query(ctx, `SELECT o.pon_index, o.onu_id, o.serial, o.description, o.status, o.rx_power_dbm,
		o.onu_index, o.port_name, o.name, o.tx_power_dbm, o.olt_rx_power_dbm, o.distance_m, o.temperature_c, o.voltage_v, o.bias_ma,
		o.last_down_cause, o.last_down_at, o.last_up_at, o.model, o.firmware, o.removed_at IS NOT NULL
		FROM onu_data o JOIN unnest($2::bigint[], $3::bigint[]) AS k(pon_index, onu_id)
		ON o.pon_index = k.pon_index AND o.onu_id = k.onu_id
		WHERE o.olt_id = $1`, oltID, pons, onus)
	if err != nil {
		return 0, nil, fmt.Errorf("read onu_data of olt %s: %w", oltID, err)
	}
	for rows.Next() {
		var k ONUKey
		var s streams.ONUState
		var removed bool
		if err := rows.Scan(&k.PonIndex, &k.ONUID, &s.Serial, &s.Description, &s.Status, &s.RxPowerDBm,
			&s.Index, &s.PortName, &s.Name, &s.TxPowerDBm, &s.OLTRxPowerDBm, &s.DistanceM, &s.TemperatureC, &s.VoltageV, &s.BiasMA,
			&s.LastDownCause, &s.LastDownAt, &s.LastUpAt, &s.Model, &s.Firmware, &removed); err != nil {
			rows.Close()
			return 0, nil, fmt.Errorf("scan onu_data of olt %s: %w", oltID, err)
		}
		prev[k] = s
		wasRemoved[k] = removed
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
	texts := make([][]string, len(extTextColumns()))
	for i := range texts {
		texts[i] = make([]string, len(keys))
	}
	nums := make([][]*float64, len(extNumColumns()))
	for i := range nums {
		nums[i] = make([]*float64, len(keys))
	}
	times := make([][]*time.Time, len(extTimeColumns()))
	for i := range times {
		times[i] = make([]*time.Time, len(keys))
	}
	var changes []onuChange
	for i, k := range keys {
		old, existed := prev[k]
		cur := merge(old, existed, d.ONUs[k])
		rxRead[i] = d.ONUs[k].RxPowerSet
		serials[i], descs[i], statuses[i], rx[i] = cur.Serial, cur.Description, cur.Status, cur.RxPowerDBm
		for j, c := range extTextColumns() {
			texts[j][i] = *c.get(&cur)
		}
		for j, c := range extNumColumns() {
			nums[j][i] = *c.get(&cur)
		}
		for j, c := range extTimeColumns() {
			times[j][i] = *c.get(&cur)
		}
		switch {
		case !existed:
			changes = append(changes, onuChange{Key: k, Change: streams.ONUDiscovered, Current: cur})
		case wasRemoved[k]:
			o := old
			changes = append(changes, onuChange{Key: k, Change: streams.ONUDiscovered, Previous: &o, Current: cur})
		case old.Status != cur.Status:
			o := old
			changes = append(changes, onuChange{Key: k, Change: streams.ONUStatusChanged, Previous: &o, Current: cur})
		case !sameState(old, cur):
			o := old
			changes = append(changes, onuChange{Key: k, Change: streams.ONUUpdated, Previous: &o, Current: cur})
		}
	}
	// rx_seen_by moves only for the ONUs whose Rx power this batch read.
	// A row seen again is no longer removed (removed_at cleared).
	tag, err := tx.Exec(ctx, `INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, description, status, rx_power_dbm, first_seen, last_seen, last_execution_id, rx_seen_by, seen_by,
		onu_index, port_name, name, last_down_cause, model, firmware,
		tx_power_dbm, olt_rx_power_dbm, distance_m, temperature_c, voltage_v, bias_ma, last_down_at, last_up_at)
		SELECT $1, u.pon_index, u.onu_id, u.serial, u.description, u.status, u.rx, $8, $8, $9, CASE WHEN u.rx_read THEN $11 END, $11,
		u.onu_index, u.port_name, u.name, u.last_down_cause, u.model, u.firmware,
		u.tx, u.olt_rx, u.distance, u.temperature, u.voltage, u.bias, u.last_down_at, u.last_up_at
		FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::float8[], $10::bool[],
			$12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[],
			$18::float8[], $19::float8[], $20::float8[], $21::float8[], $22::float8[], $23::float8[], $24::timestamptz[], $25::timestamptz[])
			AS u(pon_index, onu_id, serial, description, status, rx, rx_read,
			onu_index, port_name, name, last_down_cause, model, firmware,
			tx, olt_rx, distance, temperature, voltage, bias, last_down_at, last_up_at)
		ON CONFLICT (olt_id, pon_index, onu_id) DO UPDATE SET serial = EXCLUDED.serial, description = EXCLUDED.description,
		status = EXCLUDED.status, rx_power_dbm = EXCLUDED.rx_power_dbm, last_seen = EXCLUDED.last_seen,
		last_execution_id = EXCLUDED.last_execution_id, rx_seen_by = COALESCE(EXCLUDED.rx_seen_by, onu_data.rx_seen_by),
		onu_index = EXCLUDED.onu_index, port_name = EXCLUDED.port_name, name = EXCLUDED.name,
		last_down_cause = EXCLUDED.last_down_cause, model = EXCLUDED.model, firmware = EXCLUDED.firmware,
		tx_power_dbm = EXCLUDED.tx_power_dbm, olt_rx_power_dbm = EXCLUDED.olt_rx_power_dbm, distance_m = EXCLUDED.distance_m,
		temperature_c = EXCLUDED.temperature_c, voltage_v = EXCLUDED.voltage_v, bias_ma = EXCLUDED.bias_ma,
		last_down_at = EXCLUDED.last_down_at, last_up_at = EXCLUDED.last_up_at, removed_at = NULL, seen_by = EXCLUDED.seen_by`,
		oltID, pons, onus, serials, descs, statuses, rx, collected, executionID, rxRead, seenBy,
		texts[0], texts[1], texts[2], texts[3], texts[4], texts[5],
		nums[0], nums[1], nums[2], nums[3], nums[4], nums[5], times[0], times[1])
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
	if f.Index != "" {
		cur.Index, cur.PortName = f.Index, f.PortName
	}
	for _, c := range extTextColumns() {
		if v, ok := f.Text[c.field]; ok {
			*c.get(&cur) = v
		}
	}
	for _, c := range extNumColumns() {
		if v, ok := f.Num[c.field]; ok {
			var p *float64
			if v != nil {
				x := *v
				p = &x
			}
			*c.get(&cur) = p
		}
	}
	for _, c := range extTimeColumns() {
		if v, ok := f.Time[c.field]; ok {
			var p *time.Time
			if v != nil {
				x := *v
				p = &x
			}
			*c.get(&cur) = p
		}
	}
	return cur
}

// The profile fields of onu_data, in the order of the upsert's arrays
// (onu_index and port_name come from the row index, not a column).
type extCol[T any] struct {
	field string
	get   func(*streams.ONUState) *T
}

func extTextColumns() []extCol[string] {
	return []extCol[string]{
		{"", func(s *streams.ONUState) *string { return &s.Index }},
		{"", func(s *streams.ONUState) *string { return &s.PortName }},
		{streams.FieldName, func(s *streams.ONUState) *string { return &s.Name }},
		{streams.FieldLastDownCause, func(s *streams.ONUState) *string { return &s.LastDownCause }},
		{streams.FieldModel, func(s *streams.ONUState) *string { return &s.Model }},
		{streams.FieldFirmware, func(s *streams.ONUState) *string { return &s.Firmware }},
	}
}

func extNumColumns() []extCol[*float64] {
	return []extCol[*float64]{
		{streams.FieldTxPower, func(s *streams.ONUState) **float64 { return &s.TxPowerDBm }},
		{streams.FieldOLTRxPower, func(s *streams.ONUState) **float64 { return &s.OLTRxPowerDBm }},
		{streams.FieldDistance, func(s *streams.ONUState) **float64 { return &s.DistanceM }},
		{streams.FieldTemperature, func(s *streams.ONUState) **float64 { return &s.TemperatureC }},
		{streams.FieldVoltage, func(s *streams.ONUState) **float64 { return &s.VoltageV }},
		{streams.FieldBias, func(s *streams.ONUState) **float64 { return &s.BiasMA }},
	}
}

func extTimeColumns() []extCol[*time.Time] {
	return []extCol[*time.Time]{
		{streams.FieldLastDownTime, func(s *streams.ONUState) **time.Time { return &s.LastDownAt }},
		{streams.FieldLastUpTime, func(s *streams.ONUState) **time.Time { return &s.LastUpAt }},
	}
}

func sameState(a, b streams.ONUState) bool {
	if a.Serial != b.Serial || a.Description != b.Description || a.Status != b.Status || !sameFloat(a.RxPowerDBm, b.RxPowerDBm) {
		return false
	}
	for _, c := range extTextColumns() {
		if *c.get(&a) != *c.get(&b) {
			return false
		}
	}
	for _, c := range extNumColumns() {
		if !sameFloat(*c.get(&a), *c.get(&b)) {
			return false
		}
	}
	for _, c := range extTimeColumns() {
		x, y := *c.get(&a), *c.get(&b)
		if (x == nil) != (y == nil) || (x != nil && !x.Equal(*y)) {
			return false
		}
	}
	return true
}

func sameFloat(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
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
