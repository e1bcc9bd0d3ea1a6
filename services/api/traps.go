package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// trapRow is one trap of GET /api/v1/olts/{id}/traps: raw (as received)
// and, where the OLT's vendor profile maps its OID, decoded.
// trapList is GET /api/v1/olts/{id}/traps.
type trapList struct {
	OLTID string    `json:"olt_id"`
	Count int       `json:"count"`
	Traps []trapRow `json:"traps"`
}

type trapRow struct {
	TrapID     string          `json:"trap_id"`
	ReceivedAt time.Time       `json:"received_at"`
	Version    string          `json:"version"`
	Source     string          `json:"source"`
	TrapOID    string          `json:"trap_oid"`
	Varbinds   json.RawMessage `json:"varbinds"`
	Kind       *string         `json:"kind"`
	Rule       *string         `json:"rule"`
	PonIndex   *int64          `json:"pon_index"`
	ONUID      *int64          `json:"onu_id"`
	ONUIndex   *string         `json:"onu_index"`
	PortName   *string         `json:"port_name"`
	// Applied: the trap changed the ONU's status in onu_data.
	Applied bool `json:"applied"`
}

const trapsSQL = `SELECT trap_id, received_at, version, source, trap_oid, coalesce(varbinds, '[]'::jsonb),
	kind, rule, pon_index, onu_id, onu_index, port_name, applied
	FROM traps WHERE olt_id = $1 ORDER BY stream_seq DESC LIMIT $2`

// Bounds of the traps list.
const (
	trapsDefaultLimit = 100
	trapsMaxLimit     = 1000
)

// listTraps serves GET /api/v1/olts/{id}/traps: the OLT's last traps,
// newest first. 404 for an unknown OLT.
func (s *server) listTraps(w http.ResponseWriter, r *http.Request) *apiError {
	olt := r.PathValue("id")
	if aerr := s.knownOLT(r, olt); aerr != nil {
		return aerr
	}
	limit := trapsDefaultLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > trapsMaxLimit {
			return badField("limit", "limit %q: want 1..%d", v, trapsMaxLimit)
		}
		limit = n
	}
	rows, aerr := listRows[trapRow](s, r, trapsSQL, olt, limit)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, trapList{OLTID: olt, Count: len(rows), Traps: rows})
	return nil
}

// trapRouteDocs documents the routes of this file.
func trapRouteDocs() map[string]routeDoc {
	return map[string]routeDoc{
		"GET /api/v1/olts/{id}/traps": {Summary: "The OLT's last SNMP traps, newest first (the projector keeps the newest FACHO_TRAPS_KEEP per OLT): trap_id, received_at, version (v1, v2c, v2c-inform), source, trap_oid, varbinds as received (oid, type, value, hex), and where the vendor profile maps the trap: kind (los, dying_gasp, online, offline, optical_alarm_raise/clear, pon_down/up), rule, pon_index, onu_id, onu_index, port_name, applied (it set the ONU's status). 404 for an unknown OLT", Tag: "olts", Resp: trapList{},
			Query: []param{{"limit", "integer", "how many (default 100, at most 1000)"}}},
	}
}
