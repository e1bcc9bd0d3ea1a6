package console

import (
	"net/http"
	"net/url"
	"strings"
)

// Alerts for people: the Alerts page (active alerts first, the most
// severe first, filters by OLT, PON, rule, severity and state;
// acknowledge and silence), the silences page (create, delete), the
// outage banner of every page and the OLT page's PON view. Every read and
// every action goes through the API (/api/v1/alerts, /incidents,
// /silences, /olts/{id}/pons).

// alertsView is the data of the Alerts page.
type alertsView struct {
	Alerts     []map[string]any
	Total      int
	Offset     int
	Prev, Next string
	States     []string
	Severities []string
	// Grouped: the alerts grouped under an incident are listed one by one
	// (?grouped=show); by default an outage is its incident's one row,
	// with the count of what it groups (Members) and a link to them.
	Grouped bool
	// Incident: only the alerts this incident groups (?incident_id=).
	Incident string
	Members  map[string]int64
}

func (c *Console) alertsPage(w http.ResponseWriter, r *http.Request) {
	v := c.newView(r, "Alerts", "alerts")
	q := passQuery(r, "q", "state", "olt_id", "pon", "rule", "severity", "sort", "offset", "limit", "incident_id")
	if q.Get("limit") == "" {
		q.Set("limit", "100")
	}
	av := &alertsView{States: []string{"", "resolved", "all"}, Severities: []string{"", "critical", "warning", "info"},
		Grouped: r.URL.Query().Get("grouped") == "show", Incident: q.Get("incident_id"), Members: map[string]int64{}}
	if !av.Grouped && av.Incident == "" {
		q.Set("inhibited", "false")
	}
	res := c.call(r.Context(), http.MethodGet, "/api/v1/alerts?"+q.Encode(), nil)
	v.Data = av
	if !res.ok() {
		msg, f := res.errMsg()
		if f != "" {
			v.Errors[f] = msg
		}
		v.Err = msg
	}
	pg := pageOf(r, res.Body, "alerts")
	av.Alerts, av.Total, av.Offset, av.Prev, av.Next = pg.Rows, pg.Total, pg.Offset, pg.Prev, pg.Next
	// How many alerts each incident on the page groups.
	if res.ok() && !av.Grouped && av.Incident == "" {
		iq := passQuery(r, "state", "olt_id", "pon", "severity")
		iq.Set("limit", "100")
		if inc := c.call(r.Context(), http.MethodGet, "/api/v1/incidents?"+iq.Encode(), nil); inc.ok() {
			for _, x := range anySlice(inc.Body["incidents"]) {
				if m, ok := x.(map[string]any); ok {
					if n, ok := m["alerts"].(float64); ok {
						av.Members[str(m["id"])] = int64(n)
					}
				}
			}
		}
	}
	c.render(w, http.StatusOK, "alerts", v)
}

// back is a form's page to return to: a path of this console, else
// fallback.
func back(r *http.Request, fallback string) string {
	b := r.PostFormValue("back")
	if b == "" || !strings.HasPrefix(b, "/") || strings.HasPrefix(b, "//") || strings.HasPrefix(b, "/\\") {
		return fallback
	}
	return b
}

// ackAlert acknowledges an alert through the API.
func (c *Console) ackAlert(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		redirect(w, r, "/alerts", "err", "bad form")
		return
	}
	id := r.PathValue("id")
	to := back(r, "/alerts")
	res := c.call(r.Context(), http.MethodPost, "/api/v1/alerts/"+url.PathEscape(id)+"/ack", map[string]any{"comment": r.PostFormValue("comment")})
	if !res.ok() {
		msg, _ := res.errMsg()
		redirect(w, r, to, "err", "acknowledge: "+msg)
		return
	}
	redirect(w, r, to, "msg", "alert acknowledged: it is not notified again until it resolves")
}

// silenceFields are the silence form's fields, in the API's names.
var silenceFields = []string{"olt_id", "pon", "rule", "duration", "comment"}

// silencesPage lists the silences (active and pending; ?state=all for
// every one) with the form that creates one, prefilled from the query
// (the Alerts page's Silence links).
func (c *Console) silencesPage(w http.ResponseWriter, r *http.Request) {
	v := c.newView(r, "Silences", "alerts")
	for _, f := range silenceFields {
		v.Values[f] = r.URL.Query().Get(f)
	}
	if v.Values["duration"] == "" {
		v.Values["duration"] = "2h"
	}
	c.renderSilences(w, r, v, http.StatusOK)
}

func (c *Console) renderSilences(w http.ResponseWriter, r *http.Request, v *view, status int) {
	q := passQuery(r, "state", "olt_id", "rule")
	if r.Method != http.MethodGet {
		q = url.Values{}
	}
	res := c.call(r.Context(), http.MethodGet, "/api/v1/silences?"+q.Encode(), nil)
	if !res.ok() && v.Err == "" {
		v.Err, _ = res.errMsg()
	}
	v.Data = map[string]any{"Silences": anySlice(res.Body["silences"])}
	c.render(w, status, "silences", v)
}

// createSilence posts the form to the API; its 400 is shown at the
// field it names.
func (c *Console) createSilence(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		redirect(w, r, "/silences", "err", "bad form")
		return
	}
	body := map[string]any{}
	v := c.newView(r, "Silences", "alerts")
	for _, f := range silenceFields {
		val := strings.TrimSpace(r.PostFormValue(f))
		v.Values[f] = val
		if val != "" {
			body[f] = val
		}
	}
	res := c.call(r.Context(), http.MethodPost, "/api/v1/silences", body)
	if !res.ok() {
		msg, f := res.errMsg()
		if f == "" {
			v.Err = msg
		} else {
			v.Errors[f] = msg
		}
		c.renderSilences(w, r, v, res.Status)
		return
	}
	redirect(w, r, "/silences", "msg", "silence created until "+str(res.Body["ends_at"]))
}

// deleteSilence ends a silence through the API.
func (c *Console) deleteSilence(w http.ResponseWriter, r *http.Request) {
	res := c.call(r.Context(), http.MethodDelete, "/api/v1/silences/"+url.PathEscape(r.PathValue("id")), nil)
	if !res.ok() {
		msg, _ := res.errMsg()
		redirect(w, r, "/silences", "err", "delete silence: "+msg)
		return
	}
	redirect(w, r, "/silences", "msg", "silence deleted")
}

// outages are the firing PON and OLT incidents of the banner every page
// shows (nil for an anonymous page or when the API cannot say).
func (c *Console) outages(r *http.Request) []map[string]any {
	res := c.call(r.Context(), http.MethodGet, "/api/v1/incidents?limit=5", nil)
	if !res.ok() {
		return nil
	}
	var out []map[string]any
	for _, x := range anySlice(res.Body["incidents"]) {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// ponView is one PON of the OLT page's PON view with its firing alerts.
type ponView struct {
	PON    map[string]any
	Alerts []map[string]any
}

// oltPONs reads the OLT's PONs and its firing alerts, grouped by PON.
func (c *Console) oltPONs(r *http.Request, olt string) ([]ponView, string) {
	res := c.call(r.Context(), http.MethodGet, "/api/v1/olts/"+url.PathEscape(olt)+"/pons", nil)
	if !res.ok() {
		msg, _ := res.errMsg()
		return nil, msg
	}
	alerts := c.call(r.Context(), http.MethodGet, "/api/v1/alerts?limit=1000&olt_id="+url.QueryEscape(olt), nil)
	byPon := map[string][]map[string]any{}
	for _, x := range anySlice(alerts.Body["alerts"]) {
		if m, ok := x.(map[string]any); ok && m["pon"] != nil {
			byPon[str(m["pon"])] = append(byPon[str(m["pon"])], m)
		}
	}
	var out []ponView
	for _, x := range anySlice(res.Body["pons"]) {
		if m, ok := x.(map[string]any); ok {
			out = append(out, ponView{PON: m, Alerts: byPon[str(m["pon"])]})
		}
	}
	return out, ""
}
