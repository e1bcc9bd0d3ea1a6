package projector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// healthMetrics count what the health projection applied.
type healthMetrics struct {
	readings prometheus.Counter
	changes  *prometheus.CounterVec // by component
}

func newHealthMetrics(reg prometheus.Registerer) (*healthMetrics, error) {
	m := healthCounters()
	if reg == nil {
		return m, nil
	}
	// jsrouter.Register reuses a collector a previous run registered
	// (a restarted projector on the same registry).
	if err := errors.Join(jsrouter.Register(reg, &m.readings), jsrouter.Register(reg, &m.changes)); err != nil {
		return nil, fmt.Errorf("register projector health metrics: %w", err)
	}
	return m, nil
}

// healthCounters are the health projection's counters, registered nowhere.
func healthCounters() *healthMetrics {
	return &healthMetrics{
		readings: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_health_readings_applied_total", Help: "OLT health readings applied to olt_health (older or redelivered ones are not counted).",
		}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_health_changes_total", Help: "State changes recorded in olt_health_history, by component (fan, psu, pon, uplink).",
		}, []string{"component"}),
	}
}

// healthReadModel is `facho rebuild olt_health`: the health tables from the
// readings on FACHO_OLT, through the live decoder (its counters registered
// nowhere: a rebuild does not move the live metrics). A reading touches
// its OLT's rows only, so OLTs are applied in parallel.
func (p *projector) healthReadModel() projection.ReadModel {
	return projection.ReadModel{
		Name:        ReadModelOLTHealth,
		Description: "each OLT's last health reading, its PON ports and the history of their state changes, from the health readings",
		Sources: []projection.Source{
			{Stream: streams.StreamOLT, Consumer: streams.ConsumerProjectorHealth, Decode: projection.SubjectChecked(p.decodeHealth(healthCounters())),
				Partition: projection.SubjectToken(2)}, // facho.olt.<olt>.health
		},
		Tables: []projection.Table{
			// updated_at is the projection's clock.
			{Name: "olt_health", Key: []string{"olt_id"}, Ignore: []string{"updated_at"}},
			{Name: "olt_pon_health", Key: []string{"olt_id", "idx"}},
			// A change is one field of one row of one reading
			// (uniqueHealthRows); the id is the live sequence's.
			{Name: "olt_health_history", Key: []string{"olt_id", "stream_seq", "component", "idx", "field"},
				Ignore: []string{"id"}, Generated: []string{"id"}},
		},
	}
}

// decodeHealth projects an OLT's health readings (consumer projector-health
// on FACHO_OLT) into olt_health, olt_pon_health and olt_health_history. The
// reading's stream sequence is stored in olt_health in the same transaction,
// so an older or redelivered reading changes nothing. A table the reading
// does not cover keeps what an earlier reading stored.
func (p *projector) decodeHealth(m *healthMetrics) func(jsrouter.Msg) (projection.Change, error) {
	return func(msg jsrouter.Msg) (projection.Change, error) {
		env, err := streams.DecodeEnvelope(msg.Data)
		if err != nil {
			return projection.Change{}, err
		}
		if env.Type != streams.TypeOLTHealth {
			return projection.Change{}, fmt.Errorf("%w: %s on %s", streams.ErrMalformed, env.Type, msg.Subject)
		}
		var e streams.OLTHealth
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.OLTID); err != nil {
			return projection.Change{}, err
		}
		if err := e.Validate(); err != nil {
			return projection.Change{}, fmt.Errorf("%w: olt.health: %w", streams.ErrMalformed, err)
		}
		if err := uniqueHealthRows(e); err != nil {
			return projection.Change{}, fmt.Errorf("%w: olt.health: %w", streams.ErrMalformed, err)
		}
		seq := int64(msg.Seq)
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			n, err := applyHealth(ctx, tx, e, seq, m)
			if err != nil {
				return err
			}
			if n >= 0 {
				m.readings.Inc()
			}
			return nil
		}}, nil
	}
}

// uniqueHealthRows refuses a reading that reports a row twice in a table
// (the poller joins each table's columns by row, so it never does): a
// row's changes are keyed by the reading, the component, the row and the
// field, which is how a rebuild matches olt_health_history rows with the
// live ones (their ids differ).
func uniqueHealthRows(e streams.OLTHealth) error {
	check := func(table string, idx []string) error {
		seen := make(map[string]bool, len(idx))
		for _, i := range idx {
			if seen[i] {
				return fmt.Errorf("%s row %q reported twice", table, i)
			}
			seen[i] = true
		}
		return nil
	}
	var errs []error
	units := func(table string, us []streams.UnitHealth) {
		idx := make([]string, len(us))
		for i, u := range us {
			idx[i] = u.Index
		}
		errs = append(errs, check(table, idx))
	}
	units(streams.HealthFans, e.Fans)
	units(streams.HealthPSUs, e.PSUs)
	pons := make([]string, len(e.PONs))
	for i, p := range e.PONs {
		pons[i] = p.Index
	}
	errs = append(errs, check(streams.HealthPONs, pons))
	ups := make([]string, len(e.Uplinks))
	for i, u := range e.Uplinks {
		ups[i] = u.Index
	}
	errs = append(errs, check(streams.HealthUplinks, ups))
	return errors.Join(errs...)
}

// healthChange is one olt_health_history row.
type healthChange struct {
	component, idx, name, field, old, new string
}

// storedHealth is the olt_health row of an OLT before a reading.
type storedHealth struct {
	seq                   int64
	tables                []string
	cpu, mem, temp        *float64
	boards                int
	fans, psus, uplinksJS []byte
}

// applyHealth applies one reading; it returns the history rows written,
// -1 when the reading is older than the stored one.
func applyHealth(ctx context.Context, tx pgx.Tx, e streams.OLTHealth, seq int64, m *healthMetrics) (int, error) {
	var old storedHealth
	err := tx.QueryRow(ctx, `SELECT stream_seq, tables, cpu_percent, memory_percent, temperature_c, boards, fans, psus, uplinks
		FROM olt_health WHERE olt_id = $1 FOR UPDATE`, e.OLTID).Scan(&old.seq, &old.tables, &old.cpu, &old.mem, &old.temp, &old.boards,
		&old.fans, &old.psus, &old.uplinksJS)
	first := errors.Is(err, pgx.ErrNoRows)
	if err != nil && !first {
		return 0, wrap(err, "read olt_health of %s", e.OLTID)
	}
	if !first && old.seq >= seq {
		return -1, nil
	}
	var changes []healthChange
	fans, psus, uplinks := e.Fans, e.PSUs, e.Uplinks
	var oldFans, oldPSUs []streams.UnitHealth
	var oldUplinks []streams.UplinkHealth
	if !first {
		// What the row holds was written by this code from valid readings.
		_ = json.Unmarshal(old.fans, &oldFans)
		_ = json.Unmarshal(old.psus, &oldPSUs)
		_ = json.Unmarshal(old.uplinksJS, &oldUplinks)
	}
	if e.Has(streams.HealthFans) {
		changes = append(changes, unitChanges("fan", oldFans, fans, first)...)
	} else {
		fans = oldFans
	}
	if e.Has(streams.HealthPSUs) {
		changes = append(changes, unitChanges("psu", oldPSUs, psus, first)...)
	} else {
		psus = oldPSUs
	}
	if e.Has(streams.HealthUplinks) {
		changes = append(changes, uplinkChanges(oldUplinks, uplinks, first)...)
	} else {
		uplinks = oldUplinks
	}
	cpu, mem, temp, boards := old.cpu, old.mem, old.temp, old.boards
	if e.Has(streams.HealthChassis) && e.Chassis != nil {
		cpu, mem, temp, boards = e.Chassis.CPUPercent, e.Chassis.MemoryPercent, e.Chassis.TemperatureC, e.Chassis.Boards
	}
	if e.Has(streams.HealthPONs) {
		pc, err := applyPONHealth(ctx, tx, e, first)
		if err != nil {
			return 0, err
		}
		changes = append(changes, pc...)
	}
	tables := e.Tables
	for _, t := range old.tables {
		if !e.Has(t) {
			tables = append(tables, t)
		}
	}
	fansJS, psusJS, upJS := jsonList(fans), jsonList(psus), jsonList(uplinks)
	_, err = tx.Exec(ctx, `INSERT INTO olt_health (olt_id, execution_id, job_id, observed_at, tables, cpu_percent, memory_percent, temperature_c,
			boards, fans, psus, uplinks, fans_failed, psus_failed, pons_down, updated_at, stream_seq)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
			(SELECT count(*) FROM olt_pon_health WHERE olt_id = $1 AND admin_state <> 'down' AND oper_state = 'down'), now(), $15)
		ON CONFLICT (olt_id) DO UPDATE SET execution_id = EXCLUDED.execution_id, job_id = EXCLUDED.job_id, observed_at = EXCLUDED.observed_at,
			tables = EXCLUDED.tables, cpu_percent = EXCLUDED.cpu_percent, memory_percent = EXCLUDED.memory_percent,
			temperature_c = EXCLUDED.temperature_c, boards = EXCLUDED.boards, fans = EXCLUDED.fans, psus = EXCLUDED.psus,
			uplinks = EXCLUDED.uplinks, fans_failed = EXCLUDED.fans_failed, psus_failed = EXCLUDED.psus_failed,
			pons_down = EXCLUDED.pons_down, updated_at = EXCLUDED.updated_at, stream_seq = EXCLUDED.stream_seq`,
		e.OLTID, e.ExecutionID, e.JobID, e.ObservedAt, tables, cpu, mem, temp, boards, fansJS, psusJS, upJS,
		failedUnits(fans), failedUnits(psus), seq)
	if err != nil {
		return 0, wrap(err, "upsert olt_health of %s", e.OLTID)
	}
	for _, c := range changes {
		if _, err := tx.Exec(ctx, `INSERT INTO olt_health_history (olt_id, component, idx, name, field, old_value, new_value, observed_at, stream_seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, e.OLTID, c.component, c.idx, pgText(c.name), c.field, c.old, c.new, e.ObservedAt, seq); err != nil {
			return 0, wrap(err, "insert olt_health_history of %s", e.OLTID)
		}
		m.changes.WithLabelValues(c.component).Inc()
	}
	if len(changes) > 0 {
		// Bounded: the newest maxHealthHistory changes of each OLT are kept.
		// Ordered by what the rows hold, not by id: a rebuild (facho
		// rebuild olt_health) gives the rows other ids, and must keep
		// the same ones.
		if _, err := tx.Exec(ctx, `DELETE FROM olt_health_history WHERE id IN (SELECT id FROM olt_health_history WHERE olt_id = $1
			ORDER BY observed_at DESC, stream_seq DESC, component, idx, field OFFSET $2)`, e.OLTID, maxHealthHistory); err != nil {
			return 0, wrap(err, "trim olt_health_history of %s", e.OLTID)
		}
	}
	return len(changes), nil
}

// maxHealthHistory is how many state changes of one OLT olt_health_history
// keeps (the newest).
const maxHealthHistory = 1000

// applyPONHealth upserts the reading's PON ports, deletes those it no longer
// reports, and returns their state changes.
func applyPONHealth(ctx context.Context, tx pgx.Tx, e streams.OLTHealth, first bool) ([]healthChange, error) {
	type ponState struct{ name, admin, oper string }
	rows, err := tx.Query(ctx, `SELECT idx, name, admin_state, oper_state FROM olt_pon_health WHERE olt_id = $1 FOR UPDATE`, e.OLTID)
	if err != nil {
		return nil, wrap(err, "read olt_pon_health of %s", e.OLTID)
	}
	old := map[string]ponState{}
	for rows.Next() {
		var idx string
		var s ponState
		if err := rows.Scan(&idx, &s.name, &s.admin, &s.oper); err != nil {
			rows.Close()
			return nil, wrap(err, "read olt_pon_health of %s", e.OLTID)
		}
		old[idx] = s
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "read olt_pon_health of %s", e.OLTID)
	}
	var changes []healthChange
	batch := &pgx.Batch{}
	for _, p := range e.PONs {
		o, had := old[p.Index]
		delete(old, p.Index)
		switch {
		case had:
			changes = appendChange(changes, "pon", p.Index, p.Name, streams.HFAdminState, o.admin, p.AdminState)
			changes = appendChange(changes, "pon", p.Index, p.Name, streams.HFOperState, o.oper, p.OperState)
		case !first:
			changes = append(changes, healthChange{"pon", p.Index, p.Name, streams.HFOperState, "", p.OperState})
		case p.OperState == streams.PortDown && p.AdminState != streams.PortDown:
			changes = append(changes, healthChange{"pon", p.Index, p.Name, streams.HFOperState, "", p.OperState})
		}
		batch.Queue(`INSERT INTO olt_pon_health (olt_id, idx, pon_index, name, admin_state, oper_state, tx_power_dbm, rx_power_dbm,
				temperature_c, onu_count, observed_at, changed_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
			ON CONFLICT (olt_id, idx) DO UPDATE SET pon_index = EXCLUDED.pon_index, name = EXCLUDED.name,
				admin_state = EXCLUDED.admin_state, oper_state = EXCLUDED.oper_state, tx_power_dbm = EXCLUDED.tx_power_dbm,
				rx_power_dbm = EXCLUDED.rx_power_dbm, temperature_c = EXCLUDED.temperature_c, onu_count = EXCLUDED.onu_count,
				observed_at = EXCLUDED.observed_at,
				changed_at = CASE WHEN olt_pon_health.admin_state IS DISTINCT FROM EXCLUDED.admin_state
					OR olt_pon_health.oper_state IS DISTINCT FROM EXCLUDED.oper_state THEN EXCLUDED.observed_at ELSE olt_pon_health.changed_at END`,
			e.OLTID, p.Index, p.PonIndex, pgText(p.Name), p.AdminState, p.OperState, p.TxPowerDBm, p.RxPowerDBm, p.TemperatureC, p.ONUCount, e.ObservedAt)
	}
	for idx, o := range old {
		changes = append(changes, healthChange{"pon", idx, o.name, streams.HFOperState, o.oper, ""})
		batch.Queue(`DELETE FROM olt_pon_health WHERE olt_id = $1 AND idx = $2`, e.OLTID, idx)
	}
	if batch.Len() > 0 {
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return nil, wrap(err, "write olt_pon_health of %s", e.OLTID)
		}
	}
	return changes, nil
}

func appendChange(out []healthChange, component, idx, name, field, old, new string) []healthChange {
	if old == new {
		return out
	}
	return append(out, healthChange{component, idx, name, field, old, new})
}

// unitChanges are the status changes of fans or PSUs; on an OLT's first
// reading only the units not ok are recorded.
func unitChanges(component string, old, cur []streams.UnitHealth, first bool) []healthChange {
	prev := map[string]streams.UnitHealth{}
	for _, u := range old {
		prev[u.Index] = u
	}
	var out []healthChange
	for _, u := range cur {
		o, had := prev[u.Index]
		delete(prev, u.Index)
		switch {
		case had:
			out = appendChange(out, component, u.Index, u.Name, streams.HFStatus, o.Status, u.Status)
		case !first || u.Status != streams.UnitOK:
			out = append(out, healthChange{component, u.Index, u.Name, streams.HFStatus, "", u.Status})
		}
	}
	for _, u := range old {
		if _, gone := prev[u.Index]; gone {
			out = append(out, healthChange{component, u.Index, u.Name, streams.HFStatus, u.Status, ""})
		}
	}
	return out
}

// uplinkChanges are the admin and oper state changes of uplinks.
func uplinkChanges(old, cur []streams.UplinkHealth, first bool) []healthChange {
	prev := map[string]streams.UplinkHealth{}
	for _, u := range old {
		prev[u.Index] = u
	}
	var out []healthChange
	for _, u := range cur {
		o, had := prev[u.Index]
		delete(prev, u.Index)
		switch {
		case had:
			out = appendChange(out, "uplink", u.Index, u.Name, streams.HFAdminState, o.AdminState, u.AdminState)
			out = appendChange(out, "uplink", u.Index, u.Name, streams.HFOperState, o.OperState, u.OperState)
		case !first || (u.OperState == streams.PortDown && u.AdminState != streams.PortDown):
			out = append(out, healthChange{"uplink", u.Index, u.Name, streams.HFOperState, "", u.OperState})
		}
	}
	for _, u := range old {
		if _, gone := prev[u.Index]; gone {
			out = append(out, healthChange{"uplink", u.Index, u.Name, streams.HFOperState, u.OperState, ""})
		}
	}
	return out
}

func failedUnits(us []streams.UnitHealth) int {
	n := 0
	for _, u := range us {
		if u.Status == streams.UnitFailed {
			n++
		}
	}
	return n
}

// jsonList is a list as JSON, [] for none (the column is NOT NULL).
func jsonList[T any](l []T) []byte {
	if len(l) == 0 {
		return []byte("[]")
	}
	b, err := json.Marshal(l)
	if err != nil {
		return []byte("[]")
	}
	return b
}
