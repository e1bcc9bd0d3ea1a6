package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/facho-olt/facho/streams"
)

type brandRow struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	IndexScheme string    `json:"index_scheme"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// listBrands lists the brands of the read model.
func (s *server) listBrands(w http.ResponseWriter, r *http.Request) *apiError {
	out, pi, aerr := listPage[brandRow](s, r, listSpec{From: "brands", Cols: "id, name, description, index_scheme, updated_at",
		Search: []string{"id", "name", "description"}, Sorts: map[string]string{"id": "id", "name": "name", "updated_at": "updated_at"},
		DefaultSort: "name", TieBreak: "id"})
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("brands", out, len(out)))
	return nil
}

// The rows of the lists name their columns one by one (pgx maps them by
// position): the event types grow fields the read model does not keep.
type oidRow struct {
	ID        string          `json:"id"`
	BrandID   string          `json:"brand_id"`
	Name      string          `json:"name"`
	OID       string          `json:"oid"`
	Field     string          `json:"field"`
	Decoder   streams.Decoder `json:"decoder"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// listOIDs lists the OIDs of the read model, optionally of one brand.
func (s *server) listOIDs(w http.ResponseWriter, r *http.Request) *apiError {
	brand, aerr := idParam(r, "brand_id")
	if aerr != nil {
		return aerr
	}
	spec := listSpec{From: "oids", Cols: "id, brand_id, name, oid, field, decoder, updated_at",
		Search: []string{"id", "name", "oid", "field"}, Sorts: map[string]string{"id": "id", "name": "name", "brand_id": "brand_id", "oid": "oid", "field": "field", "updated_at": "updated_at"},
		DefaultSort: "brand_id, name", TieBreak: "id"}
	if brand != "" {
		spec.filter("brand_id = $?", brand)
	}
	out, pi, aerr := listPage[oidRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("oids", out, len(out)))
	return nil
}

type jobRow struct {
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

// listJobs lists the jobs of the read model (deleted ones excluded),
// optionally of one brand.
func (s *server) listJobs(w http.ResponseWriter, r *http.Request) *apiError {
	brand, aerr := idParam(r, "brand_id")
	if aerr != nil {
		return aerr
	}
	enabled, aerr := boolParam(r, "enabled")
	if aerr != nil {
		return aerr
	}
	spec := listSpec{From: "snmp_jobs", Cols: `id, name, brand_id, kind, oid_ids, interval_seconds, max_retries,
			retry_delay_seconds, timeout_seconds, priority, enabled, updated_at`,
		Search: []string{"id", "name", "kind"},
		Sorts: map[string]string{"id": "id", "name": "name", "brand_id": "brand_id", "kind": "kind", "interval_seconds": "interval_seconds",
			"priority": "priority", "enabled": "enabled", "updated_at": "updated_at"},
		DefaultSort: "priority DESC, name", TieBreak: "id", Where: []string{"NOT deleted"}}
	if brand != "" {
		spec.filter("brand_id = $?", brand)
	}
	if enabled != nil {
		spec.filter("enabled = $?", *enabled)
	}
	out, pi, aerr := listPage[jobRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("jobs", out, len(out)))
	return nil
}

type logRow struct {
	ID        int64           `json:"id"`
	OLTID     *string         `json:"olt_id"`
	EventType string          `json:"event_type"`
	Level     string          `json:"level"`
	Message   string          `json:"message"`
	Details   json.RawMessage `json:"details"`
	Timestamp time.Time       `json:"timestamp"`
}

// listCoordinatorLogs lists coordinator log entries, newest first,
// filterable by OLT (GLOBAL for entries without one), level, event type
// and time (seed 002: logs filterable by level and type).
func (s *server) listCoordinatorLogs(w http.ResponseWriter, r *http.Request) *apiError {
	spec := listSpec{From: "coordinator_logs", Cols: `id, olt_id, event_type, level, message, details, "timestamp"`,
		Search:      []string{"message", "event_type", "olt_id"},
		Sorts:       map[string]string{"timestamp": `"timestamp"`, "level": "level", "event_type": "event_type", "olt_id": "olt_id"},
		DefaultSort: `"timestamp" DESC`, TieBreak: "id DESC"}
	switch olt := r.URL.Query().Get("olt_id"); {
	case olt == "GLOBAL":
		spec.Where = append(spec.Where, "olt_id IS NULL")
	case olt != "":
		if _, aerr := idParam(r, "olt_id"); aerr != nil {
			return aerr
		}
		spec.filter("olt_id = $?", olt)
	}
	for _, name := range []string{"level", "event_type"} {
		v, aerr := upperParam(r, name)
		if aerr != nil {
			return aerr
		}
		if v != "" {
			spec.filter(name+" = $?", v)
		}
	}
	for _, t := range []struct{ name, cond string }{{"since", `"timestamp" >= $?`}, {"until", `"timestamp" <= $?`}} {
		v, aerr := timeParam(r, t.name)
		if aerr != nil {
			return aerr
		}
		if v != nil {
			spec.filter(t.cond, *v)
		}
	}
	out, pi, aerr := listPage[logRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("logs", out, len(out)))
	return nil
}

// timeParam reads an optional RFC 3339 time (or the form of an HTML
// datetime-local input, taken as UTC).
func timeParam(r *http.Request, name string) (*time.Time, *apiError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			return &t, nil
		}
	}
	return nil, badField(name, "%s must be a time such as 2026-01-02T15:04:05Z", name)
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
