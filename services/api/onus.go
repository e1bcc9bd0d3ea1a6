package api

import (
	"errors"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/streams"
)

// ONU history (issue 11): onu_history holds one row per change of an ONU
// field (migration 011); these routes read it, rebuild an ONU's state at a
// past time from it, and find ONUs by serial across OLTs.

// onuField is a field of onu_history: a streams.ONUState JSON key or
// removed_at, with the kind of its text values.
type onuField struct {
	Name string
	// Kind is "string", "number" (strconv 'g') or "time" (RFC 3339 UTC).
	Kind string
}

// onuFields are the fields onu_history knows, in streams.ONUState's
// order, then removed_at: derived from the struct so that a new ONU field
// is a known history field at once.
var onuFields = func() []onuField {
	var out []onuField
	t := reflect.TypeOf(streams.ONUState{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		kind := "string"
		switch f.Type {
		case reflect.TypeOf((*float64)(nil)), reflect.TypeOf(float64(0)):
			kind = "number"
		case reflect.TypeOf((*time.Time)(nil)), reflect.TypeOf(time.Time{}):
			kind = "time"
		}
		out = append(out, onuField{Name: name, Kind: kind})
	}
	return append(out, onuField{Name: "removed_at", Kind: "time"})
}()

// onuFieldKind answers a known field's kind ("" unknown).
func onuFieldKind(name string) string {
	for _, f := range onuFields {
		if f.Name == name {
			return f.Kind
		}
	}
	return ""
}

func onuFieldNames() []string {
	out := make([]string, len(onuFields))
	for i, f := range onuFields {
		out[i] = f.Name
	}
	return out
}

// fieldsParam reads the optional comma list of history fields; an unknown
// one is a 400 naming it.
func fieldsParam(r *http.Request) ([]string, *apiError) {
	v := r.URL.Query().Get("fields")
	if v == "" {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if onuFieldKind(f) == "" {
			if len(f) > 64 {
				f = f[:64] + "…"
			}
			return nil, badField("fields", "unknown field %q: fields must be a comma list of %s", f, strings.Join(onuFieldNames(), ", "))
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out, nil
}

// onuKey is the ONU of a request's path: OLT id, PON index, ONU id.
type onuKey struct {
	OLT      string
	PonIndex int64
	ONUID    int64
}

func (k onuKey) String() string {
	return strconv.FormatInt(k.PonIndex, 10) + "/" + strconv.FormatInt(k.ONUID, 10) + " on OLT " + strconv.Quote(k.OLT)
}

// knownONU reads the path's ONU and answers 404 for an unknown OLT or an
// ONU neither onu_data nor onu_history knows.
func (s *server) knownONU(r *http.Request) (onuKey, *apiError) {
	k := onuKey{OLT: r.PathValue("id")}
	if aerr := s.knownOLT(r, k.OLT); aerr != nil {
		return k, aerr
	}
	var err1, err2 error
	k.PonIndex, err1 = strconv.ParseInt(r.PathValue("pon_index"), 10, 64)
	k.ONUID, err2 = strconv.ParseInt(r.PathValue("onu_id"), 10, 64)
	if err1 != nil || err2 != nil {
		return k, notFound("no ONU %s/%s on OLT %q: pon_index and onu_id are integers", r.PathValue("pon_index"), r.PathValue("onu_id"), k.OLT)
	}
	ctx, cancel := s.query(r)
	defer cancel()
	// onu_data first: onu_history has a partition per day, which a query
	// without a time range plans and probes all of.
	var known bool
	err := s.deps.DB.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM onu_data WHERE olt_id = $1 AND pon_index = $2 AND onu_id = $3)`, k.OLT, k.PonIndex, k.ONUID).Scan(&known)
	if err == nil && !known {
		err = s.deps.DB.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM onu_history WHERE olt_id = $1 AND pon_index = $2 AND onu_id = $3)`, k.OLT, k.PonIndex, k.ONUID).Scan(&known)
	}
	if err != nil {
		return k, s.readModelDown(err)
	}
	if !known {
		return k, notFound("no ONU %s", k)
	}
	return k, nil
}

// historyRow is one change of one ONU field.
type historyRow struct {
	At          time.Time `json:"at"`
	Field       string    `json:"field"`
	OldValue    *string   `json:"old_value"`
	NewValue    *string   `json:"new_value"`
	ExecutionID string    `json:"execution_id"`
	StreamSeq   int64     `json:"stream_seq"`
}

// getONUHistory lists an ONU's changes in a time range (default the last
// 24 hours), oldest first, optionally of some fields only.
func (s *server) getONUHistory(w http.ResponseWriter, r *http.Request) *apiError {
	k, aerr := s.knownONU(r)
	if aerr != nil {
		return aerr
	}
	from, aerr := timeParam(r, "from")
	if aerr != nil {
		return aerr
	}
	to, aerr := timeParam(r, "to")
	if aerr != nil {
		return aerr
	}
	if to == nil {
		now := s.deps.Now().UTC()
		to = &now
	}
	if from == nil {
		f := to.Add(-24 * time.Hour)
		from = &f
	}
	if from.After(*to) {
		return badField("from", "from (%s) is after to (%s)", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	fields, aerr := fieldsParam(r)
	if aerr != nil {
		return aerr
	}
	spec := listSpec{From: "onu_history", Cols: "at, field, old_value, new_value, execution_id, stream_seq",
		Sorts:       map[string]string{"at": "at"},
		DefaultSort: "at", TieBreak: "stream_seq, field", DefaultLimit: 1000, MaxLimit: 10000}
	spec.filter("olt_id = $?", k.OLT)
	spec.filter("pon_index = $?", k.PonIndex)
	spec.filter("onu_id = $?", k.ONUID)
	spec.filter("at >= $?", *from)
	spec.filter("at <= $?", *to)
	if fields != nil {
		spec.filter("field = ANY($?)", fields)
	}
	rows, pi, aerr := listPage[historyRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	body := pi.body("history", rows, len(rows))
	body["olt_id"], body["pon_index"], body["onu_id"] = k.OLT, k.PonIndex, k.ONUID
	body["from"], body["to"] = from.UTC(), to.UTC()
	if fields != nil {
		body["fields"] = fields
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// onuFrom is what an ONU is read from: its onu_data row d and its OLT's
// last complete walk w.
const onuFrom = "onu_data d LEFT JOIN onu_walks w ON w.olt_id = d.olt_id"

// onuLastSeen is an ONU's last_seen. The projector writes a row only when
// the ONU changed (issue 10), so the row's last_seen is its last change;
// an ONU not marked removed was also read by its OLT's last complete walk.
const onuLastSeen = "CASE WHEN d.removed_at IS NULL AND w.seen_at > d.last_seen THEN w.seen_at ELSE d.last_seen END"

const onuCols = "d.pon_index, d.onu_id, d.serial, d.description, d.status, d.rx_power_dbm, d.first_seen, " + onuLastSeen + " AS last_seen, " +
	"d.onu_index, d.port_name, d.name, d.tx_power_dbm, d.olt_rx_power_dbm, d.distance_m, d.temperature_c, d.voltage_v, d.bias_ma, " +
	"d.last_down_cause, d.last_down_at, d.last_up_at, d.model, d.firmware, d.removed_at"

// getONU answers one ONU: its current onu_data row, or with at its state
// at that time rebuilt from onu_history.
func (s *server) getONU(w http.ResponseWriter, r *http.Request) *apiError {
	k, aerr := s.knownONU(r)
	if aerr != nil {
		return aerr
	}
	at, aerr := timeParam(r, "at")
	if aerr != nil {
		return aerr
	}
	if at != nil {
		return s.onuAt(w, r, k, *at)
	}
	rows, aerr := listRows[onuRow](s, r, `SELECT `+onuCols+` FROM `+onuFrom+` WHERE d.olt_id = $1 AND d.pon_index = $2 AND d.onu_id = $3`, k.OLT, k.PonIndex, k.ONUID)
	if aerr != nil {
		return aerr
	}
	if len(rows) == 0 {
		// Known only from its history (onu_data rebuilt or pruned).
		return notFound("ONU %s has history but no current state; ask for a past state with ?at=", k)
	}
	writeJSON(w, http.StatusOK, onuOfOLT{OLTID: k.OLT, onuRow: rows[0]})
	return nil
}

// onuOfOLT is an ONU with its OLT's id.
type onuOfOLT struct {
	OLTID string `json:"olt_id"`
	onuRow
}

// onuAt answers the ONU's state at t: for each field the newest history
// row at or before t. 404 when the ONU had no reading yet at t.
func (s *server) onuAt(w http.ResponseWriter, r *http.Request, k onuKey, t time.Time) *apiError {
	type latest struct {
		Field    string
		Value    *string
		At       time.Time
		First    time.Time
		StreamSq int64
	}
	rows, aerr := listRows[latest](s, r, `SELECT DISTINCT ON (field) field, new_value, at,
			min(at) OVER (), stream_seq
		FROM onu_history WHERE olt_id = $1 AND pon_index = $2 AND onu_id = $3 AND at <= $4
		ORDER BY field, at DESC, stream_seq DESC`, k.OLT, k.PonIndex, k.ONUID, t)
	if aerr != nil {
		return aerr
	}
	if len(rows) == 0 {
		ctx, cancel := s.query(r)
		defer cancel()
		var first *time.Time
		if err := s.deps.DB.QueryRow(ctx, `SELECT min(at) FROM onu_history WHERE olt_id = $1 AND pon_index = $2 AND onu_id = $3`,
			k.OLT, k.PonIndex, k.ONUID).Scan(&first); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return s.readModelDown(err)
		}
		if first == nil {
			return notFound("ONU %s has no history: its state at %s is unknown", k, t.UTC().Format(time.RFC3339))
		}
		return notFound("ONU %s did not exist yet at %s: its first reading is at %s", k, t.UTC().Format(time.RFC3339), first.UTC().Format(time.RFC3339Nano))
	}
	state := map[string]any{}
	for _, f := range onuFields {
		switch f.Kind {
		case "string":
			state[f.Name] = ""
		default:
			state[f.Name] = nil
		}
	}
	changed := map[string]time.Time{}
	var last time.Time
	for _, row := range rows {
		kind := onuFieldKind(row.Field)
		if kind == "" {
			continue // a field of a newer version: not part of the state
		}
		changed[row.Field] = row.At
		if row.At.After(last) {
			last = row.At
		}
		if row.Value == nil {
			continue
		}
		switch kind {
		case "number":
			if v, err := strconv.ParseFloat(*row.Value, 64); err == nil {
				state[row.Field] = v
			}
		case "time":
			if v, err := time.Parse(time.RFC3339Nano, *row.Value); err == nil {
				state[row.Field] = v.UTC()
			}
		default:
			state[row.Field] = *row.Value
		}
	}
	state["olt_id"], state["pon_index"], state["onu_id"] = k.OLT, k.PonIndex, k.ONUID
	state["at"] = t.UTC()
	state["first_seen"] = rows[0].First.UTC()
	state["last_changed"] = last.UTC()
	state["changed_at"] = changed
	writeJSON(w, http.StatusOK, state)
	return nil
}

// onuSearchRow is an ONU found by serial, with its OLT.
type onuSearchRow struct {
	OLTID   string `json:"olt_id"`
	OLTName string `json:"olt_name"`
	onuRow
}

// searchONUs finds ONUs by serial across OLTs: exact, or a prefix with a
// trailing * (HWTC*).
func (s *server) searchONUs(w http.ResponseWriter, r *http.Request) *apiError {
	serial := r.URL.Query().Get("serial")
	if serial == "" {
		return badField("serial", "serial is required: an exact serial, or a prefix ending in * (e.g. HWTC*)")
	}
	if p := textProblem(serial, maxNameRunes, false); p != "" {
		return badField("serial", "serial %s", p)
	}
	prefix, isPrefix := strings.CutSuffix(serial, "*")
	if strings.Contains(prefix, "*") {
		return badField("serial", "serial: * is only allowed at the end (a prefix search)")
	}
	if isPrefix && prefix == "" {
		return badField("serial", "serial: a prefix search needs at least one character before *")
	}
	status, aerr := statusParam(r)
	if aerr != nil {
		return aerr
	}
	cols := "d.olt_id, COALESCE(o.name, ''), " + onuCols
	spec := listSpec{From: onuFrom + " LEFT JOIN olts o ON o.id = d.olt_id", Cols: cols,
		Sorts:       map[string]string{"serial": "d.serial", "olt_id": "d.olt_id", "status": "d.status", "last_seen": onuLastSeen, "rx_power_dbm": "d.rx_power_dbm"},
		DefaultSort: "d.serial", TieBreak: "d.olt_id, d.pon_index, d.onu_id", DefaultLimit: 100, MaxLimit: 1000}
	if isPrefix {
		// LIKE on a literal prefix: onu_data_serial serves it under the
		// C collation (a text_pattern_ops index would under any).
		spec.filter(`d.serial LIKE $? ESCAPE '\'`, strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix)+"%")
	} else {
		spec.filter("d.serial = $?", serial)
	}
	if status != "" {
		spec.filter("d.status = $?", status)
	}
	olt, aerr := idParam(r, "olt_id")
	if aerr != nil {
		return aerr
	}
	if olt != "" {
		spec.filter("d.olt_id = $?", olt)
	}
	rows, pi, aerr := listPage[onuSearchRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	body := pi.body("onus", rows, len(rows))
	body["serial"] = serial
	writeJSON(w, http.StatusOK, body)
	return nil
}

// historyFieldsDoc lists the known fields for the OpenAPI document.
func historyFieldsDoc() string {
	names := onuFieldNames()
	sort.Strings(names)
	return strings.Join(names, ", ")
}
