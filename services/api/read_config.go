package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/facho-olt/facho/streams"
)

// listBrands lists the brands of the read model.
func (s *server) listBrands(w http.ResponseWriter, r *http.Request) *apiError {
	// The event's fields, in the columns' order, plus when it was projected.
	type brand struct {
		streams.BrandUpserted
		UpdatedAt time.Time `json:"updated_at"`
	}
	out, aerr := listRows[brand](s, r, `SELECT id, name, description, index_scheme, updated_at FROM brands ORDER BY name, id`)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "brands": out})
	return nil
}

// listOIDs lists the OIDs of the read model, optionally of one brand.
func (s *server) listOIDs(w http.ResponseWriter, r *http.Request) *apiError {
	type oid struct {
		streams.OIDUpserted
		UpdatedAt time.Time `json:"updated_at"`
	}
	brand, aerr := idParam(r, "brand_id")
	if aerr != nil {
		return aerr
	}
	out, aerr := listRows[oid](s, r, `SELECT id, brand_id, name, oid, field, decoder, updated_at FROM oids
		WHERE ($1 = '' OR brand_id = $1) ORDER BY brand_id, name, id`, brand)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "oids": out})
	return nil
}

// listJobs lists the jobs of the read model (deleted ones excluded),
// optionally of one brand.
func (s *server) listJobs(w http.ResponseWriter, r *http.Request) *apiError {
	type job struct {
		streams.JobUpserted
		UpdatedAt time.Time `json:"updated_at"`
	}
	brand, aerr := idParam(r, "brand_id")
	if aerr != nil {
		return aerr
	}
	out, aerr := listRows[job](s, r, `SELECT id, name, brand_id, kind, oid_ids, interval_seconds, max_retries,
			retry_delay_seconds, timeout_seconds, priority, enabled, updated_at
		FROM snmp_jobs WHERE NOT deleted AND ($1 = '' OR brand_id = $1) ORDER BY priority DESC, name, id`, brand)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "jobs": out})
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
	out, aerr := listRows[entry](s, r, `SELECT id, olt_id, event_type, level, message, details, "timestamp" FROM coordinator_logs
		WHERE ($1 = '' OR ($1 = 'GLOBAL' AND olt_id IS NULL) OR olt_id = $1)
		  AND ($2 = '' OR level = $2) AND ($3 = '' OR event_type = $3)
		ORDER BY "timestamp" DESC, id DESC LIMIT $4`, olt, level, typ, limit)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "logs": out})
	return nil
}

// upperParam reads an optional upper-case name filter (case-insensitive).
func upperParam(r *http.Request, name string) (string, *apiError) {
	v := strings.ToUpper(r.URL.Query().Get(name))
	if v != "" && !statusRE.MatchString(v) {
		return "", badField(name, "%s must be a name such as ERROR or TASK_ADDED", name)
	}
	return v, nil
}

// nonNil makes an empty result a JSON [] rather than null.
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
