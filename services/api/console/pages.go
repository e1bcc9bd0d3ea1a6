package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/facho-olt/facho/pkg/telemetry"
)

// oltView is the data of an OLT page.
type oltView struct {
	OLT         map[string]any
	ONUs        []map[string]any
	ONUTotal    int
	ONUOffset   int
	ONULimit    int
	Prev, Next  string
	Assignments []map[string]any
	// Nodes are the scheduler's nodes of the OLT (a job on it), by job
	// id; Orphans those no assignment lists (a workflow's, say).
	Nodes      map[string]map[string]any
	Orphans    []map[string]any
	NodesErr   string
	Executions []map[string]any
	Statuses   []string
	// PONs: ONUs total / online / down per PON with their firing alerts.
	PONs    []ponView
	PONsErr string
	// Health: the OLT's last health reading (health.go).
	Health *healthPanel
	// Traps: the OLT's last traps (traps.go).
	Traps    []map[string]any
	TrapsErr string
}

func (c *Console) oltPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	base := "/api/v1/olts/" + url.PathEscape(id)
	res := c.call(r.Context(), http.MethodGet, base, nil)
	if res.Status == http.StatusNotFound {
		c.notFound(w, r)
		return
	}
	v := c.newView(r, "OLT "+id, "olts")
	v.Live = "olt:" + id
	// The status filter: the common statuses, then the states vendors
	// report (profiles decode them into these names).
	ov := &oltView{OLT: res.Body, Statuses: []string{"", "ONLINE", "OFFLINE", "LOS", "DYING_GASP", "POWER_OFF", "UNKNOWN"}}
	v.Data = ov
	if !res.ok() {
		v.Err, _ = res.errMsg()
		c.render(w, res.Status, "olt", v)
		return
	}
	v.Title = "OLT " + str(res.Body["name"])
	q := passQuery(r, "q", "status", "sort", "offset", "limit")
	if q.Get("limit") == "" {
		q.Set("limit", "100")
	}
	onus := c.call(r.Context(), http.MethodGet, base+"/onus?"+q.Encode(), nil)
	if !onus.ok() {
		v.Err, _ = onus.errMsg()
	}
	pg := pageOf(r, onus.Body, "onus")
	ov.ONUs, ov.ONUTotal, ov.ONUOffset, ov.ONULimit, ov.Prev, ov.Next = pg.Rows, pg.Total, pg.Offset, pg.Limit, pg.Prev, pg.Next
	for _, x := range anySlice(c.call(r.Context(), http.MethodGet, "/api/v1/assignments?limit=200&olt_id="+url.QueryEscape(id), nil).Body["assignments"]) {
		if m, ok := x.(map[string]any); ok {
			ov.Assignments = append(ov.Assignments, m)
		}
	}
	ov.Nodes = map[string]map[string]any{}
	nodes := c.call(r.Context(), http.MethodGet, base+"/nodes", nil)
	if !nodes.ok() {
		ov.NodesErr, _ = nodes.errMsg()
	}
	for _, x := range anySlice(nodes.Body["nodes"]) {
		if m, ok := x.(map[string]any); ok {
			ov.Nodes[str(m["job_id"])] = m
		}
	}
	assigned := map[string]bool{}
	for _, a := range ov.Assignments {
		assigned[str(a["job_id"])] = true
	}
	for _, x := range anySlice(nodes.Body["nodes"]) {
		if m, ok := x.(map[string]any); ok && !assigned[str(m["job_id"])] {
			ov.Orphans = append(ov.Orphans, m)
		}
	}
	ov.PONs, ov.PONsErr = c.oltPONs(r, id)
	ov.Health = c.oltHealth(r, id)
	ov.Traps, ov.TrapsErr = c.oltTraps(r, id)
	for _, x := range anySlice(c.call(r.Context(), http.MethodGet, "/api/v1/executions?limit=25&olt_id="+url.QueryEscape(id), nil).Body["executions"]) {
		if m, ok := x.(map[string]any); ok {
			ov.Executions = append(ov.Executions, m)
		}
	}
	c.render(w, http.StatusOK, "olt", v)
}

func (c *Console) executionPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	res := c.call(r.Context(), http.MethodGet, "/api/v1/executions/"+url.PathEscape(id), nil)
	if res.Status == http.StatusNotFound {
		c.notFound(w, r)
		return
	}
	v := c.newView(r, "Execution "+id, "olts")
	if !res.ok() {
		v.Err, _ = res.errMsg()
	}
	v.Data = res.Body
	c.render(w, http.StatusOK, "execution", v)
}

func (c *Console) logsPage(w http.ResponseWriter, r *http.Request) {
	v := c.newView(r, "Coordinator logs", "logs")
	v.Live = "logs"
	q := passQuery(r, "q", "level", "event_type", "olt_id", "since", "until", "sort", "offset", "limit")
	if q.Get("limit") == "" {
		q.Set("limit", "100")
	}
	res := c.call(r.Context(), http.MethodGet, "/api/v1/coordinator-logs?"+q.Encode(), nil)
	if !res.ok() {
		v.Err, _ = res.errMsg()
	}
	lv := &listView{page: pageOf(r, res.Body, "logs")}
	v.Data = lv
	c.render(w, http.StatusOK, "logs", v)
}

func (c *Console) violationPage(w http.ResponseWriter, r *http.Request) {
	res := c.call(r.Context(), http.MethodGet, "/api/v1/violations/"+url.PathEscape(r.PathValue("id")), nil)
	if res.Status == http.StatusNotFound {
		c.notFound(w, r)
		return
	}
	v := c.newView(r, "Quota violation", "violations")
	if !res.ok() {
		v.Err, _ = res.errMsg()
	}
	v.Data = res.Body
	c.render(w, http.StatusOK, "violation", v)
}

// pollersPage shows GET /api/v1/pollers/ and /api/v1/pollers/stats/,
// refreshed every few seconds by the page's live stream.
func (c *Console) pollersPage(w http.ResponseWriter, r *http.Request) {
	v := c.newView(r, "Pollers", "pollers")
	v.Live = "pollers"
	list := c.call(r.Context(), http.MethodGet, "/api/v1/pollers/", nil)
	stats := c.call(r.Context(), http.MethodGet, "/api/v1/pollers/stats/", nil)
	for _, res := range []apiResult{list, stats} {
		if !res.ok() {
			v.Err, _ = res.errMsg()
		}
	}
	v.Data = map[string]any{"Pollers": anySlice(list.Body["pollers"]), "Stats": stats.Body, "Classes": sortedKeys(stats.Body["classes"])}
	c.render(w, http.StatusOK, "pollers", v)
}

// queuePage shows the planner's queue report (GET /api/v1/pollers/queue/,
// seed 004's Zabbix-like queue): size, overload, the next nodes and the
// delayed buckets per class and per OLT.
func (c *Console) queuePage(w http.ResponseWriter, r *http.Request) {
	v := c.newView(r, "Queue", "queue")
	v.Live = "pollers"
	res := c.call(r.Context(), http.MethodGet, "/api/v1/pollers/queue/", nil)
	if !res.ok() {
		v.Err, _ = res.errMsg()
	}
	// The report's delay buckets (cumulative), shortest first.
	buckets := []string{"5s", "10s", "30s", "1m", "5m", "10m"}
	v.Data = map[string]any{"Report": res.Body, "Buckets": buckets, "Classes": sortedKeys(res.Body["delayed_by_class"]),
		"OLTs": sortedKeys(res.Body["delayed_by_olt"]), "Backlog": sortedKeys(res.Body["classes"])}
	c.render(w, http.StatusOK, "queue", v)
}

func sortedKeys(v any) []string {
	m, _ := v.(map[string]any)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// vendorProfilePage shows one vendor profile: what it matches, its
// columns with their decoders, SNMP tuning and default jobs.
func (c *Console) vendorProfilePage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	res := c.call(r.Context(), http.MethodGet, "/api/v1/vendor-profiles/"+url.PathEscape(id), nil)
	if res.Status == http.StatusNotFound {
		c.notFound(w, r)
		return
	}
	v := c.newView(r, "Vendor profile "+id, "vendor-profiles")
	if !res.ok() {
		v.Err, _ = res.errMsg()
	}
	v.Data = res.Body
	c.render(w, http.StatusOK, "vendorprofile", v)
}

func (c *Console) tokensPage(w http.ResponseWriter, r *http.Request) {
	v := c.newView(r, "API tokens", "tokens")
	res := c.call(r.Context(), http.MethodGet, "/api/v1/tokens", nil)
	if !res.ok() {
		v.Err, _ = res.errMsg()
	}
	v.Data = map[string]any{"Tokens": anySlice(res.Body["tokens"])}
	c.render(w, http.StatusOK, "tokens", v)
}

func (c *Console) createToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		redirect(w, r, "/tokens", "err", "bad form")
		return
	}
	res := c.call(r.Context(), http.MethodPost, "/api/v1/tokens", map[string]any{"name": strings.TrimSpace(r.PostFormValue("name"))})
	v := c.newView(r, "API tokens", "tokens")
	if !res.ok() {
		msg, _ := res.errMsg()
		v.Errors["name"] = msg
	}
	list := c.call(r.Context(), http.MethodGet, "/api/v1/tokens", nil)
	// The secret is shown once, on this answer only (never stored).
	v.Data = map[string]any{"Tokens": anySlice(list.Body["tokens"]), "Secret": str(res.Body["secret"])}
	c.render(w, res.Status, "tokens", v)
}

func (c *Console) revokeToken(w http.ResponseWriter, r *http.Request) {
	res := c.call(r.Context(), http.MethodDelete, "/api/v1/tokens/"+url.PathEscape(r.PathValue("id")), nil)
	if !res.ok() {
		msg, _ := res.errMsg()
		redirect(w, r, "/tokens", "err", msg)
		return
	}
	redirect(w, r, "/tokens", "msg", "token revoked")
}

// events streams server-sent events: "change" whenever the fingerprint of
// the topic's data moves (topic olt:<id>: its ONUs, executions,
// assignments and scheduled nodes; logs: the coordinator logs; pollers:
// the pollers and the queue, every few seconds). The page then re-fetches
// itself and swaps its live parts. Every event's id is a digest of the
// fingerprint it reports (the first block carries the one the stream
// starts from): a page that reconnects sends it back as Last-Event-ID, and
// gets a "change" at once when the data moved while it was away, so it
// misses nothing (a page only needs the latest state, not each step).
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	topic := r.URL.Query().Get("topic")
	var sql string
	var args []any
	switch {
	case strings.HasPrefix(topic, "olt:"):
		sql = `SELECT (SELECT count(*)::text || '/' || coalesce(max(last_seen)::text, '') || '/' ||
				(SELECT count(*) FROM onu_data WHERE olt_id = $1 AND status = 'ONLINE')::text FROM onu_data WHERE olt_id = $1)
			|| '|' || (SELECT coalesce(max(seen_at)::text, '') FROM onu_walks WHERE olt_id = $1)
			|| '|' || (SELECT coalesce(max(updated_at)::text, '') FROM executions WHERE olt_id = $1)
			|| '|' || (SELECT coalesce(max(updated_at)::text, '') || coalesce(max(last_run_at)::text, '') FROM snmp_job_olts WHERE olt_id = $1)
			|| '|' || (SELECT coalesce(max(updated_at)::text, '') FROM olts WHERE id = $1)
			|| '|' || (SELECT coalesce(max(stream_seq)::text, '') FROM olt_health WHERE olt_id = $1)`
		args = []any{strings.TrimPrefix(topic, "olt:")}
	case topic == "logs":
		sql = `SELECT coalesce(max(id)::text, '') FROM coordinator_logs`
	case topic == "pollers":
		// Poller state lives in a KV bucket, not Postgres: a change every
		// few seconds makes the page re-read it.
		sql = `SELECT (extract(epoch FROM now())::bigint / 3)::text`
	default:
		http.Error(w, "unknown topic", http.StatusBadRequest)
		return
	}
	if c.d.DB == nil {
		http.Error(w, "live updates unavailable", http.StatusServiceUnavailable)
		return
	}
	rc := http.NewResponseController(w)
	fl := flusher{rc}
	// The server's write timeout would cut the stream: lift it.
	_ = rc.SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 3000\n\n")
	fl.Flush()
	tick := time.NewTicker(c.d.LiveInterval)
	defer tick.Stop()
	// The stream ends when the client leaves or the server shuts down.
	live, stop := telemetry.UntilShutdown(r.Context())
	defer stop()
	last := ""
	for n := 0; ; n++ {
		ctx, cancel := context.WithTimeout(live, 5*time.Second)
		var fp string
		err := c.d.DB.QueryRow(ctx, sql, args...).Scan(&fp)
		if err == nil && strings.HasPrefix(topic, "olt:") {
			// The OLT's nodes live in the schedule KV bucket: their
			// state, runs and execution in flight join the fingerprint.
			fp += "|" + nodesFingerprint(c.call(ctx, http.MethodGet, "/api/v1/olts/"+url.PathEscape(strings.TrimPrefix(topic, "olt:"))+"/nodes", nil))
		}
		cancel()
		switch {
		case live.Err() != nil:
			return
		case err != nil:
			c.d.Log.Debug().Err(err).Msg("live fingerprint")
		case n == 0 && r.Header.Get("Last-Event-ID") != "" && r.Header.Get("Last-Event-ID") != fingerprintID(fp):
			// A reconnecting page whose data moved while it was away.
			last = fp
			if _, err := fmt.Fprintf(w, "id: %s\nevent: change\ndata: %d\n\n", fingerprintID(fp), n); err != nil {
				return
			}
			fl.Flush()
		case n == 0:
			last = fp
			if _, err := fmt.Fprintf(w, "id: %s\n\n", fingerprintID(fp)); err != nil {
				return
			}
			fl.Flush()
		case fp != last:
			last = fp
			if _, err := fmt.Fprintf(w, "id: %s\nevent: change\ndata: %d\n\n", fingerprintID(fp), n); err != nil {
				return
			}
			fl.Flush()
		case n%15 == 0:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
		select {
		case <-live.Done():
			return
		case <-tick.C:
		}
	}
}

// fingerprintID is the event id of a live fingerprint: a short digest.
func fingerprintID(fp string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(fp))
	return strconv.FormatUint(h.Sum64(), 36)
}

// nodesFingerprint is what the OLT page shows of its nodes.
func nodesFingerprint(res apiResult) string {
	var b strings.Builder
	for _, x := range anySlice(res.Body["nodes"]) {
		for _, k := range []string{"node_id", "state", "enabled", "next_run_at", "last_run_at", "last_status", "in_flight"} {
			b.WriteString(str(field(x, k)))
			b.WriteByte(',')
		}
	}
	return b.String()
}

type flusher struct{ rc *http.ResponseController }

func (f flusher) Flush() { _ = f.rc.Flush() }

// Template helpers.

// str renders a JSON value as text ("" for null).
func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// field reads a row's key.
func field(row any, key string) any {
	m, _ := row.(map[string]any)
	return m[key]
}

// withQuery returns the page's path with one query parameter set (and
// the offset reset, as a new sort or filter starts at the first page).
func withQuery(path string, q url.Values, key, value string) string {
	n := url.Values{}
	for k, v := range q {
		n[k] = append([]string(nil), v...)
	}
	n.Del("offset")
	n.Del("msg")
	n.Del("err")
	if value == "" {
		n.Del(key)
	} else {
		n.Set(key, value)
	}
	if len(n) == 0 {
		return path
	}
	return path + "?" + n.Encode()
}

// ago renders an RFC 3339 time as a short age, with the time as title.
func ago(v any) string {
	s := str(v)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	d := time.Since(t)
	switch {
	case d < 0:
		return "in " + (-d).Round(time.Second).String()
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.UTC().Format("2006-01-02 15:04")
}

func rxText(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "—"
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + " dBm"
}

// rxClass grades a GPON receive power: -8..-27 dBm is the usual window.
func rxClass(v any) string {
	f, ok := v.(float64)
	switch {
	case !ok:
		return "muted"
	case f < -27 || f > -8:
		return "bad"
	case f < -25:
		return "warn"
	}
	return "good"
}

// badgeClass colours a status, level, role or kind.
func badgeClass(v any) string {
	switch strings.ToUpper(str(v)) {
	case "ONLINE", "SUCCESS", "COMPLETED", "INFO", "TRUE", "VIEWER", "DISCOVERY", "AVAILABLE":
		return "b-good"
	case "OFFLINE", "FAILED", "ERROR", "CRITICAL", "INTERRUPTED", "ADMIN", "HIGH", "UNAVAILABLE":
		return "b-bad"
	case "RUNNING", "PENDING", "WARNING", "WARN", "PARTIAL", "OPERATOR", "MEDIUM", "SKIPPED", "ABORTED", "UNREACHABLE":
		return "b-warn"
	}
	return "b-neutral"
}

func prettyJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSpace(b.String())
}
