package projector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

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
	// order is the OLTs in the order first seen.
	order []string
}

// oltFold is one OLT's part of the fold: its ONUs, what its latest
// tracked attempt read (onu_walk_seen: the records of an OLT's other
// attempts are deleted when one records), and the rows its batches made.
// The OLTs' parts are folded side by side: a batch is of one OLT.
type oltFold struct {
	id      string
	onus    map[ONUKey]*storedONU
	attempt string
	seen    walkSeen // of attempt alone
	// placement per execution, in first-seen order.
	placement map[string]*placement
	execs     []string
	walk      *walkEnd // onu_walks
	hist      []foldHistoryRow
	hourly    map[hourKey]*hourAgg
	// traps are the OLT's ONU status traps not applied yet, in stream
	// order; trapSeq the last trap applied to each ONU.
	traps   []foldTrap
	trapSeq map[ONUKey]uint64
}

type walkEnd struct {
	exec string
	at   time.Time
}

// foldHistoryRow is one onu_history row.
type foldHistoryRow struct {
	exec, field   string
	trap          bool // source 'trap' (else 'poll')
	pon, onu, seq int64
	old, cur      optText
	at            time.Time
}

type hourKey struct {
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
	return &onuFold{p: p, olts: map[string]*oltFold{}}
}

// The model's sources, as ReadModels lists them.
const (
	onuSourceTraps    = 0
	onuSourceVarbinds = 1
)

// Folds: the traps and the varbind stream.
func (f *onuFold) Folds(source int) bool { return source <= onuSourceVarbinds }

// Decode decodes a run of varbind batches as applyVarbindBatch does: a
// malformed one is counted and skipped (the live consumer dead-lettered
// it); or a run of traps (decodeTraps).
func (f *onuFold) Decode(source int, msgs []jsrouter.Msg) (any, projection.BatchResult, error) {
	if source == onuSourceTraps {
		return f.decodeTraps(msgs)
	}
	var res projection.BatchResult
	out := make([]foldMsg, 0, len(msgs))
	for _, m := range msgs {
		vm, err := decodeVarbindMsgOnce(m.Subject, m.Seq, m.Data)
		if err != nil {
			if !errors.Is(err, streams.ErrMalformed) {
				return nil, res, fmt.Errorf("decode %s seq %d: %w", m.Stream, m.Seq, err)
			}
			res.Malformed++
			continue
		}
		n := vm.Batch.VarbindCount()
		vm.Batch.Varbinds, vm.Batch.Rows = nil, nil // decoded (Dec): only their count is read
		vm.PublishedAt = m.Time
		out = append(out, foldMsg{vbMsg: vm, varbinds: n})
	}
	res.Applied = len(out)
	return out, res, nil
}

func (f *onuFold) Rows() int {
	n := 0
	for _, o := range f.olts {
		n += len(o.onus) + len(o.hist) + len(o.hourly) + len(o.traps)
	}
	return n
}

// Fold applies each OLT's batches of the run in stream order, the OLTs
// side by side.
func (f *onuFold) Fold(_ int, decoded any) error {
	if traps, ok := decoded.([]foldTrap); ok {
		for _, t := range traps {
			o := f.olt(t.ev.OLTID)
			o.traps = append(o.traps, t)
		}
		return nil
	}
	msgs, ok := decoded.([]foldMsg)
	if !ok {
		return fmt.Errorf("onu_data fold: decoded as %T", decoded)
	}
	byOLT := map[*oltFold][]*foldMsg{}
	var parts []*oltFold
	for i := range msgs {
		o := f.olt(msgs[i].Batch.OLTID)
		if _, ok := byOLT[o]; !ok {
			parts = append(parts, o)
		}
		byOLT[o] = append(byOLT[o], &msgs[i])
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, o := range parts {
		g.Go(func() error {
			for _, m := range byOLT[o] {
				o.apply(m)
			}
			return nil
		})
	}
	return g.Wait()
}

// olt is the OLT's part of the fold, new when it has none.
func (f *onuFold) olt(id string) *oltFold {
	o := f.olts[id]
	if o == nil {
		o = &oltFold{id: id, onus: map[ONUKey]*storedONU{}, placement: map[string]*placement{}, hourly: map[hourKey]*hourAgg{}, trapSeq: map[ONUKey]uint64{}}
		f.olts[id] = o
		f.order = append(f.order, id)
	}
	return o
}

// foldMsg is a decoded batch without its varbinds, and how many it had.
type foldMsg struct {
	vbMsg
	varbinds int
}

// apply is applySegment of one message, in memory, after the OLT's traps
// the stream stored before it.
func (o *oltFold) apply(fm *foldMsg) {
	m := &fm.vbMsg
	b := &m.Batch
	o.applyTraps(m.PublishedAt)
	if tracksWalk(*b) {
		// What this attempt read goes on its OLT's record; another
		// attempt's record goes (walkSeen.insert deletes it).
		if a := rxReader(*b); a != o.attempt {
			o.attempt, o.seen = a, walkSeen{}
		}
	}
	stale := 0
	changes := mergeMessage(o.onus, *m, o.seen, &stale)
	for _, c := range changes {
		r := o.onus[c.Key]
		r.Dirty, r.Stored = false, true // written, as writeONUs leaves it
	}
	collected := b.CollectedAt.UTC()
	if b.Last {
		var reads walkReads
		if a := o.seen[rxReader(*b)]; tracksWalk(*b) && a != nil {
			reads.seen = make(map[ONUKey]bool, len(a.pons))
			reads.rx = make(map[ONUKey]bool, len(a.pons))
			for i := range a.pons {
				k := ONUKey{PonIndex: a.pons[i], ONUID: a.onus[i]}
				reads.seen[k] = true
				if a.rx[i] {
					reads.rx[k] = true
				}
			}
		}
		if readsRx(*b) {
			changes = withCleared(changes, o.clearUnreadRx(reads))
		}
		if readsONUTable(*b) {
			changes = append(changes, o.markRemoved(reads, collected)...)
			if o.walk == nil || !o.walk.at.After(collected) {
				o.walk = &walkEnd{exec: b.ExecutionID, at: collected}
			}
		}
	}
	o.place(b, fm.varbinds, m.Dec)
	hour := collected.Truncate(time.Hour).Unix()
	for _, c := range changes {
		addHistory(c, collected, func(k ONUKey, field string, old, cur optText) {
			o.hist = append(o.hist, foldHistoryRow{exec: b.ExecutionID, field: field, pon: k.PonIndex, onu: k.ONUID,
				seq: int64(m.Seq), old: old, cur: cur, at: collected})
			if isRollupField(field) {
				o.rollup(hourKey{pon: k.PonIndex, onu: k.ONUID, field: field, hour: hour}, numValue(old), numValue(cur), collected, int64(m.Seq))
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
func (o *oltFold) place(b *streams.VarbindBatch, varbinds int, d Decoded) {
	unplaced := 0
	for _, n := range d.Skipped {
		unplaced += n
	}
	p := o.placement[b.ExecutionID]
	if p == nil {
		p = &placement{Reasons: map[string]int{}}
		o.placement[b.ExecutionID] = p
		o.execs = append(o.execs, b.ExecutionID)
	}
	p.Placed += max(varbinds-unplaced-d.Filtered, 0)
	p.Unplaced += unplaced
	for r, n := range d.Skipped {
		p.Reasons[r] += n
	}
}

// rollup merges one change into its hour (hourlyAggregate, hourlyMerge).
func (o *oltFold) rollup(k hourKey, old, cur *float64, at time.Time, seq int64) {
	a := o.hourly[k]
	if a == nil {
		a = &hourAgg{lastAt: at, lastSeq: seq, last: cur}
		o.hourly[k] = a
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
	for _, o := range f.olts {
		o.applyTraps(time.Time{}) // those after the OLT's last batch
	}
	// The history, most of the rows, in two COPYs at once (by OLT).
	var parts [2][]string
	var rows [2]int
	for _, id := range f.order {
		p := 0
		if rows[1] < rows[0] {
			p = 1
		}
		parts[p] = append(parts[p], id)
		rows[p] += len(f.olts[id].hist)
	}
	return []func(ctx context.Context, tx pgx.Tx) error{f.writeHistory(parts[0]), f.writeHistory(parts[1]), f.writeONUs, f.writeHourly, f.writeSmall}
}

func (f *onuFold) writeONUs(ctx context.Context, tx pgx.Tx) error {
	cols := []string{"olt_id", "pon_index", "onu_id", "serial", "description", "status", "rx_power_dbm", "first_seen", "last_seen", "last_execution_id",
		"onu_index", "port_name", "name", "last_down_cause", "model", "firmware",
		"tx_power_dbm", "olt_rx_power_dbm", "distance_m", "temperature_c", "voltage_v", "bias_ma", "last_down_at", "last_up_at", "removed_at"}
	var rows [][]any
	for _, id := range f.order {
		for k, r := range f.olts[id].onus {
			s := &r.State
			rows = append(rows, []any{id, k.PonIndex, k.ONUID, s.Serial, s.Description, s.Status, s.RxPowerDBm, r.FirstSeen, r.LastSeen, r.LastExec,
				s.Index, s.PortName, s.Name, s.LastDownCause, s.Model, s.Firmware,
				s.TxPowerDBm, s.OLTRxPowerDBm, s.DistanceM, s.TemperatureC, s.VoltageV, s.BiasMA, s.LastDownAt, s.LastUpAt, r.RemovedAt})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"onu_data"}, cols, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy %d onus: %w", len(rows), err)
	}
	return nil
}

// historySource streams the history rows of OLTs to COPY.
type historySource struct {
	f    *onuFold
	olts []string
	olt  int // in olts
	next int // in its hist
	row  []any
	n    int
}

func (s *historySource) Next() bool {
	for s.olt < len(s.olts) {
		if s.next < len(s.f.olts[s.olts[s.olt]].hist) {
			s.next++
			s.n++
			return true
		}
		s.olt, s.next = s.olt+1, 0
	}
	return false
}

func (s *historySource) Values() ([]any, error) {
	id := s.olts[s.olt]
	h := &s.f.olts[id].hist[s.next-1]
	text := func(o optText) any {
		if !o.set {
			return nil
		}
		return o.v
	}
	source := "poll"
	if h.trap {
		source = "trap"
	}
	s.row = append(s.row[:0], id, h.pon, h.onu, h.field, text(h.old), text(h.cur), h.at, h.exec, h.seq, source)
	return s.row, nil
}

func (s *historySource) Err() error { return nil }

// writeHistory writes the history rows of olts.
func (f *onuFold) writeHistory(olts []string) func(ctx context.Context, tx pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		columns := []string{"olt_id", "pon_index", "onu_id", "field", "old_value", "new_value", "at", "execution_id", "stream_seq", "source"}
		src := &historySource{f: f, olts: olts}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"onu_history"}, columns, src); err != nil {
			return fmt.Errorf("copy %d onu history rows: %w", src.n, err)
		}
		return nil
	}
}

func (f *onuFold) writeHourly(ctx context.Context, tx pgx.Tx) error {
	var rows [][]any
	for _, id := range f.order {
		for k, a := range f.olts[id].hourly {
			rows = append(rows, []any{id, k.pon, k.onu, k.field, time.Unix(k.hour, 0).UTC(), a.min, a.max, a.last, a.lastAt, a.lastSeq})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"onu_history_hourly"}, []string{"olt_id", "pon_index", "onu_id", "field", "hour",
		"min_value", "max_value", "last_value", "last_at", "last_seq"}, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy %d hourly onu history rows: %w", len(rows), err)
	}
	// pon_history_hourly: the rows just copied aggregated by PON, field and
	// hour, by the statement facho rebuild onu_history_hourly runs (the
	// shadow comes first in the search_path).
	if _, err := tx.Exec(ctx, ponFromHourly, time.Time{}, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		return fmt.Errorf("roll up %d hourly onu history rows by pon: %w", len(rows), err)
	}
	return nil
}

// writeSmall writes execution_placement, onu_walks and, for the batches
// after the fold, what each OLT's latest tracked attempt read
// (onu_walk_seen, one record: the live table's records of an attempt are
// read as their union).
func (f *onuFold) writeSmall(ctx context.Context, tx pgx.Tx) error {
	var place, walks, seen [][]any
	for _, id := range f.order {
		o := f.olts[id]
		for _, exec := range o.execs {
			p := o.placement[exec]
			reasons, err := json.Marshal(p.Reasons)
			if err != nil {
				return fmt.Errorf("encode unplaced reasons: %w", err)
			}
			place = append(place, []any{id, exec, int32(p.Placed), int32(p.Unplaced), string(reasons)})
		}
		if o.walk != nil {
			walks = append(walks, []any{id, o.walk.exec, o.walk.at})
		}
		if a := o.seen[o.attempt]; a != nil {
			seen = append(seen, []any{id, o.attempt, int64(a.seq), a.pons, a.onus, a.rx})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"execution_placement"}, []string{"olt_id", "execution_id", "placed_varbinds", "unplaced_varbinds", "unplaced_reasons"},
		pgx.CopyFromRows(place)); err != nil {
		return fmt.Errorf("copy %d execution placements: %w", len(place), err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"onu_walks"}, []string{"olt_id", "execution_id", "seen_at"}, pgx.CopyFromRows(walks)); err != nil {
		return fmt.Errorf("copy %d walks: %w", len(walks), err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"onu_walk_seen"}, []string{"olt_id", "attempt", "seq", "pon_index", "onu_id", "rx_read"}, pgx.CopyFromRows(seen)); err != nil {
		return fmt.Errorf("copy %d walk records: %w", len(seen), err)
	}
	return nil
}

// foldTrap is a decoded trap that sets an ONU's status.
type foldTrap struct {
	seq    uint64
	stored time.Time // when the stream stored it
	ev     streams.TrapDecoded
}

// decodeTraps decodes a run of traps as the source's decoder does (its
// counts are the batch path's: a trap.received is applied, it writes the
// traps table), keeping the decoded traps that set an ONU's status.
func (f *onuFold) decodeTraps(msgs []jsrouter.Msg) (any, projection.BatchResult, error) {
	var res projection.BatchResult
	var out []foldTrap
	decode := projection.SubjectChecked(f.p.decodeTrap)
	for _, m := range msgs {
		if _, err := decode(m); err != nil {
			if !errors.Is(err, streams.ErrMalformed) {
				return nil, res, fmt.Errorf("decode %s seq %d: %w", m.Stream, m.Seq, err)
			}
			res.Malformed++
			continue
		}
		res.Applied++
		env, err := streams.DecodeEnvelope(m.Data)
		if err != nil || env.Type != streams.TypeTrapDecoded {
			continue
		}
		var e streams.TrapDecoded
		if err := streams.DecodeData(env, &e); err != nil {
			continue
		}
		if streams.TrapONUStatus(e.Kind) == "" || e.PonIndex == nil || e.ONUID == nil {
			continue
		}
		out = append(out, foldTrap{seq: m.Seq, stored: m.Time, ev: e})
	}
	return out, res, nil
}

// applyTraps applies the OLT's held traps the stream stored before
// (zero: all of them).
func (o *oltFold) applyTraps(before time.Time) {
	n := 0
	for n < len(o.traps) && (before.IsZero() || o.traps[n].stored.Before(before)) {
		o.applyTrap(&o.traps[n])
		n++
	}
	o.traps = o.traps[n:]
}

// applyTrap is applyTrapStatus in memory.
func (o *oltFold) applyTrap(t *foldTrap) {
	e := &t.ev
	k := ONUKey{PonIndex: *e.PonIndex, ONUID: *e.ONUID}
	r, ok := o.onus[k]
	switch {
	case !ok || r.RemovedAt != nil:
		return // an ONU no poll found: traps do not create ONUs
	case !r.LastSeen.Before(e.At):
		return // a poll read it after the trap: the poll stands
	case o.trapSeq[k] >= t.seq:
		return // a newer trap of the ONU stands
	}
	old := r.State
	cur, at, changed := trapState(old, *e)
	if !changed {
		return
	}
	r.State = cur
	o.trapSeq[k] = t.seq
	prev, next := historyFields(old), historyFields(cur)
	for i, name := range historyFieldNames {
		if prev[i] != next[i] {
			o.hist = append(o.hist, foldHistoryRow{field: name, trap: true, pon: k.PonIndex, onu: k.ONUID, seq: -int64(t.seq), old: prev[i], cur: next[i], at: at})
		}
	}
}
