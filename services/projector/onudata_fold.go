package projector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// The onu_data read model's Fold (projection.ReadModel.Fold): a rebuild's
// first pass decodes the varbind batches on every core and applies them
// in memory, in stream order, by the rules applyVarbinds applies them in
// Postgres (mergeMessage, the end-of-walk checks of a Last batch,
// placement, history and its hourly rollup), then writes each table once
// with COPY into the empty shadow. The set-based form reads back and
// rewrites every ONU a run of batches touches, records what each walk
// read in onu_walk_seen and reads it back at the walk's end: most of a
// rebuild's time went to those statements.
//
// What the fold holds is bounded by the rebuild (FoldMaxRows counts the
// ONUs, history rows and hourly rollups): past it the rebuild goes batch
// by batch instead.

type onuFold struct {
	p    *projector
	olts map[string]*oltFold
	// placement per (olt, execution), in first-seen order.
	placement map[placementKey]*placement
	placeKeys []placementKey
	walks     map[string]walkEnd // onu_walks
	hist      []foldHistoryRow
	hourly    map[hourKey]*hourAgg
	onus      int
}

// oltFold is one OLT's ONUs and what its latest tracked attempt read
// (onu_walk_seen: the records of an OLT's other attempts are deleted when
// one records).
type oltFold struct {
	onus    map[ONUKey]*storedONU
	attempt string
	seq     uint64
	read    map[ONUKey]bool // ONU -> its Rx power was read
	order   []ONUKey        // read's keys in the order first read
}

type placementKey struct{ olt, exec string }

type walkEnd struct {
	exec string
	at   time.Time
}

// foldHistoryRow is one onu_history row.
type foldHistoryRow struct {
	olt, exec, field string
	pon, onu, seq    int64
	old, cur         optText
	at               time.Time
}

type hourKey struct {
	olt      string
	pon, onu int64
	field    string
	hour     int64 // unix seconds of the UTC hour
}

// hourAgg is one onu_history_hourly row (hourlyAggregate in memory).
type hourAgg struct {
	min, max, last *float64
	lastAt         time.Time
	lastSeq        int64
}

func (p *projector) newONUFold() projection.Folder {
	return &onuFold{p: p, olts: map[string]*oltFold{}, placement: map[placementKey]*placement{}, walks: map[string]walkEnd{}, hourly: map[hourKey]*hourAgg{}}
}

// Folds: the varbind stream, the model's first source.
func (f *onuFold) Folds(source int) bool { return source == 0 }

// Decode decodes a run of varbind batches as applyVarbindBatch does: a
// malformed one is counted and skipped (the live consumer dead-lettered
// it).
func (f *onuFold) Decode(_ int, msgs []jsrouter.Msg) (any, projection.BatchResult, error) {
	var res projection.BatchResult
	out := make([]foldMsg, 0, len(msgs))
	for _, m := range msgs {
		vm, err := decodeVarbindMsg(m.Subject, m.Seq, m.Data)
		if err != nil {
			if !errors.Is(err, streams.ErrMalformed) {
				return nil, res, fmt.Errorf("decode %s seq %d: %w", m.Stream, m.Seq, err)
			}
			res.Malformed++
			continue
		}
		n := vm.Batch.VarbindCount()
		vm.Batch.Varbinds, vm.Batch.Rows = nil, nil // decoded (Dec): only their count is read
		out = append(out, foldMsg{vbMsg: vm, varbinds: n})
	}
	res.Applied = len(out)
	return out, res, nil
}

func (f *onuFold) Rows() int { return f.onus + len(f.hist) + len(f.hourly) }

func (f *onuFold) Fold(_ int, decoded any) error {
	msgs, ok := decoded.([]foldMsg)
	if !ok {
		return fmt.Errorf("onu_data fold: decoded as %T", decoded)
	}
	for i := range msgs {
		f.apply(&msgs[i])
	}
	return nil
}

// foldMsg is a decoded batch without its varbinds, and how many it had.
type foldMsg struct {
	vbMsg
	varbinds int
}

// apply is applySegment of one message, in memory.
func (f *onuFold) apply(fm *foldMsg) {
	m := &fm.vbMsg
	b := &m.Batch
	o := f.olts[b.OLTID]
	if o == nil {
		o = &oltFold{onus: map[ONUKey]*storedONU{}}
		f.olts[b.OLTID] = o
	}
	before := len(o.onus)
	seen := walkSeen{}
	stale := 0
	changes := mergeMessage(o.onus, *m, seen, &stale)
	f.onus += len(o.onus) - before
	for _, c := range changes {
		r := o.onus[c.Key]
		r.Dirty, r.Stored = false, true // written, as writeONUs leaves it
	}
	for attempt, a := range seen { // this message's attempt, if it tracks its walk
		if attempt != o.attempt {
			o.attempt, o.seq, o.read, o.order = attempt, 0, map[ONUKey]bool{}, nil
		}
		o.seq = max(o.seq, a.seq)
		for i := range a.pons {
			k := ONUKey{PonIndex: a.pons[i], ONUID: a.onus[i]}
			rx, had := o.read[k]
			if !had {
				o.order = append(o.order, k)
			}
			o.read[k] = rx || a.rx[i]
		}
	}
	collected := b.CollectedAt.UTC()
	if b.Last {
		var reads walkReads
		if tracksWalk(*b) && o.attempt == rxReader(*b) {
			reads.seen = make(map[ONUKey]bool, len(o.read))
			reads.rx = make(map[ONUKey]bool, len(o.read))
			for k, rx := range o.read {
				reads.seen[k] = true
				if rx {
					reads.rx[k] = true
				}
			}
		}
		if readsRx(*b) {
			changes = withCleared(changes, o.clearUnreadRx(reads))
		}
		if readsONUTable(*b) {
			changes = append(changes, o.markRemoved(reads, collected)...)
			if w, ok := f.walks[b.OLTID]; !ok || !w.at.After(collected) {
				f.walks[b.OLTID] = walkEnd{exec: b.ExecutionID, at: collected}
			}
		}
	}
	f.place(b, fm.varbinds, m.Dec)
	for _, c := range changes {
		addHistory(c, collected, func(k ONUKey, field string, old, cur optText) {
			f.hist = append(f.hist, foldHistoryRow{olt: b.OLTID, exec: b.ExecutionID, field: field, pon: k.PonIndex, onu: k.ONUID,
				seq: int64(m.Seq), old: old, cur: cur, at: collected})
			if isRollupField(field) {
				f.rollup(hourKey{olt: b.OLTID, pon: k.PonIndex, onu: k.ONUID, field: field, hour: collected.Truncate(time.Hour).Unix()},
					numValue(old), numValue(cur), collected, int64(m.Seq))
			}
		})
	}
}

// sortedKeys lists the OLT's ONUs matching keep in key order (keysWhere).
func (o *oltFold) sortedKeys(keep func(ONUKey, *storedONU) bool) []ONUKey {
	var out []ONUKey
	for k, r := range o.onus {
		if keep(k, r) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, compareKeys)
	return out
}

func compareKeys(a, b ONUKey) int {
	if a.PonIndex != b.PonIndex {
		if a.PonIndex < b.PonIndex {
			return -1
		}
		return 1
	}
	switch {
	case a.ONUID < b.ONUID:
		return -1
	case a.ONUID > b.ONUID:
		return 1
	}
	return 0
}

// clearUnreadRx is clearUnreadRx in memory.
func (o *oltFold) clearUnreadRx(reads walkReads) []onuChange {
	var out []onuChange
	for _, k := range o.sortedKeys(func(k ONUKey, r *storedONU) bool { return r.State.RxPowerDBm != nil && !reads.rx[k] }) {
		r := o.onus[k]
		prev := streams.ONUState{Serial: r.State.Serial, Description: r.State.Description, Status: r.State.Status, RxPowerDBm: r.State.RxPowerDBm}
		cur := prev
		cur.RxPowerDBm = nil
		r.State.RxPowerDBm = nil
		out = append(out, onuChange{Key: k, Change: streams.ONUUpdated, Previous: &prev, Current: cur})
	}
	return out
}

// markRemoved is markRemoved in memory.
func (o *oltFold) markRemoved(reads walkReads, at time.Time) []onuChange {
	var out []onuChange
	for _, k := range o.sortedKeys(func(k ONUKey, r *storedONU) bool { return r.RemovedAt == nil && !reads.seen[k] }) {
		r := o.onus[k]
		t := at
		r.RemovedAt = &t
		s := r.State
		out = append(out, onuChange{Key: k, Change: streams.ONURemoved, Current: streams.ONUState{Serial: s.Serial, Description: s.Description,
			Status: s.Status, RxPowerDBm: s.RxPowerDBm, Index: s.Index, PortName: s.PortName}})
	}
	return out
}

// place is recordPlacement in memory.
func (f *onuFold) place(b *streams.VarbindBatch, varbinds int, d Decoded) {
	unplaced := 0
	for _, n := range d.Skipped {
		unplaced += n
	}
	k := placementKey{b.OLTID, b.ExecutionID}
	p := f.placement[k]
	if p == nil {
		p = &placement{Reasons: map[string]int{}}
		f.placement[k] = p
		f.placeKeys = append(f.placeKeys, k)
	}
	p.Placed += max(varbinds-unplaced-d.Filtered, 0)
	p.Unplaced += unplaced
	for r, n := range d.Skipped {
		p.Reasons[r] += n
	}
}

// rollup merges one change into its hour (hourlyAggregate, hourlyMerge).
func (f *onuFold) rollup(k hourKey, old, cur *float64, at time.Time, seq int64) {
	a := f.hourly[k]
	if a == nil {
		a = &hourAgg{lastAt: at, lastSeq: seq, last: cur}
		f.hourly[k] = a
	} else if at.After(a.lastAt) || (at.Equal(a.lastAt) && seq >= a.lastSeq) {
		a.lastAt, a.lastSeq, a.last = at, seq, cur
	}
	for _, v := range []*float64{old, cur} {
		if v == nil {
			continue
		}
		if a.min == nil || *v < *a.min {
			x := *v
			a.min = &x
		}
		if a.max == nil || *v > *a.max {
			x := *v
			a.max = &x
		}
	}
}

// Writes copy the folded rows into the empty shadow tables, one COPY per
// table, at once.
func (f *onuFold) Writes() []func(ctx context.Context, tx pgx.Tx) error {
	return []func(ctx context.Context, tx pgx.Tx) error{f.writeONUs, f.writeHistory, f.writeHourly, f.writeSmall}
}

func (f *onuFold) writeONUs(ctx context.Context, tx pgx.Tx) error {
	cols := []string{"olt_id", "pon_index", "onu_id", "serial", "description", "status", "rx_power_dbm", "first_seen", "last_seen", "last_execution_id",
		"onu_index", "port_name", "name", "last_down_cause", "model", "firmware",
		"tx_power_dbm", "olt_rx_power_dbm", "distance_m", "temperature_c", "voltage_v", "bias_ma", "last_down_at", "last_up_at", "removed_at"}
	rows := make([][]any, 0, f.onus)
	for olt, o := range f.olts {
		for k, r := range o.onus {
			s := &r.State
			rows = append(rows, []any{olt, k.PonIndex, k.ONUID, s.Serial, s.Description, s.Status, s.RxPowerDBm, r.FirstSeen, r.LastSeen, r.LastExec,
				s.Index, s.PortName, s.Name, s.LastDownCause, s.Model, s.Firmware,
				s.TxPowerDBm, s.OLTRxPowerDBm, s.DistanceM, s.TemperatureC, s.VoltageV, s.BiasMA, s.LastDownAt, s.LastUpAt, r.RemovedAt})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"onu_data"}, cols, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy %d onus: %w", len(rows), err)
	}
	return nil
}

func (f *onuFold) writeHistory(ctx context.Context, tx pgx.Tx) error {
	columns := []string{"olt_id", "pon_index", "onu_id", "field", "old_value", "new_value", "at", "execution_id", "stream_seq"}
	text := func(o optText) any {
		if !o.set {
			return nil
		}
		return o.v
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"onu_history"}, columns, pgx.CopyFromSlice(len(f.hist), func(i int) ([]any, error) {
		h := &f.hist[i]
		return []any{h.olt, h.pon, h.onu, h.field, text(h.old), text(h.cur), h.at, h.exec, h.seq}, nil
	})); err != nil {
		return fmt.Errorf("copy %d onu history rows: %w", len(f.hist), err)
	}
	return nil
}

func (f *onuFold) writeHourly(ctx context.Context, tx pgx.Tx) error {
	rows := make([][]any, 0, len(f.hourly))
	for k, a := range f.hourly {
		rows = append(rows, []any{k.olt, k.pon, k.onu, k.field, time.Unix(k.hour, 0).UTC(), a.min, a.max, a.last, a.lastAt, a.lastSeq})
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"onu_history_hourly"}, []string{"olt_id", "pon_index", "onu_id", "field", "hour",
		"min_value", "max_value", "last_value", "last_at", "last_seq"}, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy %d hourly onu history rows: %w", len(rows), err)
	}
	return nil
}

// writeSmall writes execution_placement, onu_walks and, for the batches
// after the fold, what each OLT's latest tracked attempt read
// (onu_walk_seen, one record: the live table's records of an attempt are
// read as their union).
func (f *onuFold) writeSmall(ctx context.Context, tx pgx.Tx) error {
	place := make([][]any, 0, len(f.placeKeys))
	for _, k := range f.placeKeys {
		p := f.placement[k]
		reasons, err := json.Marshal(p.Reasons)
		if err != nil {
			return fmt.Errorf("encode unplaced reasons: %w", err)
		}
		place = append(place, []any{k.olt, k.exec, int32(p.Placed), int32(p.Unplaced), string(reasons)})
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"execution_placement"}, []string{"olt_id", "execution_id", "placed_varbinds", "unplaced_varbinds", "unplaced_reasons"},
		pgx.CopyFromRows(place)); err != nil {
		return fmt.Errorf("copy %d execution placements: %w", len(place), err)
	}
	walks := make([][]any, 0, len(f.walks))
	seen := make([][]any, 0, len(f.olts))
	for olt, w := range f.walks {
		walks = append(walks, []any{olt, w.exec, w.at})
	}
	for olt, o := range f.olts {
		if o.attempt == "" {
			continue
		}
		pons, onus, rx := make([]int64, len(o.order)), make([]int64, len(o.order)), make([]bool, len(o.order))
		for i, k := range o.order {
			pons[i], onus[i], rx[i] = k.PonIndex, k.ONUID, o.read[k]
		}
		seen = append(seen, []any{olt, o.attempt, int64(o.seq), pons, onus, rx})
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"onu_walks"}, []string{"olt_id", "execution_id", "seen_at"}, pgx.CopyFromRows(walks)); err != nil {
		return fmt.Errorf("copy %d walks: %w", len(walks), err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"onu_walk_seen"}, []string{"olt_id", "attempt", "seq", "pon_index", "onu_id", "rx_read"}, pgx.CopyFromRows(seen)); err != nil {
		return fmt.Errorf("copy %d walk records: %w", len(seen), err)
	}
	return nil
}
