package projector

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// vbMsg is one decoded varbind batch of the FACHO_VARBINDS stream.
type vbMsg struct {
	Seq   uint64
	Batch streams.VarbindBatch
	Dec   Decoded
	// PublishedAt is when the stream stored the batch (zero: unknown).
	PublishedAt time.Time
}

// decodeVarbindMsg decodes and checks one varbind batch; an error wraps
// streams.ErrMalformed (the message can never be applied).
func decodeVarbindMsg(subject string, seq uint64, data []byte) (vbMsg, error) {
	_, b, err := streams.DecodeOn[streams.VarbindBatch](subject, data)
	return checkVarbindMsg(seq, b, err)
}

// decodeVarbindMsgOnce is decodeVarbindMsg parsing the message in one pass
// (projection.DecodeOn: what it accepts and refuses is what
// streams.DecodeOn does), for a rebuild, where decoding is most of the CPU.
func decodeVarbindMsgOnce(subject string, seq uint64, data []byte) (vbMsg, error) {
	_, b, err := projection.DecodeOn[streams.VarbindBatch](subject, data)
	return checkVarbindMsg(seq, b, err)
}

// checkVarbindMsg is the rest of decodeVarbindMsg once the batch is
// parsed (err: the parse's error).
func checkVarbindMsg(seq uint64, b streams.VarbindBatch, err error) (vbMsg, error) {
	if err != nil {
		return vbMsg{}, err
	}
	if b.CollectedAt.IsZero() {
		return vbMsg{}, fmt.Errorf("%w: varbind batch without collected_at", streams.ErrMalformed)
	}
	d, err := DecodeBatch(b)
	if err != nil {
		return vbMsg{}, err
	}
	if r := checkPhysics(b, d); r != nil {
		return vbMsg{}, r
	}
	return vbMsg{Seq: seq, Batch: b, Dec: d}, nil
}

// decodeVarbinds is the one-message form of the varbind projection, for
// pkg/replay's rebuild (which runs Apply only, in a shadow schema). The
// live projector applies many messages per transaction (varbindloop.go)
// with the same applyVarbinds.
func (p *projector) decodeVarbinds(m jsrouter.Msg) (projection.Change, error) {
	msg, err := decodeVarbindMsg(m.Subject, m.Seq, m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		_, err := p.applyVarbinds(ctx, tx, []vbMsg{msg})
		return err
	}}, nil
}

// onuChange is one ONU whose state a message changed.
type onuChange struct {
	Key      ONUKey
	Change   string
	Previous *streams.ONUState
	Current  streams.ONUState
	// RemovedAt: of a removed ONU, when; of one discovered again, when it
	// had been removed (history's removed_at row).
	RemovedAt *time.Time
}

// storedONU is an onu_data row as the projection holds it in memory.
type storedONU struct {
	State     streams.ONUState
	Stored    bool // in onu_data when loaded
	RemovedAt *time.Time
	FirstSeen time.Time
	LastSeen  time.Time
	LastExec  string
	Dirty     bool // changed: written by writeONUs
}

// applyVarbinds projects msgs in tx, each OLT's messages in the order
// given (stream order), and returns the events to publish after commit.
// Each ONU row is read once per run of messages (up to a walk's Last
// batch, whose end-of-walk checks read the table) and written once if it
// changed; events and history rows are computed from the merged row and
// only for real changes. What the batches read is recorded per walk
// (walkseen.go), not on the rows.
func (p *projector) applyVarbinds(ctx context.Context, tx pgx.Tx, msgs []vbMsg) ([]outboxRow, error) {
	byOLT := map[string][]vbMsg{}
	var order []string
	for _, m := range msgs {
		if _, ok := byOLT[m.Batch.OLTID]; !ok {
			order = append(order, m.Batch.OLTID)
		}
		byOLT[m.Batch.OLTID] = append(byOLT[m.Batch.OLTID], m)
	}
	var out []outboxRow
	var hist historyRows
	for _, olt := range order {
		ms := byOLT[olt]
		for len(ms) > 0 {
			// A segment ends at a Last batch: its end-of-walk checks run
			// on the stored table, so what came before is written first.
			n := len(ms)
			for i, m := range ms {
				if m.Batch.Last {
					n = i + 1
					break
				}
			}
			events, err := p.applySegment(ctx, tx, olt, ms[:n], &hist)
			if err != nil {
				return nil, err
			}
			out = append(out, events...)
			ms = ms[n:]
		}
	}
	if err := hist.insert(ctx, tx); err != nil {
		return nil, err
	}
	return out, nil
}

// applySegment applies one OLT's messages, of which only the last may be a
// Last batch.
func (p *projector) applySegment(ctx context.Context, tx pgx.Tx, olt string, ms []vbMsg, hist *historyRows) ([]outboxRow, error) {
	keySet := map[ONUKey]struct{}{}
	for _, m := range ms {
		for k := range m.Dec.ONUs {
			keySet[k] = struct{}{}
		}
	}
	rows, err := loadONUs(ctx, tx, olt, keySet)
	if err != nil {
		return nil, err
	}
	perMsg := make([][]onuChange, len(ms))
	seen := walkSeen{}
	stale := 0
	for i, m := range ms {
		perMsg[i] = mergeMessage(rows, m, seen, &stale)
	}
	p.metrics.staleReadings.Add(float64(stale))
	dirty := 0
	for _, r := range rows {
		if r.Dirty {
			dirty++
		}
	}
	p.metrics.onuRows.Add(float64(dirty))
	if err := writeONUs(ctx, tx, olt, rows); err != nil {
		return nil, err
	}
	if err := seen.insert(ctx, tx, olt); err != nil {
		return nil, err
	}
	var out []outboxRow
	for i, m := range ms {
		b := m.Batch
		changes := perMsg[i]
		var reads walkReads
		if b.Last && tracksWalk(b) {
			// What the attempt read, for both end-of-walk checks.
			var err error
			if reads, err = loadWalkReads(ctx, tx, olt, rxReader(b)); err != nil {
				return nil, err
			}
		}
		if b.Last && readsRx(b) {
			cleared, err := clearUnreadRx(ctx, tx, olt, reads)
			if err != nil {
				return nil, err
			}
			changes = withCleared(changes, cleared)
		}
		if b.Last && readsONUTable(b) {
			removed, err := markRemoved(ctx, tx, olt, reads, b.CollectedAt.UTC())
			if err != nil {
				return nil, err
			}
			changes = append(changes, removed...)
			if err := endWalk(ctx, tx, olt, b.ExecutionID, b.CollectedAt.UTC()); err != nil {
				return nil, err
			}
		}
		placed, err := recordPlacement(ctx, tx, b, m.Dec)
		if err != nil {
			return nil, err
		}
		events, err := changeEvents(p.cfg.Source, m.Seq, b, changes)
		if err != nil {
			return nil, err
		}
		if warn := unplacedWarning(b, placed); warn != nil {
			row, err := auditRow(p.cfg.Source, m.Seq, b.CollectedAt, *warn)
			if err != nil {
				return nil, err
			}
			events = append(events, row)
		}
		out = append(out, events...)
		for _, c := range changes {
			hist.add(olt, b.ExecutionID, m.Seq, b.CollectedAt.UTC(), c)
			p.metrics.onuEvents.WithLabelValues(c.Change).Inc()
		}
		unplaced := 0
		for reason, c := range m.Dec.Skipped {
			p.metrics.varbindsSkipped.WithLabelValues(reason).Add(float64(c))
			unplaced += c
		}
		if m.Dec.Filtered > 0 {
			p.metrics.varbindsFiltered.Add(float64(m.Dec.Filtered))
		}
		if unplaced > 0 {
			p.metrics.varbindsUnplaced.WithLabelValues(olt).Add(float64(unplaced))
		}
	}
	return out, nil
}

// mergeMessage overlays one message on the rows (creating the ONUs it
// discovers), records what it read in seen when its walk ends with
// checks, and returns its changes. Only a changed row is marked dirty.
// A reading older than the ONU's current state (collected before its
// last change) does not move that state back: it changes nothing and is
// counted in stale; what the walk read is still recorded.
func mergeMessage(rows map[ONUKey]*storedONU, m vbMsg, seen walkSeen, stale *int) []onuChange {
	b := m.Batch
	attempt, track := rxReader(b), tracksWalk(b)
	collected := b.CollectedAt.UTC()
	var changes []onuChange
	for _, k := range m.Dec.Keys() {
		f := m.Dec.ONUs[k]
		r := rows[k]
		if r == nil {
			// An ONU the batch only knows to have no optical row is not
			// created.
			if f.onlyRxGone() {
				continue
			}
			r = &storedONU{FirstSeen: collected}
			rows[k] = r
		}
		if track {
			seen.add(attempt, m.Seq, k, f.RxPowerSet)
		}
		existed := r.Stored || r.Dirty
		if existed && collected.Before(r.LastSeen) {
			*stale++
			continue
		}
		old := r.State
		cur := merge(old, existed, f)
		switch {
		case !existed:
			changes = append(changes, onuChange{Key: k, Change: streams.ONUDiscovered, Current: cur})
		case r.RemovedAt != nil:
			o := old
			changes = append(changes, onuChange{Key: k, Change: streams.ONUDiscovered, Previous: &o, Current: cur, RemovedAt: r.RemovedAt})
		case old.Status != cur.Status:
			o := old
			changes = append(changes, onuChange{Key: k, Change: streams.ONUStatusChanged, Previous: &o, Current: cur})
		case !sameState(old, cur):
			o := old
			changes = append(changes, onuChange{Key: k, Change: streams.ONUUpdated, Previous: &o, Current: cur})
		default:
			continue // read, unchanged: not written
		}
		r.State, r.RemovedAt = cur, nil
		r.LastSeen, r.LastExec, r.Dirty = collected, b.ExecutionID, true
	}
	return changes
}

// loadONUs reads the stored rows of keys.
func loadONUs(ctx context.Context, tx pgx.Tx, olt string, keySet map[ONUKey]struct{}) (map[ONUKey]*storedONU, error) {
	out := make(map[ONUKey]*storedONU, len(keySet))
	if len(keySet) == 0 {
		return out, nil
	}
	// The distinct PONs (= ANY) and the range of ONU ids (BETWEEN) on the
	// primary key: one index range per PON whatever the table's statistics
	// (a join with the key pairs became a nested loop of a million
	// comparisons on a table not analyzed yet; = ANY on the ONU ids too
	// made one index descent per PON x ONU pair, 8-40x slower). Rows of
	// pairs not asked for are skipped.
	ponSet := map[int64]bool{}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for k := range keySet {
		ponSet[k.PonIndex] = true
		lo, hi = min(lo, k.ONUID), max(hi, k.ONUID)
	}
	pons := make([]int64, 0, len(ponSet))
	for p := range ponSet {
		pons = append(pons, p)
	}
	rows, err := tx.Query(ctx, `SELECT o.pon_index, o.onu_id, o.serial, o.description, o.status, o.rx_power_dbm,
		o.onu_index, o.port_name, o.name, o.tx_power_dbm, o.olt_rx_power_dbm, o.distance_m, o.temperature_c, o.voltage_v, o.bias_ma,
		o.last_down_cause, o.last_down_at, o.last_up_at, o.model, o.firmware, o.removed_at,
		o.first_seen, o.last_seen, o.last_execution_id
		FROM onu_data o WHERE o.olt_id = $1 AND o.pon_index = ANY($2::bigint[]) AND o.onu_id BETWEEN $3 AND $4`, olt, pons, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("read onu_data of olt %s: %w", olt, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k ONUKey
		r := &storedONU{Stored: true}
		s := &r.State
		if err := rows.Scan(&k.PonIndex, &k.ONUID, &s.Serial, &s.Description, &s.Status, &s.RxPowerDBm,
			&s.Index, &s.PortName, &s.Name, &s.TxPowerDBm, &s.OLTRxPowerDBm, &s.DistanceM, &s.TemperatureC, &s.VoltageV, &s.BiasMA,
			&s.LastDownCause, &s.LastDownAt, &s.LastUpAt, &s.Model, &s.Firmware, &r.RemovedAt,
			&r.FirstSeen, &r.LastSeen, &r.LastExec); err != nil {
			return nil, fmt.Errorf("scan onu_data of olt %s: %w", olt, err)
		}
		if _, asked := keySet[k]; asked {
			out[k] = r
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read onu_data of olt %s: %w", olt, err)
	}
	return out, nil
}

// writeONUs writes the dirty rows in one statement and marks them clean.
func writeONUs(ctx context.Context, tx pgx.Tx, olt string, rows map[ONUKey]*storedONU) error {
	keys := make([]ONUKey, 0, len(rows))
	for k, r := range rows {
		if r.Dirty {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	// Sorted: two transactions writing the same rows lock them in one order.
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].PonIndex != keys[j].PonIndex {
			return keys[i].PonIndex < keys[j].PonIndex
		}
		return keys[i].ONUID < keys[j].ONUID
	})
	n := len(keys)
	pons, onus := make([]int64, n), make([]int64, n)
	serials, descs, statuses := make([]string, n), make([]string, n), make([]string, n)
	rx := make([]*float64, n)
	firstSeen, lastSeen := make([]time.Time, n), make([]time.Time, n)
	execs := make([]string, n)
	texts := make([][]string, len(extTextColumns()))
	for i := range texts {
		texts[i] = make([]string, n)
	}
	nums := make([][]*float64, len(extNumColumns()))
	for i := range nums {
		nums[i] = make([]*float64, n)
	}
	times := make([][]*time.Time, len(extTimeColumns()))
	for i := range times {
		times[i] = make([]*time.Time, n)
	}
	for i, k := range keys {
		r := rows[k]
		cur := &r.State
		pons[i], onus[i] = k.PonIndex, k.ONUID
		serials[i], descs[i], statuses[i], rx[i] = cur.Serial, cur.Description, cur.Status, cur.RxPowerDBm
		firstSeen[i], lastSeen[i], execs[i] = r.FirstSeen, r.LastSeen, r.LastExec
		for j, c := range extTextColumns() {
			texts[j][i] = *c.get(cur)
		}
		for j, c := range extNumColumns() {
			nums[j][i] = *c.get(cur)
		}
		for j, c := range extTimeColumns() {
			times[j][i] = *c.get(cur)
		}
		r.Dirty, r.Stored = false, true
	}
	// A row seen again is no longer removed (removed_at cleared).
	_, err := tx.Exec(ctx, `INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, description, status, rx_power_dbm, first_seen, last_seen, last_execution_id,
		onu_index, port_name, name, last_down_cause, model, firmware,
		tx_power_dbm, olt_rx_power_dbm, distance_m, temperature_c, voltage_v, bias_ma, last_down_at, last_up_at)
		SELECT $1, u.pon_index, u.onu_id, u.serial, u.description, u.status, u.rx, u.first_seen, u.last_seen, u.exec,
		u.onu_index, u.port_name, u.name, u.last_down_cause, u.model, u.firmware,
		u.tx, u.olt_rx, u.distance, u.temperature, u.voltage, u.bias, u.last_down_at, u.last_up_at
		FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::timestamptz[], $9::timestamptz[], $10::text[],
			$11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[],
			$17::float8[], $18::float8[], $19::float8[], $20::float8[], $21::float8[], $22::float8[], $23::timestamptz[], $24::timestamptz[])
			AS u(pon_index, onu_id, serial, description, status, rx, first_seen, last_seen, exec,
			onu_index, port_name, name, last_down_cause, model, firmware,
			tx, olt_rx, distance, temperature, voltage, bias, last_down_at, last_up_at)
		ON CONFLICT (olt_id, pon_index, onu_id) DO UPDATE SET serial = EXCLUDED.serial, description = EXCLUDED.description,
		status = EXCLUDED.status, rx_power_dbm = EXCLUDED.rx_power_dbm, last_seen = EXCLUDED.last_seen,
		last_execution_id = EXCLUDED.last_execution_id,
		onu_index = EXCLUDED.onu_index, port_name = EXCLUDED.port_name, name = EXCLUDED.name,
		last_down_cause = EXCLUDED.last_down_cause, model = EXCLUDED.model, firmware = EXCLUDED.firmware,
		tx_power_dbm = EXCLUDED.tx_power_dbm, olt_rx_power_dbm = EXCLUDED.olt_rx_power_dbm, distance_m = EXCLUDED.distance_m,
		temperature_c = EXCLUDED.temperature_c, voltage_v = EXCLUDED.voltage_v, bias_ma = EXCLUDED.bias_ma,
		last_down_at = EXCLUDED.last_down_at, last_up_at = EXCLUDED.last_up_at, removed_at = NULL`,
		olt, pons, onus, serials, descs, statuses, rx, firstSeen, lastSeen, execs,
		texts[0], texts[1], texts[2], texts[3], texts[4], texts[5],
		nums[0], nums[1], nums[2], nums[3], nums[4], nums[5], times[0], times[1])
	if err != nil {
		return fmt.Errorf("write %d onus of olt %s: %w", n, olt, err)
	}
	return nil
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
		switch {
		case f.RxPowerDBm == nil:
			cur.RxPowerDBm = nil
		case sameNum(cur.RxPowerDBm, f.RxPowerDBm):
			// The reading the state holds (most of them): its value is
			// kept, never written through, so it is shared.
		default:
			v := *f.RxPowerDBm
			cur.RxPowerDBm = &v
		}
	}
	if f.Index != "" {
		cur.Index, cur.PortName = f.Index, f.PortName
	}
	if len(f.Text) == 0 && len(f.Num) == 0 && len(f.Time) == 0 {
		return cur // no profile field read (most batches)
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

// sameState says whether a and b have equal historyFields renderings,
// without rendering them: texts equal, numbers equal as the same float64
// (FormatFloat's shortest form tells every other pair apart; NaNs all
// render "NaN"), times the same instant.
func sameState(a, b streams.ONUState) bool {
	return a.Serial == b.Serial && a.Description == b.Description && a.Status == b.Status && sameNum(a.RxPowerDBm, b.RxPowerDBm) &&
		a.Index == b.Index && a.PortName == b.PortName && a.Name == b.Name &&
		sameNum(a.TxPowerDBm, b.TxPowerDBm) && sameNum(a.OLTRxPowerDBm, b.OLTRxPowerDBm) && sameNum(a.DistanceM, b.DistanceM) &&
		sameNum(a.TemperatureC, b.TemperatureC) && sameNum(a.VoltageV, b.VoltageV) && sameNum(a.BiasMA, b.BiasMA) &&
		a.LastDownCause == b.LastDownCause && sameTime(a.LastDownAt, b.LastDownAt) && sameTime(a.LastUpAt, b.LastUpAt) &&
		a.Model == b.Model && a.Firmware == b.Firmware
}

func sameNum(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return math.Float64bits(*a) == math.Float64bits(*b) || (math.IsNaN(*a) && math.IsNaN(*b))
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// historyFieldNames are the ONUState JSON keys, in the order of
// historyFields: the field names of onu_history.
var historyFieldNames = [...]string{"serial", "description", "status", "rx_power_dbm", "onu_index", "port_name", "name",
	"tx_power_dbm", "olt_rx_power_dbm", "distance_m", "temperature_c", "voltage_v", "bias_ma",
	"last_down_cause", "last_down_at", "last_up_at", "model", "firmware"}

// HistoryFields lists the ONU fields onu_history records (plus removed_at).
func HistoryFields() []string {
	return append(historyFieldNames[:len(historyFieldNames):len(historyFieldNames)], "removed_at")
}

// optText is a history value: set false is NULL (no value).
type optText struct {
	v   string
	set bool
}

func textOf(s string) optText { return optText{s, s != ""} }

func numOf(p *float64) optText {
	if p == nil {
		return optText{}
	}
	return optText{strconv.FormatFloat(*p, 'g', -1, 64), true}
}

func timeOf(p *time.Time) optText {
	if p == nil {
		return optText{}
	}
	return optText{p.UTC().Format(time.RFC3339Nano), true}
}

// historyFields renders s as onu_history values (comparable: equal states
// have equal renderings).
func historyFields(s streams.ONUState) [len(historyFieldNames)]optText {
	return [...]optText{textOf(s.Serial), textOf(s.Description), textOf(s.Status), numOf(s.RxPowerDBm), textOf(s.Index), textOf(s.PortName), textOf(s.Name),
		numOf(s.TxPowerDBm), numOf(s.OLTRxPowerDBm), numOf(s.DistanceM), numOf(s.TemperatureC), numOf(s.VoltageV), numOf(s.BiasMA),
		textOf(s.LastDownCause), timeOf(s.LastDownAt), timeOf(s.LastUpAt), textOf(s.Model), textOf(s.Firmware)}
}

// changeEvents builds the ONU-change events of a batch. Their ids derive
// from the batch's stream sequence and the ONU, so publishing them again
// is dropped by the stream's duplicate window.
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

// applyVarbindBatch is the onu_data rebuild's batch form of a run of one
// OLT's batches (projection.Source.ApplyBatch): they are applied as the
// live projector applies a group, by applyVarbinds, each ONU row read once
// and written once per segment; a malformed batch is counted and skipped,
// as its live consumer dead-lettered it.
func (p *projector) applyVarbindBatch(ctx context.Context, tx pgx.Tx, msgs []jsrouter.Msg) (projection.BatchResult, error) {
	var res projection.BatchResult
	vms := make([]vbMsg, 0, len(msgs))
	for _, m := range msgs {
		vm, err := decodeVarbindMsg(m.Subject, m.Seq, m.Data)
		if err != nil {
			if !errors.Is(err, streams.ErrMalformed) {
				return res, fmt.Errorf("decode %s seq %d: %w", m.Stream, m.Seq, err)
			}
			res.Malformed++
			continue
		}
		vms = append(vms, vm)
	}
	res.Applied = len(vms)
	if len(vms) == 0 {
		return res, nil
	}
	_, err := p.applyVarbinds(ctx, tx, vms)
	return res, err
}
