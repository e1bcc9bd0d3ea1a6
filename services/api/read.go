package api

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

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
	oltView
	UpdatedAt time.Time `json:"updated_at"`
}

// listOLTs lists the OLTs of the read model (deleted ones excluded).
func (s *server) listOLTs(w http.ResponseWriter, r *http.Request) *apiError {
	olts, aerr := listRows[oltRow](s, r, `SELECT id, name, ip, port, brand_id, enabled, description, updated_at
		FROM olts WHERE NOT deleted ORDER BY name, id`)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(olts), "olts": olts})
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
}

// listONUs lists the ONUs of one OLT from onu_data, ordered by PON and ONU.
func (s *server) listONUs(w http.ResponseWriter, r *http.Request) *apiError {
	olt := r.PathValue("id")
	if !streams.ValidID(olt) {
		return notFound("no OLT %q", olt)
	}
	status, aerr := statusParam(r)
	if aerr != nil {
		return aerr
	}
	limit, aerr := intParam(r, "limit", 1000, 10000)
	if aerr != nil {
		return aerr
	}
	offset, aerr := intParam(r, "offset", 0, 1<<30)
	if aerr != nil {
		return aerr
	}
	var total int
	ctx, cancel := s.query(r)
	err := s.deps.DB.QueryRow(ctx, `SELECT count(*) FROM onu_data WHERE olt_id = $1 AND ($2 = '' OR status = $2)`, olt, status).Scan(&total)
	cancel()
	if err != nil {
		return s.readModelDown(err)
	}
	onus, aerr := listRows[onuRow](s, r, `SELECT pon_index, onu_id, serial, description, status, rx_power_dbm, first_seen, last_seen
		FROM onu_data WHERE olt_id = $1 AND ($2 = '' OR status = $2)
		ORDER BY pon_index, onu_id LIMIT $3 OFFSET $4`, olt, status, limit, offset)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, map[string]any{"olt_id": olt, "count": len(onus), "total": total, "limit": limit, "offset": offset, "onus": onus})
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
}

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
	limit, aerr := intParam(r, "limit", 100, 1000)
	if aerr != nil {
		return aerr
	}
	execs, aerr := listRows[executionRow](s, r, `SELECT id, job_id, olt_id, status, attempt, poller_id, scheduled_at, started_at,
			finished_at, duration_ms, varbinds, error, updated_at
		FROM executions
		WHERE ($1 = '' OR olt_id = $1) AND ($2 = '' OR job_id = $2) AND ($3 = '' OR status = $3)
		ORDER BY scheduled_at DESC NULLS LAST, updated_at DESC, id LIMIT $4`, olt, job, status, limit)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(execs), "executions": execs})
	return nil
}
