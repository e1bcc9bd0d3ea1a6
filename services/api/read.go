package api

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/streams"
)

// intParam reads an optional non-negative integer query parameter.
func intParam(r *http.Request, name string, def, max int) (int, *apiError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > max {
		return 0, badField(name, "%s must be an integer 0..%d", name, max)
	}
	return n, nil
}

var statusRE = regexp.MustCompile(`^[A-Z_]{1,32}$`)

// statusParam reads an optional status filter (case-insensitive).
func statusParam(r *http.Request) (string, *apiError) {
	v := strings.ToUpper(r.URL.Query().Get("status"))
	if v != "" && !statusRE.MatchString(v) {
		return "", badField("status", "status must be a status name such as ONLINE")
	}
	return v, nil
}

// causeParam reads the optional cause filter of the executions: one of
// streams.ExecCauses.
func causeParam(r *http.Request) (string, *apiError) {
	v := r.URL.Query().Get("cause")
	if v != "" && !slices.Contains(streams.ExecCauses(), v) {
		return "", badField("cause", "cause must be one of %s", strings.Join(streams.ExecCauses(), ", "))
	}
	return v, nil
}

// idParam reads an optional id query parameter.
func idParam(r *http.Request, name string) (string, *apiError) {
	v := r.URL.Query().Get(name)
	if v != "" && !streams.ValidID(v) {
		return "", badField(name, "%s is not a valid id", name)
	}
	return v, nil
}

func (s *server) query(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.QueryTimeout)
}

// listRows runs a read-model query and maps each row onto T by position:
// T's fields are in the order of the query's columns.
func listRows[T any](s *server, r *http.Request, sql string, args ...any) ([]T, *apiError) {
	ctx, cancel := s.query(r)
	defer cancel()
	rows, err := s.deps.DB.Query(ctx, sql, args...)
	if err != nil {
		return nil, s.readModelDown(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[T])
	if err != nil {
		return nil, s.readModelDown(err)
	}
	return nonNil(out), nil
}

func (s *server) readModelDown(err error) *apiError {
	s.deps.Log.Warn().Err(err).Msg("query read model")
	return unavailable("read model")
}

type oltRow struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	IP          string `json:"ip"`
	Port        int    `json:"port"`
	BrandID     string `json:"brand_id"`
	Enabled     bool   `json:"enabled"`
	Description string `json:"description"`
	// DisabledReason and DisabledAt: an auto-disable by the planner.
	DisabledReason string     `json:"disabled_reason,omitempty"`
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
	UpdatedAt      time.Time  `json:"updated_at"`
	ONUs           int        `json:"onus"`
	Online         int        `json:"onus_online"`
	// Availability (available, unreachable, unavailable; null when never
	// probed), since when, and the last unanswered request's error (null
	// when available): the olt_availability read model.
	Availability      *string    `json:"availability"`
	AvailabilitySince *time.Time `json:"availability_since"`
	AvailabilityError *string    `json:"availability_error"`
}

const oltCols = `id, name, ip, port, brand_id, enabled, description, disabled_reason, disabled_at, updated_at,
	(SELECT count(*) FROM onu_data d WHERE d.olt_id = olts.id),
	(SELECT count(*) FROM onu_data d WHERE d.olt_id = olts.id AND d.status = 'ONLINE'),
	(SELECT a.state FROM olt_availability a WHERE a.olt_id = olts.id),
	(SELECT a.since FROM olt_availability a WHERE a.olt_id = olts.id),
	(SELECT NULLIF(a.last_error, '') FROM olt_availability a WHERE a.olt_id = olts.id)`

// listOLTs lists the OLTs of the read model (deleted ones excluded).
func (s *server) listOLTs(w http.ResponseWriter, r *http.Request) *apiError {
	brand, aerr := idParam(r, "brand_id")
	if aerr != nil {
		return aerr
	}
	enabled, aerr := boolParam(r, "enabled")
	if aerr != nil {
		return aerr
	}
	spec := listSpec{From: "olts", Cols: oltCols, Search: []string{"id", "name", "ip", "description"},
		Sorts:       map[string]string{"id": "id", "name": "name", "ip": "ip", "brand_id": "brand_id", "enabled": "enabled", "updated_at": "updated_at"},
		DefaultSort: "name", TieBreak: "id", Where: []string{"NOT deleted"}}
	if brand != "" {
		spec.filter("brand_id = $?", brand)
	}
	if enabled != nil {
		spec.filter("enabled = $?", *enabled)
	}
	olts, pi, aerr := listPage[oltRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("olts", olts, len(olts)))
	return nil
}

type onuRow struct {
	PonIndex    int64     `json:"pon_index"`
	ONUID       int64     `json:"onu_id"`
	Serial      string    `json:"serial"`
	Description string    `json:"description"`
	Status      string    `json:"status"`
	RxPowerDBm  *float64  `json:"rx_power_dbm"`
	FirstSeen   time.Time `json:"first_seen"`
	LastSeen    time.Time `json:"last_seen"`
	// Vendor profile fields (null or "" where the vendor has no such
	// column or no reading): the raw row index and the human port name.
	ONUIndex      string     `json:"onu_index"`
	PortName      string     `json:"port_name"`
	Name          string     `json:"name"`
	TxPowerDBm    *float64   `json:"tx_power_dbm"`
	OLTRxPowerDBm *float64   `json:"olt_rx_power_dbm"`
	DistanceM     *float64   `json:"distance_m"`
	TemperatureC  *float64   `json:"temperature_c"`
	VoltageV      *float64   `json:"voltage_v"`
	BiasMA        *float64   `json:"bias_ma"`
	LastDownCause string     `json:"last_down_cause"`
	LastDownAt    *time.Time `json:"last_down_at"`
	LastUpAt      *time.Time `json:"last_up_at"`
	Model         string     `json:"model"`
	Firmware      string     `json:"firmware"`
	// RemovedAt: a complete walk of the OLT's ONU table did not find it.
	RemovedAt *time.Time `json:"removed_at"`
}

// listONUs lists the ONUs of one OLT from onu_data, ordered by PON and
// ONU; 404 for an OLT that does not exist.
func (s *server) listONUs(w http.ResponseWriter, r *http.Request) *apiError {
	olt := r.PathValue("id")
	if aerr := s.knownOLT(r, olt); aerr != nil {
		return aerr
	}
	status, aerr := statusParam(r)
	if aerr != nil {
		return aerr
	}
	spec := listSpec{From: onuFrom, Cols: onuCols,
		Search: []string{"d.serial", "d.description", "d.port_name", "d.name"},
		Sorts: map[string]string{"pon_index": "d.pon_index, d.onu_id", "onu_id": "d.onu_id", "port_name": "d.port_name", "serial": "d.serial", "description": "d.description",
			"status": "d.status", "rx_power_dbm": "d.rx_power_dbm", "first_seen": "d.first_seen", "last_seen": onuLastSeen},
		DefaultSort: "d.pon_index, d.onu_id", TieBreak: "d.pon_index, d.onu_id", DefaultLimit: 1000, MaxLimit: 10000}
	spec.filter("d.olt_id = $?", olt)
	if status != "" {
		spec.filter("d.status = $?", status)
	}
	onus, pi, aerr := listPage[onuRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	body := pi.body("onus", onus, len(onus))
	body["olt_id"] = olt
	writeJSON(w, http.StatusOK, body)
	return nil
}

type executionRow struct {
	ID          string     `json:"id"`
	JobID       string     `json:"job_id"`
	OLTID       string     `json:"olt_id"`
	Status      string     `json:"status"`
	Attempt     int        `json:"attempt"`
	PollerID    string     `json:"poller_id"`
	ScheduledAt *time.Time `json:"scheduled_at"`
	StartedAt   *time.Time `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	DurationMS  *int64     `json:"duration_ms"`
	Varbinds    int        `json:"varbinds"`
	Error       string     `json:"error"`
	UpdatedAt   time.Time  `json:"updated_at"`
	// PlacedVarbinds and UnplacedVarbinds: the execution's varbinds the
	// projector placed in an ONU field, and those it could not (by reason:
	// bad_index, unknown_column, undecodable, wrong_type, no_value,
	// unknown_field).
	PlacedVarbinds   int            `json:"placed_varbinds"`
	UnplacedVarbinds int            `json:"unplaced_varbinds"`
	UnplacedReasons  map[string]int `json:"unplaced_reasons"`
	// Cause: why the execution failed, machine readable (execution.failed's
	// cause: timeout, snmp_error, oid_not_increasing, empty_read,
	// no_onus_known, profile_mismatch, ...); null unless it failed with one.
	// Error is the operator's text.
	Cause *string `json:"cause"`
	// ONUs, FailedONUs and FailedVarbinds: of a GET run, the ONUs it read,
	// those it could not read whole and the OIDs not read (the first of
	// those ONUs are listed in GET /api/v1/executions/{id}'s onu_failures).
	ONUs           int `json:"onus"`
	FailedONUs     int `json:"failed_onus"`
	FailedVarbinds int `json:"failed_varbinds"`
}

// onuFailureRow is one ONU a GET run could not read whole (streams.ONUFailure).
type onuFailureRow struct {
	Instance string   `json:"instance"`
	PonIndex *int64   `json:"pon_index"`
	ONUID    *int64   `json:"onu_id"`
	OIDs     []string `json:"oids"`
	Error    string   `json:"error"`
}

const executionCols = `id, job_id, olt_id, status, attempt, poller_id, scheduled_at, started_at,
	finished_at, duration_ms, varbinds, error, updated_at,
	COALESCE((SELECT p.placed_varbinds FROM execution_placement p WHERE p.olt_id = executions.olt_id AND p.execution_id = executions.id), 0),
	COALESCE((SELECT p.unplaced_varbinds FROM execution_placement p WHERE p.olt_id = executions.olt_id AND p.execution_id = executions.id), 0),
	COALESCE((SELECT p.unplaced_reasons FROM execution_placement p WHERE p.olt_id = executions.olt_id AND p.execution_id = executions.id), '{}'::jsonb),
	cause,
	onus, failed_onus, failed_varbinds`

// listExecutions lists the latest executions, optionally of one OLT, job or
// status.
func (s *server) listExecutions(w http.ResponseWriter, r *http.Request) *apiError {
	olt, aerr := idParam(r, "olt_id")
	if aerr != nil {
		return aerr
	}
	job, aerr := idParam(r, "job_id")
	if aerr != nil {
		return aerr
	}
	status, aerr := statusParam(r)
	if aerr != nil {
		return aerr
	}
	cause, aerr := causeParam(r)
	if aerr != nil {
		return aerr
	}
	spec := listSpec{From: "executions", Cols: executionCols, Search: []string{"id", "job_id", "olt_id", "error", "poller_id"},
		Sorts: map[string]string{"scheduled_at": "scheduled_at", "started_at": "started_at", "finished_at": "finished_at",
			"duration_ms": "duration_ms", "status": "status", "olt_id": "olt_id", "job_id": "job_id"},
		DefaultSort: "scheduled_at DESC NULLS LAST, updated_at DESC", TieBreak: "id"}
	if olt != "" {
		spec.filter("olt_id = $?", olt)
	}
	if job != "" {
		spec.filter("job_id = $?", job)
	}
	if status != "" {
		spec.filter("status = $?", status)
	}
	if cause != "" {
		spec.filter("cause = $?", cause)
	}
	execs, pi, aerr := listPage[executionRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("executions", execs, len(execs)))
	return nil
}

type attemptRow struct {
	Attempt    int        `json:"attempt"`
	PollerID   string     `json:"poller_id"`
	Status     string     `json:"status"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Error      string     `json:"error"`
}

// getExecution answers one execution with its attempts.
func (s *server) getExecution(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("id")
	if len(id) > 200 || !utf8.ValidString(id) {
		return notFound("no execution %q", id)
	}
	execs, aerr := listRows[executionRow](s, r, `SELECT `+executionCols+` FROM executions WHERE id = $1`, id)
	if aerr != nil {
		return aerr
	}
	if len(execs) == 0 {
		return notFound("no execution %q", id)
	}
	attempts, aerr := listRows[attemptRow](s, r, `SELECT attempt, poller_id, status, started_at, finished_at, error
		FROM execution_attempts WHERE execution_id = $1 ORDER BY attempt`, id)
	if aerr != nil {
		return aerr
	}
	// The ONUs a GET run could not read whole (the first ones, as its
	// execution.succeeded listed them): instance, pon_index, onu_id, oids,
	// error.
	failures, aerr := listRows[onuFailureRow](s, r, `SELECT coalesce(f.instance, ''), f.pon_index, f.onu_id, coalesce(f.oids, '{}'), coalesce(f.error, '')
		FROM executions e, jsonb_to_recordset(CASE WHEN jsonb_typeof(e.onu_failures) = 'array' THEN e.onu_failures ELSE '[]'::jsonb END)
			AS f(instance text, pon_index bigint, onu_id bigint, oids text[], error text)
		WHERE e.id = $1`, id)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, executionDetail{Execution: execs[0], Attempts: attempts, ONUFailures: failures})
	return nil
}

// knownOLT answers 404 unless the OLT exists in the read model (not
// deleted) or, just created and not yet projected, in the config stream.
func (s *server) knownOLT(r *http.Request, id string) *apiError {
	if !streams.ValidID(id) {
		return notFound("no OLT %q", id)
	}
	ctx, cancel := s.query(r)
	var known bool
	err := s.deps.DB.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM olts WHERE id = $1 AND NOT deleted)`, id).Scan(&known)
	cancel()
	if err != nil {
		return s.readModelDown(err)
	}
	if known {
		return nil
	}
	o, aerr := current[streams.OLTUpserted](r.Context(), s, streams.SubjectOLT(id))
	if aerr != nil {
		return aerr
	}
	if o == nil {
		return notFound("no OLT %q", id)
	}
	return nil
}
