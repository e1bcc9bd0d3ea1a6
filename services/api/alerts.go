package api

import (
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/streams"
)

// Alerts for people: the alerts and incidents read model (alerts, view
// incidents: the alerter's projection of FACHO_ALERT), acknowledgements
// (alert.acknowledged on facho.alert.<olt_id>.acknowledged, for the
// alerter) and silences (configuration: facho.config.silence.<id>, read
// back from alert_silences, the projector's read model).

// alertRow is one alerts row as the API shows it: exactly the keys of the
// alert contract plus its details.
type alertRow struct {
	Key         string     `json:"key"`
	Rule        string     `json:"rule"`
	Severity    string     `json:"severity"`
	State       string     `json:"state"`
	OLTID       *string    `json:"olt_id"`
	Pon         *string    `json:"pon"`
	ONUID       *int64     `json:"onu_id"`
	Serial      *string    `json:"serial"`
	StartsAt    time.Time  `json:"starts_at"`
	EndsAt      *time.Time `json:"ends_at"`
	IncidentID  *string    `json:"incident_id"`
	ID          string     `json:"id"`
	Summary     string     `json:"summary"`
	Cause       *string    `json:"cause"`
	Value       *float64   `json:"value"`
	Unit        *string    `json:"unit"`
	OLTName     *string    `json:"olt_name"`
	Description *string    `json:"description"`
	Inhibited   bool       `json:"inhibited"`
	AckedAt     *time.Time `json:"acked_at"`
	AckedBy     *string    `json:"acked_by"`
}

const alertCols = `key, rule, severity, state, olt_id, pon, onu_id, serial, starts_at, ends_at, incident_id,
	id, summary, cause, value, unit, olt_name, description, inhibited, acked_at, acked_by`

// severityRank orders severities, the most severe highest.
const severityRank = `array_position(ARRAY['info','warning','critical'], severity)`

// alertOrder is the default order of alerts: active first, the most
// severe first, the newest first.
const alertOrder = `(state = 'firing') DESC, ` + severityRank + ` DESC NULLS LAST, starts_at DESC`

// alertStates are the values of the state filter; "" (default) is firing.
var alertStates = []string{streams.AlertStateFiring, streams.AlertStateResolved, "all"}

var severities = []string{streams.SeverityInfo, streams.SeverityWarning, streams.SeverityCritical}

// ruleRE is the shape of a rule name (the alerter may ship rules beyond
// the ones package streams names).
var ruleRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// maxPonRunes bounds a PON matcher or filter (a port name such as 0/1/3).
const maxPonRunes = 64

// alertFilters adds the state (default firing), olt_id, pon, rule and
// severity filters of a request to spec.
func alertFilters(r *http.Request, spec *listSpec) *apiError {
	q := r.URL.Query()
	state := strings.ToLower(q.Get("state"))
	switch {
	case state == "":
		state = streams.AlertStateFiring
	case !oneOf(state, alertStates):
		return badField("state", "state must be firing (the default), resolved or all")
	}
	if state != "all" {
		spec.filter("state = $?", state)
	}
	olt, aerr := idParam(r, "olt_id")
	if aerr != nil {
		return aerr
	}
	if olt != "" {
		spec.filter("olt_id = $?", olt)
	}
	if pon := q.Get("pon"); pon != "" {
		if p := textProblem(pon, maxPonRunes, false); p != "" {
			return badField("pon", "pon %s", p)
		}
		spec.filter("pon = $?", pon)
	}
	if rule := q.Get("rule"); rule != "" {
		if !ruleRE.MatchString(rule) {
			return badField("rule", "rule must be a rule name such as %s", streams.RuleONUDown)
		}
		spec.filter("rule = $?", rule)
	}
	if sev := strings.ToLower(q.Get("severity")); sev != "" {
		if !oneOf(sev, severities) {
			return badField("severity", "severity must be one of %s", strings.Join(severities, ", "))
		}
		spec.filter("severity = $?", sev)
	}
	return nil
}

// groupFilters adds the filters of the alerts an incident groups:
// inhibited (true: only the alerts grouped under an incident, false: none
// of them, so an outage is its incident's one row) and incident_id (the
// alerts an incident groups, without the incident itself).
func groupFilters(r *http.Request, spec *listSpec) *apiError {
	inh, aerr := boolParam(r, "inhibited")
	if aerr != nil {
		return aerr
	}
	if inh != nil {
		spec.filter("inhibited = $?", *inh)
	}
	if inc := r.URL.Query().Get("incident_id"); inc != "" {
		if p := textProblem(inc, 128, false); p != "" {
			return badField("incident_id", "incident_id %s", p)
		}
		spec.filter("incident_id = $?", inc)
		spec.filter("id <> $?", inc)
	}
	return nil
}

// listAlerts lists alerts: active (firing) ones by default, the most
// severe first.
func (s *server) listAlerts(w http.ResponseWriter, r *http.Request) *apiError {
	spec := listSpec{From: "alerts", Cols: alertCols,
		Search: []string{"key", "serial", "description", "olt_name", "summary"},
		Sorts: map[string]string{"starts_at": "starts_at", "ends_at": "ends_at", "severity": severityRank, "rule": "rule",
			"olt_id": "olt_id", "pon": "pon", "state": "state"},
		DefaultSort: alertOrder, TieBreak: "id"}
	if aerr := alertFilters(r, &spec); aerr != nil {
		return aerr
	}
	if aerr := groupFilters(r, &spec); aerr != nil {
		return aerr
	}
	out, pi, aerr := listPage[alertRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("alerts", out, len(out)))
	return nil
}

// alertID reads the path's alert id (the alerter's: any short text).
func alertID(r *http.Request) (string, *apiError) {
	id := r.PathValue("id")
	if id == "" || textProblem(id, 256, false) != "" {
		return "", notFound("no alert %q", id)
	}
	return id, nil
}

// oneAlert reads one alert by id (nil when unknown).
func (s *server) oneAlert(r *http.Request, id string) (*alertRow, *apiError) {
	rows, aerr := listRows[alertRow](s, r, `SELECT `+alertCols+` FROM alerts WHERE id = $1`, id)
	if aerr != nil || len(rows) == 0 {
		return nil, aerr
	}
	return &rows[0], nil
}

func (s *server) getAlert(w http.ResponseWriter, r *http.Request) *apiError {
	id, aerr := alertID(r)
	if aerr != nil {
		return aerr
	}
	a, aerr := s.oneAlert(r, id)
	if aerr != nil {
		return aerr
	}
	if a == nil {
		return notFound("no alert %q", id)
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

type ackRequest struct {
	// Comment is optional: why, who is on it.
	Comment string `json:"comment"`
}

// ackAlert acknowledges one firing alert: an alert.acknowledged event
// with Nats-Msg-Id ack:<alert_id> (acknowledging twice stores one event
// within the stream's duplicate window; the alerter takes the first). The
// read model shows acked_at once the alerter has projected it.
func (s *server) ackAlert(w http.ResponseWriter, r *http.Request) *apiError {
	id, aerr := alertID(r)
	if aerr != nil {
		return aerr
	}
	var req ackRequest
	if r.ContentLength != 0 {
		// The body is optional: an empty one (chunked, say) is no comment.
		if aerr := decodeStrict(r, s.cfg.MaxBodyBytes, &req); aerr != nil && !(aerr.Field == "" && aerr.Msg == "empty body") {
			return aerr
		}
	}
	if aerr := checkDescription("comment", req.Comment); aerr != nil {
		return aerr
	}
	a, aerr := s.oneAlert(r, id)
	if aerr != nil {
		return aerr
	}
	if a == nil {
		return notFound("no alert %q", id)
	}
	if a.State != streams.AlertStateFiring {
		return conflict("alert %s is %s: only a firing alert can be acknowledged", id, a.State)
	}
	ev := streams.AlertAcknowledged{AlertID: a.ID, Key: a.Key, By: principal(r).Username, Comment: req.Comment, At: s.deps.Now().UTC()}
	if a.OLTID != nil {
		ev.OLTID = *a.OLTID
	}
	if err := s.publishID(r, "ack:"+a.ID, streams.SubjectAlert(ev.OLTID, streams.AlertStateAcknowledged), ev); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, ev)
	return nil
}

// incidentRow is one row of the incidents view: an outage alert (PON or
// OLT) and how many alerts it groups.
type incidentRow struct {
	ID       string     `json:"id"`
	Rule     string     `json:"rule"`
	Severity string     `json:"severity"`
	State    string     `json:"state"`
	OLTID    *string    `json:"olt_id"`
	OLTName  *string    `json:"olt_name"`
	PonIndex *int64     `json:"pon_index"`
	Pon      *string    `json:"pon"`
	Summary  string     `json:"summary"`
	StartsAt time.Time  `json:"starts_at"`
	EndsAt   *time.Time `json:"ends_at"`
	AckedAt  *time.Time `json:"acked_at"`
	AckedBy  *string    `json:"acked_by"`
	Alerts   int64      `json:"alerts"`
}

const incidentCols = `id, rule, severity, state, olt_id, olt_name, pon_index, pon, summary, starts_at, ends_at, acked_at, acked_by, alerts`

// listIncidents lists the outage incidents: active ones by default.
func (s *server) listIncidents(w http.ResponseWriter, r *http.Request) *apiError {
	spec := listSpec{From: "incidents", Cols: incidentCols, Search: []string{"olt_name", "summary", "pon"},
		Sorts:       map[string]string{"starts_at": "starts_at", "ends_at": "ends_at", "severity": severityRank, "olt_id": "olt_id", "alerts": "alerts"},
		DefaultSort: alertOrder, TieBreak: "id"}
	if aerr := alertFilters(r, &spec); aerr != nil {
		return aerr
	}
	out, pi, aerr := listPage[incidentRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("incidents", out, len(out)))
	return nil
}

// getIncident answers one incident with the alerts it groups (the most
// severe first).
func (s *server) getIncident(w http.ResponseWriter, r *http.Request) *apiError {
	id, aerr := alertID(r)
	if aerr != nil {
		return aerr
	}
	rows, aerr := listRows[incidentRow](s, r, `SELECT `+incidentCols+` FROM incidents WHERE id = $1`, id)
	if aerr != nil {
		return aerr
	}
	if len(rows) == 0 {
		return notFound("no incident %q", id)
	}
	alerts, aerr := listRows[alertRow](s, r, `SELECT `+alertCols+` FROM alerts WHERE incident_id = $1 AND id <> $1
		ORDER BY `+alertOrder+`, id LIMIT 10000`, id)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, incidentDetail{Incident: rows[0], Alerts: alerts})
	return nil
}

// silenceRow is one alert_silences row with its state now: active,
// pending (starts later), expired or deleted.
type silenceRow struct {
	ID        string     `json:"id"`
	OLTID     *string    `json:"olt_id"`
	Pon       *string    `json:"pon"`
	Rule      *string    `json:"rule"`
	StartsAt  time.Time  `json:"starts_at"`
	EndsAt    time.Time  `json:"ends_at"`
	CreatedBy string     `json:"created_by"`
	Comment   string     `json:"comment"`
	CreatedAt time.Time  `json:"created_at"`
	DeletedAt *time.Time `json:"deleted_at"`
	State     string     `json:"state"`
}

// silenceCols: the state is filled in by silenceStateAt.
const silenceCols = `id, olt_id, pon, rule, starts_at, ends_at, created_by, comment, created_at, deleted_at, ''`

var silenceStates = []string{"active", "pending", "expired", "deleted", "all"}

// silenceStateAt is a silence's state at now.
func silenceStateAt(sr silenceRow, now time.Time) string {
	switch {
	case sr.DeletedAt != nil:
		return "deleted"
	case !sr.EndsAt.After(now):
		return "expired"
	case sr.StartsAt.After(now):
		return "pending"
	}
	return "active"
}

// listSilences lists silences: by default those in force or to come
// (active and pending), ending soonest first.
func (s *server) listSilences(w http.ResponseWriter, r *http.Request) *apiError {
	spec := listSpec{From: "alert_silences", Cols: silenceCols, Search: []string{"olt_id", "pon", "rule", "comment", "created_by"},
		Sorts:       map[string]string{"starts_at": "starts_at", "ends_at": "ends_at", "created_at": "created_at", "olt_id": "olt_id"},
		DefaultSort: "ends_at", TieBreak: "id"}
	now := s.deps.Now().UTC()
	switch state := strings.ToLower(r.URL.Query().Get("state")); state {
	case "":
		spec.filter("deleted_at IS NULL AND ends_at > $?", now)
	case "active":
		spec.filter("deleted_at IS NULL AND starts_at <= $? AND ends_at > $?", now)
	case "pending":
		spec.filter("deleted_at IS NULL AND starts_at > $?", now)
	case "expired":
		spec.filter("deleted_at IS NULL AND ends_at <= $?", now)
	case "deleted":
		spec.Where = append(spec.Where, "deleted_at IS NOT NULL")
	case "all":
	default:
		return badField("state", "state must be one of %s (default: active and pending)", strings.Join(silenceStates, ", "))
	}
	for _, name := range []string{"olt_id", "rule"} {
		v, aerr := idParam(r, name)
		if aerr != nil {
			return aerr
		}
		if v != "" {
			spec.filter(name+" = $?", v)
		}
	}
	out, pi, aerr := listPage[silenceRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	for i := range out {
		out[i].State = silenceStateAt(out[i], now)
	}
	writeJSON(w, http.StatusOK, pi.body("silences", out, len(out)))
	return nil
}

// silenceRequest is the body of POST /api/v1/silences: at least one
// matcher (olt_id, pon, rule), starts_at (default now) and either ends_at
// or duration (a Go duration such as 2h or 90m).
type silenceRequest struct {
	OLTID    string     `json:"olt_id,omitempty"`
	Pon      string     `json:"pon,omitempty"`
	Rule     string     `json:"rule,omitempty"`
	StartsAt *time.Time `json:"starts_at,omitempty"`
	EndsAt   *time.Time `json:"ends_at,omitempty"`
	Duration string     `json:"duration,omitempty"`
	Comment  string     `json:"comment,omitempty"`
}

// silenceEvent validates req into a silence; now is the clock.
func (s *server) silenceEvent(r *http.Request, req silenceRequest, now time.Time) (streams.SilenceUpserted, *apiError) {
	ev := streams.SilenceUpserted{ID: newID(), OLTID: req.OLTID, Pon: req.Pon, Rule: req.Rule, Comment: req.Comment,
		CreatedBy: principal(r).Username, CreatedAt: now}
	if req.OLTID == "" && req.Pon == "" && req.Rule == "" {
		return ev, badField("olt_id", "a silence needs at least one matcher: olt_id, pon or rule")
	}
	if req.OLTID != "" {
		if aerr := checkID("olt_id", req.OLTID); aerr != nil {
			return ev, aerr
		}
		if aerr := s.knownOLT(r, req.OLTID); aerr != nil {
			if aerr.Status == http.StatusNotFound {
				return ev, badField("olt_id", "olt_id: no OLT %q", req.OLTID)
			}
			return ev, aerr
		}
	}
	if req.Pon != "" {
		if p := textProblem(req.Pon, maxPonRunes, false); p != "" {
			return ev, badField("pon", "pon %s", p)
		}
	}
	if req.Rule != "" && !ruleRE.MatchString(req.Rule) {
		return ev, badField("rule", "rule must be a rule name such as %s", streams.RuleONUDown)
	}
	if aerr := checkDescription("comment", req.Comment); aerr != nil {
		return ev, aerr
	}
	ev.StartsAt = now
	if req.StartsAt != nil {
		ev.StartsAt = req.StartsAt.UTC()
	}
	switch {
	case req.EndsAt != nil && req.Duration != "":
		return ev, badField("duration", "give ends_at or duration, not both")
	case req.EndsAt != nil:
		ev.EndsAt = req.EndsAt.UTC()
	case req.Duration != "":
		d, err := time.ParseDuration(req.Duration)
		if err != nil || d <= 0 {
			return ev, badField("duration", "duration must be a positive duration such as 2h or 90m")
		}
		if d > s.cfg.MaxSilence {
			return ev, badField("duration", "duration %s is longer than the longest silence, %s", d, s.cfg.MaxSilence)
		}
		ev.EndsAt = ev.StartsAt.Add(d)
	default:
		return ev, badField("ends_at", "a silence needs ends_at or duration")
	}
	switch {
	case !ev.EndsAt.After(ev.StartsAt):
		return ev, badField("ends_at", "ends_at must be after starts_at")
	case !ev.EndsAt.After(now):
		return ev, badField("ends_at", "ends_at is in the past")
	case ev.EndsAt.Sub(ev.StartsAt) > s.cfg.MaxSilence:
		return ev, badField("ends_at", "the silence lasts %s, longer than the longest silence, %s", ev.EndsAt.Sub(ev.StartsAt).Round(time.Second), s.cfg.MaxSilence)
	case ev.StartsAt.Sub(now) > s.cfg.MaxSilence:
		return ev, badField("starts_at", "starts_at is more than %s ahead", s.cfg.MaxSilence)
	}
	return ev, nil
}

func (s *server) createSilence(w http.ResponseWriter, r *http.Request) *apiError {
	var req silenceRequest
	if aerr := decodeStrict(r, s.cfg.MaxBodyBytes, &req); aerr != nil {
		return aerr
	}
	ev, aerr := s.silenceEvent(r, req, s.deps.Now().UTC())
	if aerr != nil {
		return aerr
	}
	return createNew(s, w, r, streams.SubjectSilence(ev.ID), ev, "silence "+ev.ID, "/api/v1/silences/"+ev.ID, ev)
}

// deleteSilence ends a silence (404 for an unknown or deleted one).
func (s *server) deleteSilence(w http.ResponseWriter, r *http.Request) *apiError {
	sil, aerr := existing[streams.SilenceUpserted](s, r, "silence", streams.SubjectSilence)
	if aerr != nil {
		return aerr
	}
	return s.accepted(w, r, streams.SubjectSilence(sil.ID), streams.SilenceDeleted{ID: sil.ID}, deleted{ID: sil.ID, Deleted: true})
}

// ponRow is one PON of an OLT: its ONUs (from onu_data, removed ones
// excluded) and its firing alerts.
type ponRow struct {
	PonIndex int64 `json:"pon_index"`
	// Pon is the PON's port name (the ONUs' port name up to ':'), else
	// its index.
	Pon       string   `json:"pon"`
	Total     int64    `json:"onus_total"`
	Online    int64    `json:"onus_online"`
	Down      int64    `json:"onus_down"`
	MinRx     *float64 `json:"rx_min_dbm"`
	MedianRx  *float64 `json:"rx_median_dbm"`
	Firing    int64    `json:"alerts_firing"`
	Outage    bool     `json:"outage"`
	OutageID  *string  `json:"outage_alert_id"`
	MaxSevere *string  `json:"severity"`
}

// ponSQL groups an OLT's ONUs by PON. An ONU is down when its status is
// anything but ONLINE. outage: a pon_outage alert fires on the PON.
const ponSQL = `WITH p AS (
	SELECT pon_index,
		coalesce(max(split_part(nullif(port_name, ''), ':', 1)), pon_index::text) AS pon,
		count(*) AS total, count(*) FILTER (WHERE status = 'ONLINE') AS online,
		min(rx_power_dbm) AS rx_min, percentile_cont(0.5) WITHIN GROUP (ORDER BY rx_power_dbm) AS rx_median
	FROM onu_data WHERE olt_id = $1 AND removed_at IS NULL GROUP BY pon_index)
SELECT p.pon_index, p.pon, p.total, p.online, p.total - p.online, p.rx_min, p.rx_median,
	(SELECT count(*) FROM alerts a WHERE a.olt_id = $1 AND a.state = 'firing' AND (a.pon_index = p.pon_index OR a.pon = p.pon)),
	EXISTS (SELECT 1 FROM alerts a WHERE a.olt_id = $1 AND a.state = 'firing' AND a.rule = 'pon_outage' AND (a.pon_index = p.pon_index OR a.pon = p.pon)),
	(SELECT a.id FROM alerts a WHERE a.olt_id = $1 AND a.state = 'firing' AND a.rule = 'pon_outage' AND (a.pon_index = p.pon_index OR a.pon = p.pon) ORDER BY a.starts_at DESC LIMIT 1),
	(SELECT a.severity FROM alerts a WHERE a.olt_id = $1 AND a.state = 'firing' AND (a.pon_index = p.pon_index OR a.pon = p.pon)
		ORDER BY array_position(ARRAY['info','warning','critical'], a.severity) DESC NULLS LAST LIMIT 1)
FROM p ORDER BY p.pon_index LIMIT 4096`

// listPONs is GET /api/v1/olts/{id}/pons.
func (s *server) listPONs(w http.ResponseWriter, r *http.Request) *apiError {
	olt := r.PathValue("id")
	if aerr := s.knownOLT(r, olt); aerr != nil {
		return aerr
	}
	rows, aerr := listRows[ponRow](s, r, ponSQL, olt)
	if aerr != nil {
		return aerr
	}
	// The health keys of each PON's port (health.go).
	withHealth, aerr := s.withPONHealth(r, olt, rows)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, ponList{OLTID: olt, Count: len(withHealth), PONs: withHealth})
	return nil
}

// alertRoutes are the routes of this file with their documentation.
func alertRouteDocs() map[string]routeDoc {
	filters := []param{
		{"state", "string", "firing (default: the active alerts), resolved or all"},
		{"olt_id", "string", "only of this OLT"},
		{"pon", "string", "only of this PON (its port name, e.g. 0/1/3)"},
		{"rule", "string", "only of this rule (e.g. onu_down, pon_outage)"},
		{"severity", "string", "info, warning or critical"},
	}
	return map[string]routeDoc{
		"GET /api/v1/alerts": {Summary: "List alerts, active first, the most severe first: each with key, rule, severity, state, olt_id, pon, onu_id, serial, starts_at, ends_at, incident_id, id, summary, cause, value, unit, olt_name, description, inhibited, acked_at, acked_by", Tag: "alerts", Resp: list("alerts", alertRow{}),
			Query: page(append(filters,
				param{"inhibited", "boolean", "true: only the alerts grouped under an incident (not notified on their own); false: none of them, so an outage is one row, its incident's"},
				param{"incident_id", "string", "only the alerts this incident groups"})...)},
		"GET /api/v1/alerts/{id}": {Summary: "Get one alert (one firing: its id)", Tag: "alerts", Resp: alertRow{}},
		"POST /api/v1/alerts/{id}/ack": {Summary: "Acknowledge a firing alert (optional body {\"comment\"}): publishes alert.acknowledged (Nats-Msg-Id ack:<id>); it is not notified again until it resolves and fires anew. 404 unknown, 409 resolved", Tag: "alerts", Resp: streams.AlertAcknowledged{}, OptionalBody: true, Errors: []int{http.StatusConflict},
			Role: auth.Operator, Body: ackRequest{}, Status: http.StatusAccepted},
		"GET /api/v1/incidents":      {Summary: "List incidents (PON and OLT outages grouping per-ONU alerts), active first; alerts counts the alerts each groups; summary and value follow the outage (the ONUs or PONs down now)", Tag: "alerts", Resp: list("incidents", incidentRow{}), Query: page(filters...)},
		"GET /api/v1/incidents/{id}": {Summary: "Get an incident with the alerts it groups", Tag: "alerts", Resp: incidentDetail{}},
		"GET /api/v1/silences": {Summary: "List silences with their state (active, pending, expired, deleted): by default active and pending, ending soonest first", Tag: "alerts", Resp: list("silences", silenceRow{}),
			Query: page(param{"state", "string", "active, pending, expired, deleted or all"}, param{"olt_id", "string", "only with this OLT matcher"}, param{"rule", "string", "only with this rule matcher"})},
		"POST /api/v1/silences": {Summary: "Silence the alerts matching every given matcher (olt_id, pon, rule: at least one) from starts_at (default now) to ends_at or for duration (e.g. 2h): they are recorded, not notified", Tag: "alerts", Resp: streams.SilenceUpserted{},
			Role: auth.Operator, Body: silenceRequest{}, Status: http.StatusCreated},
		"DELETE /api/v1/silences/{id}": {Summary: "End a silence now", Tag: "alerts", Resp: deleted{}, Role: auth.Operator, Status: http.StatusAccepted},
		"GET /api/v1/olts/{id}/pons":   {Summary: "The PONs of an OLT (from onu_data): pon_index, pon (port name), onus_total, onus_online, onus_down, rx_min_dbm, rx_median_dbm, alerts_firing, outage (a pon_outage alert fires), severity of its most severe firing alert; from the OLT's health tables (null where they do not report the port): port_index, admin_state, oper_state (up/down), tx_power_dbm, rx_power_dbm, temperature_c, onu_count_reported, health_observed_at, state_changed_at (a port they report without ONUs has a row of its own)", Tag: "olts", Resp: ponList{}},
	}
}
