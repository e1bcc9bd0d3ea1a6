package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
)

// listBrands lists the brands of the read model.
func (s *server) listBrands(w http.ResponseWriter, r *http.Request) *apiError {
	type brand struct {
		ID          string    `json:"id"`
		Name        string    `json:"name"`
		Description string    `json:"description"`
		IndexScheme string    `json:"index_scheme"`
		UpdatedAt   time.Time `json:"updated_at"`
	}
	ctx, cancel := s.query(r)
	defer cancel()
	rows, err := s.deps.DB.Query(ctx, `SELECT id, name, description, index_scheme, updated_at FROM brands ORDER BY name, id`)
	if err != nil {
		return s.readModelDown(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (brand, error) {
		var b brand
		return b, row.Scan(&b.ID, &b.Name, &b.Description, &b.IndexScheme, &b.UpdatedAt)
	})
	if err != nil {
		return s.readModelDown(err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "brands": nonNil(out)})
	return nil
}

// listOIDs lists the OIDs of the read model, optionally of one brand.
func (s *server) listOIDs(w http.ResponseWriter, r *http.Request) *apiError {
	type oid struct {
		ID        string          `json:"id"`
		BrandID   string          `json:"brand_id"`
		Name      string          `json:"name"`
		OID       string          `json:"oid"`
		Field     string          `json:"field"`
		Decoder   json.RawMessage `json:"decoder"`
		UpdatedAt time.Time       `json:"updated_at"`
	}
	brand, aerr := idParam(r, "brand_id")
	if aerr != nil {
		return aerr
	}
	ctx, cancel := s.query(r)
	defer cancel()
	rows, err := s.deps.DB.Query(ctx, `SELECT id, brand_id, name, oid, field, decoder, updated_at FROM oids
		WHERE ($1 = '' OR brand_id = $1) ORDER BY brand_id, name, id`, brand)
	if err != nil {
		return s.readModelDown(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (oid, error) {
		var o oid
		var dec []byte
		err := row.Scan(&o.ID, &o.BrandID, &o.Name, &o.OID, &o.Field, &dec, &o.UpdatedAt)
		o.Decoder = dec
		return o, err
	})
	if err != nil {
		return s.readModelDown(err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "oids": nonNil(out)})
	return nil
}

// listJobs lists the jobs of the read model (deleted ones excluded),
// optionally of one brand.
func (s *server) listJobs(w http.ResponseWriter, r *http.Request) *apiError {
	type job struct {
		ID                string    `json:"id"`
		Name              string    `json:"name"`
		BrandID           string    `json:"brand_id"`
		Kind              string    `json:"kind"`
		OIDIDs            []string  `json:"oid_ids"`
		IntervalSeconds   int       `json:"interval_seconds"`
		MaxRetries        int       `json:"max_retries"`
		RetryDelaySeconds int       `json:"retry_delay_seconds"`
		TimeoutSeconds    int       `json:"timeout_seconds"`
		Priority          int       `json:"priority"`
		Enabled           bool      `json:"enabled"`
		UpdatedAt         time.Time `json:"updated_at"`
	}
	brand, aerr := idParam(r, "brand_id")
	if aerr != nil {
		return aerr
	}
	ctx, cancel := s.query(r)
	defer cancel()
	rows, err := s.deps.DB.Query(ctx, `SELECT id, name, brand_id, kind, oid_ids, interval_seconds, max_retries,
			retry_delay_seconds, timeout_seconds, priority, enabled, updated_at
		FROM snmp_jobs WHERE NOT deleted AND ($1 = '' OR brand_id = $1) ORDER BY priority DESC, name, id`, brand)
	if err != nil {
		return s.readModelDown(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (job, error) {
		var j job
		return j, row.Scan(&j.ID, &j.Name, &j.BrandID, &j.Kind, &j.OIDIDs, &j.IntervalSeconds, &j.MaxRetries,
			&j.RetryDelaySeconds, &j.TimeoutSeconds, &j.Priority, &j.Enabled, &j.UpdatedAt)
	})
	if err != nil {
		return s.readModelDown(err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "jobs": nonNil(out)})
	return nil
}

// listCoordinatorLogs lists coordinator log entries, newest first,
// filterable by OLT (GLOBAL for entries without one), level and event type
// (seed 002: logs filterable by level and type).
func (s *server) listCoordinatorLogs(w http.ResponseWriter, r *http.Request) *apiError {
	type entry struct {
		ID        int64           `json:"id"`
		OLTID     *string         `json:"olt_id"`
		EventType string          `json:"event_type"`
		Level     string          `json:"level"`
		Message   string          `json:"message"`
		Details   json.RawMessage `json:"details"`
		Timestamp time.Time       `json:"timestamp"`
	}
	olt := r.URL.Query().Get("olt_id")
	if olt != "" && olt != "GLOBAL" {
		if _, aerr := idParam(r, "olt_id"); aerr != nil {
			return aerr
		}
	}
	level, aerr := upperParam(r, "level")
	if aerr != nil {
		return aerr
	}
	typ, aerr := upperParam(r, "event_type")
	if aerr != nil {
		return aerr
	}
	limit, aerr := intParam(r, "limit", 100, 1000)
	if aerr != nil {
		return aerr
	}
	ctx, cancel := s.query(r)
	defer cancel()
	rows, err := s.deps.DB.Query(ctx, `SELECT id, olt_id, event_type, level, message, details, "timestamp" FROM coordinator_logs
		WHERE ($1 = '' OR ($1 = 'GLOBAL' AND olt_id IS NULL) OR olt_id = $1)
		  AND ($2 = '' OR level = $2) AND ($3 = '' OR event_type = $3)
		ORDER BY "timestamp" DESC, id DESC LIMIT $4`, olt, level, typ, limit)
	if err != nil {
		return s.readModelDown(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (entry, error) {
		var e entry
		var details []byte
		err := row.Scan(&e.ID, &e.OLTID, &e.EventType, &e.Level, &e.Message, &details, &e.Timestamp)
		e.Details = details
		return e, err
	})
	if err != nil {
		return s.readModelDown(err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "logs": nonNil(out)})
	return nil
}

// upperParam reads an optional upper-case name filter (case-insensitive).
func upperParam(r *http.Request, name string) (string, *apiError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return "", nil
	}
	up := []byte(v)
	for i, c := range up {
		if c >= 'a' && c <= 'z' {
			up[i] = c - 'a' + 'A'
		}
	}
	if !statusRE.Match(up) {
		return "", badField(name, "%s must be a name such as ERROR or TASK_ADDED", name)
	}
	return string(up), nil
}

// nonNil makes an empty result a JSON [] rather than null.
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
