package console

import (
	"net/http"
	"net/url"
	"strconv"
)

// healthPanel is the health block of an OLT page: its last health reading
// (GET /api/v1/olts/{id}/health), formatted.
type healthPanel struct {
	// Found: the OLT has a reading; Err: the API could not say.
	Found       bool
	Err         string
	ObservedAt  string
	CPU, Memory string
	Temperature string
	Boards      int
	Fans, PSUs  []healthUnit
	Uplinks     []healthUnit
	FansFailed  int
	PSUsFailed  int
	PONsDown    int
	Changes     []map[string]any
}

// healthUnit is a fan, power supply or uplink with its badge.
type healthUnit struct {
	Index, Name, State, Class, Extra string
}

// stateClass is the badge of a health state.
func stateClass(s string) string {
	switch s {
	case "ok", "up":
		return "b-good"
	case "failed", "down":
		return "b-bad"
	}
	return "b-neutral"
}

func percent(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64) + " %"
	}
	return "—"
}

func celsius(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64) + " °C"
	}
	return "—"
}

// oltHealth reads the health block of olt.
func (c *Console) oltHealth(r *http.Request, olt string) *healthPanel {
	res := c.call(r.Context(), http.MethodGet, "/api/v1/olts/"+url.PathEscape(olt)+"/health", nil)
	p := &healthPanel{}
	if res.Status == http.StatusNotFound {
		return p
	}
	if !res.ok() {
		msg, _ := res.errMsg()
		p.Err = msg
		return p
	}
	b := res.Body
	p.Found, p.ObservedAt = true, str(b["observed_at"])
	if ch, ok := b["chassis"].(map[string]any); ok {
		p.CPU, p.Memory, p.Temperature, p.Boards = percent(ch["cpu_percent"]), percent(ch["memory_percent"]), celsius(ch["temperature_c"]), num(ch["boards"])
	}
	units := func(key, stateKey string) []healthUnit {
		var out []healthUnit
		for _, x := range anySlice(b[key]) {
			m, ok := x.(map[string]any)
			if !ok {
				continue
			}
			u := healthUnit{Index: str(m["index"]), Name: str(m["name"]), State: str(m[stateKey])}
			u.Class = stateClass(u.State)
			if in, out := m["in_errors"], m["out_errors"]; in != nil || out != nil {
				u.Extra = "errors in " + str(in) + ", out " + str(out)
			}
			out = append(out, u)
		}
		return out
	}
	p.Fans, p.PSUs, p.Uplinks = units("fans", "status"), units("psus", "status"), units("uplinks", "oper_state")
	p.FansFailed, p.PSUsFailed, p.PONsDown = num(b["fans_failed"]), num(b["psus_failed"]), num(b["pons_down"])
	for i, x := range anySlice(b["changes"]) {
		if m, ok := x.(map[string]any); ok && i < 10 {
			p.Changes = append(p.Changes, m)
		}
	}
	return p
}
