package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// col is a column of a list.
type col struct {
	Key, Label string
	// Sort is the API's sort name ("" not sortable).
	Sort string
	// Kind: text, bool, badge, link (to Row link), time, rx, list,
	// availability (a badge with since and the last error).
	Kind string
}

// filter is a select or text filter of a list, passed to the API as is.
type filter struct {
	Name, Label string
	Options     []string // empty: a text input
}

// action is a batch action: enable, disable, delete, run.
type action struct {
	Name, Label, Role string
}

// listDef describes a list page over an API list.
type listDef struct {
	Title, Singular, Path, API, Key string
	Cols                            []col
	Filters                         []filter
	Actions                         []action
	// ItemAPI is the API path of one row (batch actions); Link the
	// console page of a row ("" none).
	ItemAPI func(row map[string]any) string
	Link    func(row map[string]any) string
	// ID is the value of a row's checkbox.
	ID func(row map[string]any) string
}

func byKey(k string) func(map[string]any) string {
	return func(row map[string]any) string { return str(row[k]) }
}

func listDefs() map[string]listDef {
	enable := []action{{"enable", "Enable", "operator"}, {"disable", "Disable", "operator"}, {"delete", "Delete", "admin"}}
	del := []action{{"delete", "Delete", "admin"}}
	yesno := []string{"", "true", "false"}
	return map[string]listDef{
		"brands": {Title: "Brands", Singular: "brand", Path: "/brands", API: "/api/v1/brands", Key: "brands",
			Cols: []col{{"id", "ID", "id", "edit"}, {"name", "Name", "name", "text"}, {"index_scheme", "Index scheme", "", "text"},
				{"description", "Description", "", "text"}, {"updated_at", "Updated", "updated_at", "time"}},
			Actions: del, ID: byKey("id"),
			ItemAPI: func(r map[string]any) string { return "/api/v1/brands/" + url.PathEscape(str(r["id"])) }},
		"oids": {Title: "OIDs", Singular: "OID", Path: "/oids", API: "/api/v1/oids", Key: "oids",
			Cols: []col{{"id", "ID", "id", "edit"}, {"brand_id", "Brand", "brand_id", "text"}, {"name", "Name", "name", "text"},
				{"oid", "OID", "oid", "mono"}, {"field", "Field", "field", "badge"}, {"decoder", "Decoder", "", "decoder"}},
			Filters: []filter{{Name: "brand_id", Label: "Brand"}},
			Actions: del, ID: byKey("id"),
			ItemAPI: func(r map[string]any) string { return "/api/v1/oids/" + url.PathEscape(str(r["id"])) }},
		"olts": {Title: "OLTs", Singular: "OLT", Path: "/olts", API: "/api/v1/olts", Key: "olts",
			Cols: []col{{"name", "Name", "name", "link"}, {"id", "ID", "id", "text"}, {"ip", "IP", "ip", "mono"}, {"port", "Port", "", "text"},
				{"brand_id", "Brand", "brand_id", "text"}, {"enabled", "Enabled", "enabled", "bool"}, {"availability", "Availability", "", "availability"},
				{"onus", "ONUs", "", "text"}, {"onus_online", "Online", "", "text"}, {"disabled_reason", "Auto-disabled", "", "text"}, {"updated_at", "Updated", "updated_at", "time"}},
			Filters: []filter{{Name: "brand_id", Label: "Brand"}, {Name: "enabled", Label: "Enabled", Options: yesno}},
			Actions: enable, ID: byKey("id"),
			ItemAPI: func(r map[string]any) string { return "/api/v1/olts/" + url.PathEscape(str(r["id"])) },
			Link:    func(r map[string]any) string { return "/olts/" + url.PathEscape(str(r["id"])) }},
		"jobs": {Title: "SNMP jobs", Singular: "job", Path: "/jobs", API: "/api/v1/jobs", Key: "jobs",
			Cols: []col{{"id", "ID", "id", "edit"}, {"name", "Name", "name", "text"}, {"brand_id", "Brand", "brand_id", "text"}, {"kind", "Kind", "kind", "badge"},
				{"interval_seconds", "Interval (s)", "interval_seconds", "text"}, {"priority", "Priority", "priority", "text"},
				{"max_retries", "Retries", "", "text"}, {"oid_ids", "OIDs", "", "list"}, {"enabled", "Enabled", "enabled", "bool"}},
			Filters: []filter{{Name: "brand_id", Label: "Brand"}, {Name: "enabled", Label: "Enabled", Options: yesno}},
			Actions: enable, ID: byKey("id"),
			ItemAPI: func(r map[string]any) string { return "/api/v1/jobs/" + url.PathEscape(str(r["id"])) }},
		"assignments": {Title: "Assignments", Singular: "assignment", Path: "/assignments", API: "/api/v1/assignments", Key: "assignments",
			Cols: []col{{"job_id", "Job", "job_id", "text"}, {"job_name", "Job name", "job_name", "text"}, {"olt_name", "OLT", "olt_name", "link"},
				{"enabled", "Enabled", "enabled", "bool"}, {"last_run_at", "Last run", "last_run_at", "time"}, {"updated_at", "Updated", "updated_at", "time"}},
			Filters: []filter{{Name: "job_id", Label: "Job"}, {Name: "olt_id", Label: "OLT"}, {Name: "enabled", Label: "Enabled", Options: yesno}},
			Actions: []action{{"enable", "Enable", "operator"}, {"disable", "Disable", "operator"}, {"run", "Run now", "operator"}, {"delete", "Unassign", "admin"}},
			ID:      func(r map[string]any) string { return str(r["job_id"]) + "/" + str(r["olt_id"]) },
			ItemAPI: func(r map[string]any) string {
				return "/api/v1/jobs/" + url.PathEscape(str(r["job_id"])) + "/olts/" + url.PathEscape(str(r["olt_id"]))
			},
			Link: func(r map[string]any) string { return "/olts/" + url.PathEscape(str(r["olt_id"])) }},
		"quotas": {Title: "Quota trackers", Singular: "quota tracker", Path: "/quotas", API: "/api/v1/quotas", Key: "quotas",
			Cols: []col{{"period_start", "Hour", "period_start", "time"}, {"olt_id", "OLT", "olt_id", "oltlink"}, {"job_name", "Task", "", "text"},
				{"compliance_percent", "Progress", "", "quotaprogress"}, {"quota_required", "Required", "", "text"}, {"quota_completed", "Done", "", "text"},
				{"quota_failed", "Failed", "", "text"}, {"quota_skipped", "Skipped", "", "text"}, {"quota_pending", "Pending", "", "text"},
				{"avg_duration_ms", "Avg ms", "", "text"}, {"status", "Status", "status", "badge"}},
			Filters: []filter{{Name: "olt_id", Label: "OLT"}, {Name: "status", Label: "Status", Options: []string{"", "IN_PROGRESS", "COMPLETED", "PARTIAL", "QUOTA_NOT_MET", "INTERRUPTED"}}}},
		"violations": {Title: "Quota violations", Singular: "violation", Path: "/violations", API: "/api/v1/violations", Key: "violations",
			Cols: []col{{"created_at", "When", "created_at", "time"}, {"severity", "Severity", "", "badge"}, {"olt_id", "OLT", "olt_id", "oltlink"},
				{"task_type", "Task", "", "text"}, {"period_start", "Hour", "period_start", "time"}, {"compliance", "Compliance %", "", "text"},
				{"notified", "Notified", "", "bool"}, {"id", "Report", "", "link"}},
			Filters: []filter{{Name: "olt_id", Label: "OLT"}, {Name: "severity", Label: "Severity", Options: []string{"", "LOW", "MEDIUM", "HIGH", "CRITICAL"}}},
			Link:    func(r map[string]any) string { return "/violations/" + url.PathEscape(str(r["id"])) }},
		"workflows": {Title: "Workflows", Singular: "workflow", Path: "/workflows", API: "/api/v1/workflows", Key: "workflows",
			Cols: []col{{"id", "ID", "id", "edit"}, {"name", "Name", "name", "text"}, {"olt_id", "OLT", "olt_id", "oltlink"},
				{"master_job_id", "Master job", "master_job_id", "mono"}, {"chain_job_ids", "Chain (in order)", "", "list"},
				{"stop_on_failure", "Stop on failure", "", "bool"}, {"enabled", "Enabled", "enabled", "bool"}, {"updated_at", "Updated", "updated_at", "time"}},
			Filters: []filter{{Name: "olt_id", Label: "OLT"}, {Name: "enabled", Label: "Enabled", Options: yesno}},
			Actions: enable, ID: byKey("id"),
			ItemAPI: func(r map[string]any) string { return "/api/v1/workflows/" + url.PathEscape(str(r["id"])) }},
		"vendor-profiles": {Title: "Vendor profiles", Singular: "vendor profile", Path: "/vendor-profiles", API: "/api/v1/vendor-profiles", Key: "profiles",
			Cols: []col{{"id", "ID", "", "link"}, {"name", "Name", "", "text"}, {"vendor", "Vendor", "", "text"}, {"index_scheme", "Index scheme", "", "text"},
				{"fields", "ONU fields", "", "list"}, {"jobs", "Default jobs", "", "list"}, {"verified", "Verified", "", "text"}, {"origin", "Origin", "", "badge"}, {"source", "Source", "", "mono"},
				{"error", "Validation error", "", "text"}},
			Link: func(r map[string]any) string { return "/vendor-profiles/" + url.PathEscape(str(r["id"])) }},
		"onus": {Title: "ONUs", Singular: "ONU", Path: "/onus", API: "/api/v1/onus", Key: "onus",
			Cols: []col{{"serial", "Serial", "serial", "link"}, {"olt_id", "OLT", "olt_id", "oltlink"}, {"port_name", "Port", "", "mono"},
				{"description", "Description", "", "text"}, {"status", "Status", "status", "badge"}, {"rx_power_dbm", "Rx (dBm)", "rx_power_dbm", "text"},
				{"last_seen", "Last seen", "last_seen", "time"}},
			Filters: []filter{{Name: "status", Label: "Status", Options: []string{"", "ONLINE", "OFFLINE", "LOS", "DYING_GASP", "POWER_OFF", "UNKNOWN"}}, {Name: "olt_id", Label: "OLT"}},
			Link: func(r map[string]any) string {
				return "/olts/" + url.PathEscape(str(r["olt_id"])) + "/onus/" + str(r["pon_index"]) + "/" + str(r["onu_id"])
			}},
		"users": {Title: "Users", Singular: "user", Path: "/users", API: "/api/v1/users", Key: "users",
			Cols: []col{{"username", "Username", "", "text"}, {"role", "Role", "", "badge"}, {"disabled", "Disabled", "", "bool"},
				{"created_at", "Created", "", "time"}},
			Actions: []action{{"enable", "Enable", "admin"}, {"disable", "Disable", "admin"}, {"delete", "Delete", "admin"}},
			ID:      byKey("id"),
			ItemAPI: func(r map[string]any) string { return "/api/v1/users/" + str(r["id"]) }},
	}
}

// listView is the data of a list page.
type listView struct {
	Def listDef
	page
	Sort     string
	CanNew   bool
	Editable bool
}

// passQuery copies the list's own query parameters to the API's.
func passQuery(r *http.Request, names ...string) url.Values {
	out := url.Values{}
	for _, n := range names {
		if v := r.URL.Query().Get(n); v != "" {
			out.Set(n, v)
		}
	}
	return out
}

func (c *Console) listHandler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		def := c.lists[name]
		v := c.newView(r, def.Title, name)
		names := []string{"q", "sort", "limit", "offset"}
		for _, f := range def.Filters {
			names = append(names, f.Name)
		}
		q := passQuery(r, names...)
		if q.Get("limit") == "" {
			q.Set("limit", "50")
		}
		lv := &listView{Def: def, Sort: q.Get("sort")}
		if name == "onus" {
			// ONUs are found by serial across every OLT: the search box
			// is the serial, exact or a prefix ending in *.
			serial := strings.TrimSpace(q.Get("q"))
			if serial == "" {
				v.Msg = "Search ONUs of every OLT by serial: exact (HWTC5F864F61) or a prefix ending in * (HWTC*)."
				v.Data = lv
				c.render(w, http.StatusOK, "list", v)
				return
			}
			q.Del("q")
			q.Set("serial", serial)
		}
		res := c.call(r.Context(), http.MethodGet, def.API+"?"+q.Encode(), nil)
		_, lv.Editable = c.forms[name]
		lv.Editable = lv.Editable && c.forms[name].Editable
		lv.CanNew = lv.Editable || name == "assignments" || name == "users"
		if !res.ok() {
			v.Err, _ = res.errMsg()
		} else {
			lv.page = pageOf(r, res.Body, def.Key)
		}
		v.Data = lv
		c.render(w, http.StatusOK, "list", v)
	})
}

// page is one page of an API list: its rows (the list under key of the
// answer), its place in the whole and the links to its neighbours.
type page struct {
	Rows                 []map[string]any
	Total, Offset, Limit int
	Prev, Next           string
}

// pageOf reads the page of an API list answer (total, offset, limit and the
// rows under key); a list without a limit is one page.
func pageOf(r *http.Request, body map[string]any, key string) page {
	var p page
	for _, x := range anySlice(body[key]) {
		if m, ok := x.(map[string]any); ok {
			p.Rows = append(p.Rows, m)
		}
	}
	p.Total, p.Offset, p.Limit = num(body["total"]), num(body["offset"]), num(body["limit"])
	if _, paged := body["total"]; !paged {
		// A list the API answers whole (vendor profiles) has no total:
		// its total is what it holds.
		p.Total = max(num(body["count"]), len(p.Rows))
	}
	if p.Limit == 0 {
		p.Limit = len(p.Rows)
	}
	if p.Offset > 0 {
		p.Prev = pageLink(r, max(0, p.Offset-p.Limit))
	}
	if p.Limit > 0 && p.Offset+p.Limit < p.Total {
		p.Next = pageLink(r, p.Offset+p.Limit)
	}
	return p
}

func pageLink(r *http.Request, offset int) string {
	q := r.URL.Query()
	q.Set("offset", strconv.Itoa(offset))
	return r.URL.Path + "?" + q.Encode()
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// batchHandler applies an action to the checked rows, one API call each,
// and reports what failed.
func (c *Console) batchHandler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		def := c.lists[name]
		if err := r.ParseForm(); err != nil {
			redirect(w, r, def.Path, "err", "bad form")
			return
		}
		act := r.PostFormValue("action")
		ids := r.PostForm["id"]
		back := safeNext(r.PostFormValue("back"))
		if back == "/" {
			back = def.Path
		}
		if len(ids) == 0 {
			redirect(w, r, back, "err", "nothing selected")
			return
		}
		var failed, execs []string
		done := 0
		for _, id := range ids {
			row := rowFromID(name, id)
			var res apiResult
			switch act {
			case "enable", "disable":
				if name == "users" {
					res = c.call(r.Context(), http.MethodPatch, def.ItemAPI(row), map[string]any{"disabled": act == "disable"})
				} else {
					res = c.call(r.Context(), http.MethodPost, def.ItemAPI(row)+"/"+act, nil)
				}
			case "delete":
				res = c.call(r.Context(), http.MethodDelete, def.ItemAPI(row), nil)
			case "run":
				res = c.runNode(r, str(row["job_id"]), str(row["olt_id"]))
			default:
				redirect(w, r, back, "err", "unknown action "+act)
				return
			}
			if res.ok() {
				done++
				if e := str(res.Body["execution_id"]); e != "" {
					execs = append(execs, e)
				}
				continue
			}
			msg, _ := res.errMsg()
			failed = append(failed, id+": "+msg)
		}
		if len(failed) > 0 {
			redirect(w, r, back, "err", fmt.Sprintf("%s: %d done, %d failed: %s", act, done, len(failed), strings.Join(failed, "; ")))
			return
		}
		msg := fmt.Sprintf("%s: %d done", act, done)
		if len(execs) > 0 {
			msg += " (executions " + strings.Join(execs, ", ") + ")"
		}
		redirect(w, r, back, "msg", msg)
	})
}

// rowFromID rebuilds the keys ItemAPI needs from a checkbox value.
func rowFromID(name, id string) map[string]any {
	if name == "assignments" {
		job, olt, _ := strings.Cut(id, "/")
		return map[string]any{"job_id": job, "olt_id": olt}
	}
	return map[string]any{"id": id}
}

// runNode asks the scheduler to run a node (job on an OLT) now:
// POST /api/v1/pollers/nodes/{node_id}/run/ (node id <job_id>.<olt_id>).
func (c *Console) runNode(r *http.Request, jobID, oltID string) apiResult {
	res := c.call(r.Context(), http.MethodPost, "/api/v1/pollers/nodes/"+url.PathEscape(jobID+"."+oltID)+"/run/", map[string]any{})
	if res.Status == http.StatusNotFound {
		if msg, _ := res.errMsg(); msg == "no such resource" {
			res.Body["error"] = "manual runs are not available in this version"
		}
	}
	return res
}

func (c *Console) runNow(w http.ResponseWriter, r *http.Request) {
	olt := r.PathValue("id")
	if err := r.ParseForm(); err != nil {
		redirect(w, r, "/olts/"+url.PathEscape(olt), "err", "bad form")
		return
	}
	res := c.runNode(r, r.PostFormValue("job_id"), olt)
	if !res.ok() {
		msg, _ := res.errMsg()
		redirect(w, r, "/olts/"+url.PathEscape(olt), "err", "run now: "+msg)
		return
	}
	// 202: the execution id, linked from the page (its execution appears
	// once a poller starts it).
	exec := str(res.Body["execution_id"])
	redirect(w, r, "/olts/"+url.PathEscape(olt)+"?exec="+url.QueryEscape(exec), "msg", "run requested: execution "+exec)
}
