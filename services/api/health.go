package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/streams"
)

// ensureHealth publishes the OIDs and the health job (kind health) of p's
// health section when absent, and returns what it created; nothing without
// a health section.
func (s *server) ensureHealth(r *http.Request, p profiles.Profile) ([]string, *apiError) {
	created := []string{}
	if p.Health == nil {
		return created, nil
	}
	var ids []string
	tables := p.Health.Tables()
	for _, table := range streams.HealthTables() {
		for _, c := range tables[table] {
			o := streams.OIDUpserted{ID: p.HealthOIDID(table, c.Field), BrandID: p.ID, Name: profiles.HealthColumnName(table, c),
				OID: c.OID, Field: streams.HealthField(table, c.Field), Decoder: c.Decoder}
			ids = append(ids, o.ID)
			if ok, aerr := createIfAbsent(s, r, streams.SubjectOID(o.ID), o); aerr != nil {
				return nil, aerr
			} else if ok {
				created = append(created, "oid "+o.ID)
			}
		}
	}
	job := streams.JobUpserted{ID: p.JobID(profiles.HealthJobID), Name: p.Name + " OLT health", BrandID: p.ID, Kind: streams.KindHealth,
		OIDIDs: ids, IntervalSeconds: p.Health.Interval(), RetryDelaySeconds: 300, TimeoutSeconds: p.Health.TimeoutSeconds,
		Priority: 30, Enabled: true}
	if ok, aerr := createIfAbsent(s, r, streams.SubjectJob(job.ID), job); aerr != nil {
		return nil, aerr
	} else if ok {
		created = append(created, "job "+job.ID)
	}
	return created, nil
}

// profileJobIDs are the ids of every default job of p: its jobs, then its
// health job.
func profileJobIDs(p profiles.Profile) []string {
	var out []string
	for _, j := range p.Jobs {
		out = append(out, p.JobID(j.ID))
	}
	if p.Health != nil {
		out = append(out, p.JobID(profiles.HealthJobID))
	}
	return out
}

// healthView is GET /api/v1/olts/{id}/health: the OLT's last health
// reading (olt_health) and its recent state changes.
type healthView struct {
	OLTID       string                 `json:"olt_id"`
	ObservedAt  time.Time              `json:"observed_at"`
	ExecutionID string                 `json:"execution_id"`
	JobID       string                 `json:"job_id"`
	Tables      []string               `json:"tables"`
	Chassis     chassisView            `json:"chassis"`
	Fans        []streams.UnitHealth   `json:"fans"`
	PSUs        []streams.UnitHealth   `json:"psus"`
	Uplinks     []streams.UplinkHealth `json:"uplinks"`
	FansFailed  int                    `json:"fans_failed"`
	PSUsFailed  int                    `json:"psus_failed"`
	PONsDown    int                    `json:"pons_down"`
	Changes     []healthChangeView     `json:"changes"`
}

type chassisView struct {
	CPUPercent    *float64 `json:"cpu_percent"`
	MemoryPercent *float64 `json:"memory_percent"`
	TemperatureC  *float64 `json:"temperature_c"`
	Boards        int      `json:"boards"`
}

// healthChangeView is one olt_health_history row.
type healthChangeView struct {
	Component  string    `json:"component"`
	Index      string    `json:"index"`
	Name       string    `json:"name"`
	Field      string    `json:"field"`
	Old        string    `json:"old"`
	New        string    `json:"new"`
	ObservedAt time.Time `json:"observed_at"`
}

// healthChangesShown bounds the changes GET .../health returns.
const healthChangesShown = 50

// getOLTHealth is GET /api/v1/olts/{id}/health.
func (s *server) getOLTHealth(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("id")
	if aerr := s.knownOLT(r, id); aerr != nil {
		return aerr
	}
	v, found, aerr := s.oltHealth(r, id)
	if aerr != nil {
		return aerr
	}
	if !found {
		return notFound("no health reading of OLT %s yet (its profile's health job runs every few minutes; a profile without a health section has none)", id)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// oltHealth reads the health view of OLT id; false when it has no reading.
func (s *server) oltHealth(r *http.Request, id string) (healthView, bool, *apiError) {
	ctx, cancel := s.query(r)
	defer cancel()
	v := healthView{OLTID: id}
	var fans, psus, uplinks []byte
	err := s.deps.DB.QueryRow(ctx, `SELECT observed_at, execution_id, job_id, tables, cpu_percent, memory_percent, temperature_c, boards,
			fans, psus, uplinks, fans_failed, psus_failed,
			(SELECT count(*) FROM olt_pon_health p WHERE p.olt_id = h.olt_id AND p.admin_state <> 'down' AND p.oper_state = 'down')
		FROM olt_health h WHERE olt_id = $1`, id).Scan(&v.ObservedAt, &v.ExecutionID, &v.JobID, &v.Tables, &v.Chassis.CPUPercent,
		&v.Chassis.MemoryPercent, &v.Chassis.TemperatureC, &v.Chassis.Boards, &fans, &psus, &uplinks, &v.FansFailed, &v.PSUsFailed, &v.PONsDown)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, false, nil
	}
	if err != nil {
		return v, false, s.readModelDown(err)
	}
	if err := errors.Join(json.Unmarshal(fans, &v.Fans), json.Unmarshal(psus, &v.PSUs), json.Unmarshal(uplinks, &v.Uplinks)); err != nil {
		return v, false, s.readModelDown(err)
	}
	v.Fans, v.PSUs, v.Uplinks = nonNil(v.Fans), nonNil(v.PSUs), nonNil(v.Uplinks)
	changes, aerr := listRows[healthChangeView](s, r, `SELECT component, idx, name, field, old_value, new_value, observed_at
		FROM olt_health_history WHERE olt_id = $1 ORDER BY observed_at DESC, id DESC LIMIT $2`, id, healthChangesShown)
	if aerr != nil {
		return v, false, aerr
	}
	v.Changes = changes
	return v, true, nil
}

// ponHealthRow is a PON row of GET .../pons with the health keys of its
// port (null when the OLT's health tables do not report it).
type ponHealthRow struct {
	ponRow
	PortIndex        *string    `json:"port_index"`
	AdminState       *string    `json:"admin_state"`
	OperState        *string    `json:"oper_state"`
	TxPowerDBm       *float64   `json:"tx_power_dbm"`
	RxPowerDBm       *float64   `json:"rx_power_dbm"`
	TemperatureC     *float64   `json:"temperature_c"`
	ONUCountReported *int64     `json:"onu_count_reported"`
	HealthObservedAt *time.Time `json:"health_observed_at"`
	StateChangedAt   *time.Time `json:"state_changed_at"`
}

// ponHealth is one olt_pon_health row.
type ponHealth struct {
	PonIndex    int64
	Index       string
	Name        string
	Admin, Oper string
	Tx, Rx, Tmp *float64
	ONUs        *int64
	Observed    time.Time
	Changed     time.Time
}

// withPONHealth adds the health keys to the PON rows of olt, and a row for
// each port the health tables report that has no ONU.
func (s *server) withPONHealth(r *http.Request, olt string, rows []ponRow) ([]ponHealthRow, *apiError) {
	hs, aerr := listRows[ponHealth](s, r, `SELECT pon_index, idx, name, admin_state, oper_state, tx_power_dbm, rx_power_dbm, temperature_c,
		onu_count, observed_at, changed_at FROM olt_pon_health WHERE olt_id = $1 ORDER BY pon_index, idx LIMIT 4096`, olt)
	if aerr != nil {
		return nil, aerr
	}
	byIndex := map[int64]ponHealth{}
	for _, h := range hs {
		byIndex[h.PonIndex] = h
	}
	out := make([]ponHealthRow, 0, len(rows)+len(hs))
	attach := func(row ponRow, h ponHealth) ponHealthRow {
		idx, admin, oper, obs, changed := h.Index, h.Admin, h.Oper, h.Observed, h.Changed
		return ponHealthRow{ponRow: row, PortIndex: &idx, AdminState: &admin, OperState: &oper, TxPowerDBm: h.Tx, RxPowerDBm: h.Rx,
			TemperatureC: h.Tmp, ONUCountReported: h.ONUs, HealthObservedAt: &obs, StateChangedAt: &changed}
	}
	for _, row := range rows {
		h, ok := byIndex[row.PonIndex]
		if !ok {
			out = append(out, ponHealthRow{ponRow: row})
			continue
		}
		delete(byIndex, row.PonIndex)
		out = append(out, attach(row, h))
	}
	for _, h := range hs {
		if _, left := byIndex[h.PonIndex]; !left || h.PonIndex < 0 {
			continue
		}
		delete(byIndex, h.PonIndex)
		name := h.Name
		if name == "" {
			name = h.Index
		}
		out = append(out, attach(ponRow{PonIndex: h.PonIndex, Pon: name}, h))
	}
	return out, nil
}

// healthRouteDocs documents the routes of this file.
func healthRouteDocs() map[string]routeDoc {
	return map[string]routeDoc{
		"GET /api/v1/olts/{id}/health": {Summary: "The OLT's last health reading (its profile's health job): observed_at, tables read, chassis (cpu_percent, memory_percent, temperature_c: the highest over its boards; boards), fans and psus (index, name, status ok/failed/absent/unknown), uplinks (index, name, admin_state, oper_state, in_errors, out_errors), fans_failed, psus_failed, pons_down, and the last 50 state changes (changes). PON ports: GET /api/v1/olts/{id}/pons. 404 before the first reading", Tag: "olts", Resp: healthView{}},
	}
}
