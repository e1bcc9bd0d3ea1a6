package console

import (
	"net/http"
	"net/url"
)

// oltTraps reads the OLT's last traps for the OLT page (newest first).
func (c *Console) oltTraps(r *http.Request, olt string) ([]map[string]any, string) {
	res := c.call(r.Context(), http.MethodGet, "/api/v1/olts/"+url.PathEscape(olt)+"/traps?limit=20", nil)
	if !res.ok() {
		msg, _ := res.errMsg()
		return nil, msg
	}
	var out []map[string]any
	for _, x := range anySlice(res.Body["traps"]) {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, ""
}
