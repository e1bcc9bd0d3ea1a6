package console

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/facho-olt/facho/streams"
)

// input is a form field.
type input struct {
	Name, Label, Type, Help string
	// Options of a select (value|label pairs are "value" when equal).
	Options []string
	// From fills the options from an API list: path, key, value field.
	From           string
	FromKey, Value string
	Required       bool
	// CreateOnly fields are shown read-only when editing.
	CreateOnly bool
	Multiple   bool
	// First are options before those From reads (e.g. "auto").
	First []option
}

// formDef is a create/edit form over an API resource.
type formDef struct {
	Title    string
	Inputs   []input
	Create   string // API path of POST
	Item     func(id string) string
	Editable bool
	// Body turns the form into the API's JSON; Values the API's JSON
	// into the form's values.
	Body   func(f url.Values, editing bool) map[string]any
	Values func(item map[string]any) map[string]string
	// FieldOf maps an API field to a form input name.
	FieldOf map[string]string
	// Back is where a saved form goes.
	Back string
}

func formDefs() map[string]formDef {
	text := func(f url.Values, name string) string { return strings.TrimSpace(f.Get(name)) }
	intOr := func(f url.Values, name string) any {
		s := text(f, name)
		if s == "" {
			return nil
		}
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
		return s // the API says it is not a whole number, at the field
	}
	floatOr := func(f url.Values, name string) any {
		s := text(f, name)
		if s == "" {
			return nil
		}
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			return n
		}
		return s
	}
	checked := func(f url.Values, name string) bool { return f.Get(name) != "" }
	return map[string]formDef{
		"brands": {Title: "brand", Create: "/api/v1/brands", Item: func(id string) string { return "/api/v1/brands/" + url.PathEscape(id) }, Editable: true, Back: "/brands",
			Inputs: []input{
				{Name: "id", Label: "ID", Type: "text", Help: "letters, digits, _ and -; empty: generated", CreateOnly: true},
				{Name: "name", Label: "Name", Type: "text", Required: true},
				{Name: "index_scheme", Label: "Index scheme", Type: "select", Options: []string{"pon.onu", "fiberhome"}, Help: "how a row index names an ONU"},
				{Name: "description", Label: "Description", Type: "textarea"},
			},
			Body: func(f url.Values, editing bool) map[string]any {
				b := map[string]any{"name": text(f, "name"), "index_scheme": f.Get("index_scheme"), "description": f.Get("description")}
				if !editing {
					b["id"] = text(f, "id")
				}
				return b
			},
			Values: func(it map[string]any) map[string]string {
				return map[string]string{"id": str(it["id"]), "name": str(it["name"]), "index_scheme": str(it["index_scheme"]), "description": str(it["description"])}
			}},
		"oids": {Title: "OID", Create: "/api/v1/oids", Item: func(id string) string { return "/api/v1/oids/" + url.PathEscape(id) }, Editable: true, Back: "/oids",
			Inputs: []input{
				{Name: "id", Label: "ID", Type: "text", Help: "empty: generated", CreateOnly: true},
				{Name: "brand_id", Label: "Brand", Type: "select", From: "/api/v1/brands?limit=1000", FromKey: "brands", Value: "id", Required: true},
				{Name: "name", Label: "Name", Type: "text", Required: true},
				{Name: "oid", Label: "OID", Type: "text", Help: "dotted numeric, e.g. 1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Required: true},
				{Name: "field", Label: "ONU field", Type: "select", Options: streams.ONUFields()},
				{Name: "decoder_kind", Label: "Decoder", Type: "select", Options: streams.DecoderKinds},
				{Name: "decoder_scale", Label: "Scale (scaled)", Type: "text"},
				{Name: "decoder_offset", Label: "Offset (scaled)", Type: "text"},
				{Name: "decoder_no_reading", Label: "No-reading value (scaled)", Type: "text"},
				{Name: "decoder_enum", Label: "Enum (one value=NAME a line)", Type: "textarea", Help: "e.g. 1=ONLINE"},
			},
			FieldOf: map[string]string{"decoder": "decoder_kind", "decoder.enum": "decoder_enum"},
			Body: func(f url.Values, editing bool) map[string]any {
				dec := map[string]any{"kind": f.Get("decoder_kind")}
				if v := floatOr(f, "decoder_scale"); v != nil {
					dec["scale"] = v
				}
				if v := floatOr(f, "decoder_offset"); v != nil {
					dec["offset"] = v
				}
				if v := intOr(f, "decoder_no_reading"); v != nil {
					dec["no_reading"] = v
				}
				if e := text(f, "decoder_enum"); e != "" {
					m := map[string]string{}
					for _, line := range strings.Split(e, "\n") {
						if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
							m[strings.TrimSpace(k)] = strings.TrimSpace(v)
						}
					}
					dec["enum"] = m
				}
				b := map[string]any{"brand_id": f.Get("brand_id"), "name": text(f, "name"), "oid": text(f, "oid"), "field": f.Get("field"), "decoder": dec}
				if !editing {
					b["id"] = text(f, "id")
				}
				return b
			},
			Values: func(it map[string]any) map[string]string {
				v := map[string]string{"id": str(it["id"]), "brand_id": str(it["brand_id"]), "name": str(it["name"]), "oid": str(it["oid"]), "field": str(it["field"])}
				if d, ok := it["decoder"].(map[string]any); ok {
					v["decoder_kind"], v["decoder_scale"], v["decoder_offset"], v["decoder_no_reading"] = str(d["kind"]), str(d["scale"]), str(d["offset"]), str(d["no_reading"])
					if e, ok := d["enum"].(map[string]any); ok {
						keys := make([]string, 0, len(e))
						for k := range e {
							keys = append(keys, k)
						}
						sort.Strings(keys)
						var lines []string
						for _, k := range keys {
							lines = append(lines, k+"="+str(e[k]))
						}
						v["decoder_enum"] = strings.Join(lines, "\n")
					}
				}
				return v
			}},
		"olts": {Title: "OLT", Create: "/api/v1/olts", Item: func(id string) string { return "/api/v1/olts/" + url.PathEscape(id) }, Editable: true, Back: "/olts",
			Inputs: []input{
				{Name: "id", Label: "ID", Type: "text", Help: "empty: generated", CreateOnly: true},
				{Name: "name", Label: "Name", Type: "text", Required: true},
				{Name: "ip", Label: "IP address", Type: "text", Help: "IPv4 or IPv6", Required: true},
				{Name: "port", Label: "SNMP port", Type: "text", Help: "default 161"},
				{Name: "community", Label: "SNMP v2c community", Type: "password", Help: "sealed at once, never shown again; when editing, empty keeps it"},
				{Name: "profile", Label: "Vendor profile", Type: "select", From: "/api/v1/vendor-profiles", FromKey: "profiles", Value: "id", CreateOnly: true,
					Help: "creates the profile's brand, OIDs and default jobs when absent and assigns the jobs; or choose a brand below"},
				{Name: "brand_id", Label: "Brand", Type: "select", From: "/api/v1/brands?limit=1000", FromKey: "brands", Value: "id",
					First: []option{{"auto", "auto — identify the vendor profile by SNMP (sysObjectID, sysDescr)"}},
					Help:  "with a vendor profile: leave empty"},
				{Name: "enabled", Label: "Enabled", Type: "checkbox"},
				{Name: "description", Label: "Description", Type: "textarea"},
			},
			Body: func(f url.Values, editing bool) map[string]any {
				b := map[string]any{"name": text(f, "name"), "ip": text(f, "ip"), "brand_id": f.Get("brand_id"), "enabled": checked(f, "enabled"), "description": f.Get("description")}
				if p := f.Get("profile"); p != "" && !editing {
					b["profile"] = p
				}
				if p := intOr(f, "port"); p != nil {
					b["port"] = p
				}
				if cm := f.Get("community"); cm != "" || !editing {
					b["community"] = cm
				}
				if !editing {
					b["id"] = text(f, "id")
				}
				return b
			},
			Values: func(it map[string]any) map[string]string {
				en := ""
				if it["enabled"] == true {
					en = "on"
				}
				return map[string]string{"id": str(it["id"]), "name": str(it["name"]), "ip": str(it["ip"]), "port": str(it["port"]),
					"brand_id": str(it["brand_id"]), "enabled": en, "description": str(it["description"])}
			}},
		"jobs": {Title: "SNMP job", Create: "/api/v1/jobs", Item: func(id string) string { return "/api/v1/jobs/" + url.PathEscape(id) }, Editable: true, Back: "/jobs",
			Inputs: []input{
				{Name: "id", Label: "ID", Type: "text", Help: "empty: generated", CreateOnly: true},
				{Name: "name", Label: "Name", Type: "text", Required: true},
				{Name: "brand_id", Label: "Brand", Type: "select", From: "/api/v1/brands?limit=1000", FromKey: "brands", Value: "id", Required: true},
				{Name: "kind", Label: "Kind", Type: "select", Options: []string{"discovery", "get", "walk", "bulkwalk"}},
				{Name: "oid_ids", Label: "OIDs (of the brand)", Type: "select", Multiple: true, From: "/api/v1/oids?limit=1000", FromKey: "oids", Value: "id"},
				{Name: "interval_seconds", Label: "Interval (seconds)", Type: "text", Required: true},
				{Name: "max_retries", Label: "Max retries", Type: "text", Help: "0 or empty: the class default (discovery 3, polling 2); -1: none"},
				{Name: "retry_delay_seconds", Label: "Retry delay (seconds)", Type: "text", Help: "default 120"},
				{Name: "timeout_seconds", Label: "Timeout (seconds)", Type: "text", Help: "0: the kind's default"},
				{Name: "priority", Label: "Priority", Type: "text", Help: "default: discovery 90, others 40"},
				{Name: "enabled", Label: "Enabled", Type: "checkbox"},
			},
			Body: func(f url.Values, editing bool) map[string]any {
				b := map[string]any{"name": text(f, "name"), "brand_id": f.Get("brand_id"), "kind": f.Get("kind"), "oid_ids": nonNilStrings(f["oid_ids"]),
					"enabled": checked(f, "enabled")}
				for _, n := range []string{"interval_seconds", "max_retries", "retry_delay_seconds", "timeout_seconds", "priority"} {
					if v := intOr(f, n); v != nil {
						b[n] = v
					}
				}
				if b["interval_seconds"] == nil {
					b["interval_seconds"] = 0
				}
				if b["timeout_seconds"] == nil {
					b["timeout_seconds"] = 0
				}
				if !editing {
					b["id"] = text(f, "id")
				}
				return b
			},
			Values: func(it map[string]any) map[string]string {
				v := map[string]string{}
				for _, k := range []string{"id", "name", "brand_id", "kind", "interval_seconds", "max_retries", "retry_delay_seconds", "timeout_seconds", "priority"} {
					v[k] = str(it[k])
				}
				if it["enabled"] == true {
					v["enabled"] = "on"
				}
				var ids []string
				for _, x := range anySlice(it["oid_ids"]) {
					ids = append(ids, str(x))
				}
				v["oid_ids"] = strings.Join(ids, ",")
				return v
			}},
		"assignments": {Title: "assignment", Back: "/assignments",
			Inputs: []input{
				{Name: "job_id", Label: "Job", Type: "select", From: "/api/v1/jobs?limit=1000", FromKey: "jobs", Value: "id", Required: true},
				{Name: "olt_id", Label: "OLT", Type: "select", From: "/api/v1/olts?limit=1000", FromKey: "olts", Value: "id", Required: true},
				{Name: "enabled", Label: "Enabled", Type: "checkbox"},
			},
			Body: func(f url.Values, _ bool) map[string]any {
				return map[string]any{"olt_id": f.Get("olt_id"), "enabled": checked(f, "enabled")}
			}},
		"workflows": {Title: "workflow", Create: "/api/v1/workflows", Item: func(id string) string { return "/api/v1/workflows/" + url.PathEscape(id) }, Editable: true, Back: "/workflows",
			Inputs: []input{
				{Name: "id", Label: "ID", Type: "text", Help: "empty: generated", CreateOnly: true},
				{Name: "name", Label: "Name", Type: "text", Required: true},
				{Name: "olt_id", Label: "OLT", Type: "select", From: "/api/v1/olts?limit=1000", FromKey: "olts", Value: "id", Required: true},
				{Name: "master_job_id", Label: "Master job", Type: "select", From: "/api/v1/jobs?limit=1000", FromKey: "jobs", Value: "id", Required: true,
					Help: "a job assigned to the OLT: the chain runs after it, under the same lease"},
				{Name: "chain_job_ids", Label: "Chain", Type: "text", Required: true, Help: "job ids in run order, separated by commas (jobs of the OLT's brand; 1 to 20)"},
				{Name: "stop_on_failure", Label: "Stop on failure", Type: "checkbox"},
				{Name: "enabled", Label: "Enabled", Type: "checkbox"},
			},
			Body: func(f url.Values, editing bool) map[string]any {
				chain := []string{}
				for _, j := range strings.Split(f.Get("chain_job_ids"), ",") {
					if j = strings.TrimSpace(j); j != "" {
						chain = append(chain, j)
					}
				}
				b := map[string]any{"name": text(f, "name"), "olt_id": f.Get("olt_id"), "master_job_id": f.Get("master_job_id"), "chain_job_ids": chain,
					"stop_on_failure": checked(f, "stop_on_failure"), "enabled": checked(f, "enabled")}
				if !editing {
					b["id"] = text(f, "id")
				}
				return b
			},
			Values: func(it map[string]any) map[string]string {
				v := map[string]string{"id": str(it["id"]), "name": str(it["name"]), "olt_id": str(it["olt_id"]), "master_job_id": str(it["master_job_id"])}
				var chain []string
				for _, x := range anySlice(it["chain_job_ids"]) {
					chain = append(chain, str(x))
				}
				v["chain_job_ids"] = strings.Join(chain, ", ")
				for _, k := range []string{"stop_on_failure", "enabled"} {
					if it[k] == true {
						v[k] = "on"
					}
				}
				return v
			}},
		"users": {Title: "user", Create: "/api/v1/users", Back: "/users",
			Inputs: []input{
				{Name: "username", Label: "Username", Type: "text", Required: true},
				{Name: "role", Label: "Role", Type: "select", Options: []string{"viewer", "operator", "admin"}},
				{Name: "password", Label: "Password", Type: "password", Help: "at least 10 characters", Required: true},
			},
			Body: func(f url.Values, _ bool) map[string]any {
				return map[string]any{"username": text(f, "username"), "role": f.Get("role"), "password": f.Get("password")}
			}},
	}
}

func nonNilStrings(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// option is a select option.
type option struct{ Value, Label string }

// formView is the data of a form page.
type formView struct {
	Def     formDef
	Name    string
	Editing bool
	ID      string
	Options map[string][]option
	Action  string
}

func (c *Console) formHandler(name string, editing bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		def := c.forms[name]
		id := r.PathValue("id")
		title := "New " + def.Title
		if editing {
			title = "Edit " + def.Title + " " + id
		}
		v := c.newView(r, title, name)
		fv := &formView{Def: def, Name: name, Editing: editing, ID: id, Options: map[string][]option{}, Action: r.URL.Path}
		v.Data = fv
		for _, in := range def.Inputs {
			if in.From == "" {
				continue
			}
			res := c.call(r.Context(), http.MethodGet, in.From, nil)
			opts := []option{}
			if !in.Multiple {
				opts = append(opts, option{"", "—"})
			}
			opts = append(opts, in.First...)
			for _, row := range anySlice(res.Body[in.FromKey]) {
				m, _ := row.(map[string]any)
				label := str(m[in.Value])
				if n := str(m["name"]); n != "" && n != label {
					label += " — " + n
				}
				if b := str(m["brand_id"]); b != "" && in.FromKey != "olts" {
					label += " (" + b + ")"
				}
				opts = append(opts, option{str(m[in.Value]), label})
			}
			fv.Options[in.Name] = opts
		}
		if r.Method == http.MethodGet {
			if editing {
				res := c.call(r.Context(), http.MethodGet, def.Item(id), nil)
				if !res.ok() {
					msg, _ := res.errMsg()
					redirect(w, r, def.Back, "err", msg)
					return
				}
				v.Values = def.Values(res.Body)
			} else {
				v.Values["enabled"] = "on"
				for k, vals := range r.URL.Query() {
					v.Values[k] = vals[0]
				}
			}
			c.render(w, http.StatusOK, "form", v)
			return
		}
		if err := r.ParseForm(); err != nil {
			redirect(w, r, def.Back, "err", "bad form")
			return
		}
		body := def.Body(r.PostForm, editing)
		var res apiResult
		switch {
		case editing:
			res = c.call(r.Context(), http.MethodPut, def.Item(id), body)
		case name == "assignments":
			res = c.call(r.Context(), http.MethodPost, "/api/v1/jobs/"+url.PathEscape(r.PostFormValue("job_id"))+"/olts", body)
		default:
			res = c.call(r.Context(), http.MethodPost, def.Create, body)
		}
		if res.ok() {
			back := def.Back
			if name == "olts" {
				back = "/olts/" + url.PathEscape(str(res.Body["id"]))
				if editing {
					back = "/olts/" + url.PathEscape(id)
				}
			}
			msg := "saved"
			if p := str(res.Body["profile"]); p != "" {
				// An OLT created from a vendor profile: what it created.
				var as []string
				for _, a := range anySlice(res.Body["assigned"]) {
					as = append(as, str(a))
				}
				msg = "saved with vendor profile " + p + "; jobs assigned: " + strings.Join(as, ", ")
			}
			redirect(w, r, back, "msg", msg)
			return
		}
		// Show the API's error at the field it names.
		msg, fieldName := res.errMsg()
		for k, vals := range r.PostForm {
			if k != "password" && k != "community" && k != "csrf" {
				v.Values[k] = strings.Join(vals, ",")
			}
		}
		if mapped, ok := def.FieldOf[fieldName]; ok {
			fieldName = mapped
		}
		if name == "assignments" && res.Status == http.StatusNotFound {
			fieldName = "job_id"
		}
		known := false
		for _, in := range def.Inputs {
			if in.Name == fieldName {
				known = true
			}
		}
		if known {
			v.Errors[fieldName] = msg
		} else {
			v.Err = msg
		}
		status := res.Status
		if status < 400 {
			status = http.StatusBadRequest
		}
		c.render(w, status, "form", v)
	})
}
