package api

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/streams"
)

// routeDoc documents one registered route: the OpenAPI document is built
// from these (GET /api/v1/openapi.json) and the role is what authorize
// enforces. A new route is one line in api.go plus one entry here; the
// OpenAPI test fails for a registered route without one.
type routeDoc struct {
	Summary string
	Tag     string
	// Role needed; "" = viewer for GET, operator for POST .../run(/),
	// .../enable and .../disable, admin for anything else.
	Role auth.Role
	// Query parameters.
	Query []param
	// Body is a zero value of the request body type (nil: no body); its
	// schema is reflected from the type (openapi_schema.go).
	Body any
	// OptionalBody: the body may be absent.
	OptionalBody bool
	// Status of success (default 200).
	Status int
	// Resp is a zero value of the type the handler encodes on success
	// (its schema is reflected from it), list(key, row) for a page of a
	// list, or either{a, b} for one of two shapes. Every JSON route needs
	// one: the OpenAPI test fails without.
	Resp any
	// Content is the success's media type when it is not JSON (Resp is
	// then unused): text/plain, text/event-stream.
	Content string
	// Errors are the error statuses beyond those derived from the route
	// (401, 403, 429 when authenticated; 400 with a body or query; 413
	// with a body; 404 with a path parameter; 409 for a create; 503 for
	// every authenticated route).
	Errors []int
	// Other answers other statuses with a body of their own type
	// (/healthz's 503).
	Other map[int]any
	// Public routes need no authentication (health, metrics, login).
	Public bool
	// HTML marks a console page: in the route list, not in the OpenAPI
	// document.
	HTML bool
}

type param struct {
	Name, Type, Desc string
}

// page is the query of a list: search, sort, pagination, then extra.
func page(extra ...param) []param {
	return append([]param{
		{"q", "string", "search text (case-insensitive substring of names, ids, serials)"},
		{"sort", "string", "column to sort by; a leading - sorts descending"},
		{"limit", "integer", "page size"},
		{"offset", "integer", "rows to skip (server-side pagination)"},
	}, extra...)
}

// routeDocs is the documentation of every API route, keyed by its pattern
// (console pages are documented by package console).
func routeDocs() map[string]routeDoc {
	brand := param{"brand_id", "string", "only of this brand"}
	olt := param{"olt_id", "string", "only of this OLT (coordinator logs: GLOBAL for entries without one)"}
	job := param{"job_id", "string", "only of this job"}
	enabled := param{"enabled", "boolean", "only enabled (true) or disabled (false)"}
	status := param{"status", "string", "only in this status (e.g. ONLINE, SUCCESS)"}
	docs := map[string]routeDoc{
		"GET /api/v1/me":           {Summary: "Who am I: the authenticated user and role", Tag: "users", Resp: whoAmI{}},
		"GET /api/v1/openapi.json": {Summary: "This OpenAPI 3.0 document", Tag: "docs", Resp: map[string]any{}},
		"GET /api/docs":            {Summary: "The OpenAPI document rendered as HTML", Tag: "docs", HTML: true},
		"/api/":                    {Summary: "Anything else under /api/: 404 (after authentication)", Tag: "docs"},
		"GET /healthz":             {Summary: "Health of the API's dependencies", Tag: "ops", Resp: health{}, Other: map[int]any{http.StatusServiceUnavailable: health{}}, Public: true},
		"GET /metrics":             {Summary: "Prometheus metrics (a viewer's bearer token; the metrics listener serves them without)", Tag: "ops", Content: "text/plain"},

		"GET /api/v1/vendor-profiles":      {Summary: "List the vendor profiles (built-in and FACHO_PROFILES_DIR; q filters by id, name, vendor)", Tag: "vendor-profiles", Resp: vendorProfileList{}},
		"GET /api/v1/vendor-profiles/{id}": {Summary: "Get a vendor profile: match rules, index scheme, columns with decoders, SNMP tuning, default jobs", Tag: "vendor-profiles", Resp: profiles.Profile{}},

		"GET /api/v1/brands":         {Summary: "List brands", Tag: "brands", Resp: list("brands", brandRow{}), Query: page()},
		"POST /api/v1/brands":        {Summary: "Create a brand (409 when the id exists)", Tag: "brands", Resp: streams.BrandUpserted{}, Body: brandRequest{}, Status: 201},
		"GET /api/v1/brands/{id}":    {Summary: "Get a brand", Tag: "brands", Resp: streams.BrandUpserted{}},
		"PUT /api/v1/brands/{id}":    {Summary: "Replace a brand", Tag: "brands", Resp: streams.BrandUpserted{}, Body: brandRequest{}, Status: 202},
		"PATCH /api/v1/brands/{id}":  {Summary: "Change some fields of a brand", Tag: "brands", Resp: streams.BrandUpserted{}, Body: brandRequest{}, Status: 202},
		"DELETE /api/v1/brands/{id}": {Summary: "Delete a brand (409 while OIDs, OLTs or jobs use it)", Tag: "brands", Resp: deleted{}, Errors: []int{http.StatusConflict}, Status: 202},

		"GET /api/v1/oids":         {Summary: "List OIDs", Tag: "oids", Resp: list("oids", oidRow{}), Query: page(brand)},
		"POST /api/v1/oids":        {Summary: "Create an OID (409 when the id exists)", Tag: "oids", Resp: streams.OIDUpserted{}, Body: oidRequest{}, Status: 201},
		"GET /api/v1/oids/{id}":    {Summary: "Get an OID", Tag: "oids", Resp: streams.OIDUpserted{}},
		"PUT /api/v1/oids/{id}":    {Summary: "Replace an OID", Tag: "oids", Resp: streams.OIDUpserted{}, Body: oidRequest{}, Status: 202},
		"PATCH /api/v1/oids/{id}":  {Summary: "Change some fields of an OID", Tag: "oids", Resp: streams.OIDUpserted{}, Body: oidRequest{}, Status: 202},
		"DELETE /api/v1/oids/{id}": {Summary: "Delete an OID (409 while a job uses it)", Tag: "oids", Resp: deleted{}, Errors: []int{http.StatusConflict}, Status: 202},

		"GET /api/v1/olts":               {Summary: "List OLTs, each with its availability (available, unreachable, unavailable; null when never probed), availability_since and availability_error", Tag: "olts", Resp: list("olts", oltRow{}), Query: page(brand, enabled)},
		"POST /api/v1/olts":              {Summary: "Create an OLT (409 when the id exists); the community is sealed at once. With profile (a vendor profile id) or brand_id \"auto\" (identified by one SNMP GET of sysObjectID and sysDescr; 422 naming what was read when no profile matches) the profile's brand, OIDs and default jobs are created when absent and the jobs assigned", Tag: "olts", Resp: either{oltView{}, oltWithProfile{}}, Errors: []int{http.StatusUnprocessableEntity, http.StatusServiceUnavailable}, Body: oltRequest{}, Status: 201},
		"GET /api/v1/olts/{id}":          {Summary: "Get an OLT (never its community) with its availability (available, unreachable, unavailable; null when never probed), availability_since and availability_error", Tag: "olts", Resp: oltDetail{}},
		"PUT /api/v1/olts/{id}":          {Summary: "Replace an OLT (the community is kept when absent)", Tag: "olts", Resp: oltView{}, Body: oltRequest{}, Status: 202},
		"PATCH /api/v1/olts/{id}":        {Summary: "Change some fields of an OLT", Tag: "olts", Resp: oltView{}, Body: oltRequest{}, Status: 202},
		"DELETE /api/v1/olts/{id}":       {Summary: "Delete an OLT: it loses all pending work", Tag: "olts", Resp: deleted{}, Status: 202},
		"POST /api/v1/olts/{id}/enable":  {Summary: "Enable an OLT", Tag: "olts", Resp: oltView{}, Role: auth.Operator, Status: 202},
		"POST /api/v1/olts/{id}/disable": {Summary: "Disable an OLT", Tag: "olts", Resp: oltView{}, Role: auth.Operator, Status: 202},
		"GET /api/v1/olts/{id}/onus":     {Summary: "List the ONUs of an OLT (404 for an unknown OLT)", Tag: "olts", Resp: list("onus", onuRow{}, onusOfOLT{}), Query: page(status)},
		"GET /api/v1/olts/{id}/onus/{pon_index}/{onu_id}": {Summary: "Get one ONU: its current state (onu_data), or with at its state at that time rebuilt from onu_history (for each field the latest change at or before at; changed_at gives each field's time). 404 for an unknown OLT or ONU, and for an at before the ONU's first reading", Tag: "onus", Resp: either{onuOfOLT{}, onuStateAt{}},
			Query: []param{{"at", "string", "RFC 3339 time: the ONU's state at that time (point in time); absent: the current state"}}},
		"GET /api/v1/olts/{id}/onus/{pon_index}/{onu_id}/history": {Summary: "An ONU's history: one row per change of a field (field, old_value, new_value as text: numbers in Go's 'g' format, times RFC 3339 UTC, null = no value; at, execution_id, stream_seq), oldest first. The ONU's first reading is its first rows (old_value null). 404 for an unknown OLT or ONU; 400 naming an unknown field", Tag: "onus", Resp: list("history", historyRow{}, historyOf{}),
			Query: []param{{"from", "string", "RFC 3339 time: changes at or after (default: to minus 24 hours)"}, {"to", "string", "RFC 3339 time: changes at or before (default: now)"},
				{"fields", "string", "comma list of fields: " + historyFieldsDoc()}, {"sort", "string", "at (default, oldest first) or -at (newest first)"},
				{"limit", "integer", "page size (default 1000, at most 10000)"}, {"offset", "integer", "rows to skip"}}},
		"GET /api/v1/olts/{id}/onus/{pon_index}/{onu_id}/chart": {Summary: "An ONU's chart of a numeric field: with a range under " + chartRollupRangeText + " one point per change (at, min = max = last = the new value), from " + chartRollupRangeText + " on one point per hour with a change from the hourly rollups (at: the hour; min and max: the range of the values held during it; last: the value at its end); null = no reading; an hour or change without a point held the previous point's last value. initial: the value held at from. source: changes or hourly. 404 for an unknown OLT or ONU; 400 for a field that is not numeric", Tag: "onus", Resp: onuChart{},
			Query: []param{{"field", "string", "a numeric field (default rx_power_dbm)"}, {"from", "string", "RFC 3339 time (default: to minus 24 hours)"}, {"to", "string", "RFC 3339 time (default: now); at most 400 days after from"}}},
		"GET /api/v1/olts/{id}/pons/{pon_index}/chart": {Summary: "A PON's chart of a numeric field: one point per hour with a change (at: the hour; min and max: the range of the values its ONUs held during it; onus: how many ONUs changed), from every change under " + chartRollupRangeText + ", from the PON's hourly rollups from " + chartRollupRangeText + " on. source: changes or hourly. 404 for an unknown OLT; 400 for a field that is not numeric", Tag: "onus", Resp: ponChart{},
			Query: []param{{"field", "string", "a numeric field (default rx_power_dbm)"}, {"from", "string", "RFC 3339 time (default: to minus 24 hours)"}, {"to", "string", "RFC 3339 time (default: now); at most 400 days after from"}}},
		"GET /api/v1/onus": {Summary: "Search ONUs by serial across OLTs (from onu_data): serial=HWTC12345678 is an exact match, a trailing * a prefix (serial=HWTC*); each ONU with olt_id and olt_name", Tag: "onus", Resp: list("onus", onuSearchRow{}, serialQuery{}),
			Query: []param{{"serial", "string", "required: an exact serial, or a prefix ending in * (case-sensitive)"}, status, olt,
				{"sort", "string", "serial (default), olt_id, status, last_seen, rx_power_dbm; a leading - sorts descending"}, {"limit", "integer", "page size (default 100, at most 1000)"}, {"offset", "integer", "rows to skip"}}},

		"GET /api/v1/jobs":                             {Summary: "List SNMP jobs", Tag: "jobs", Resp: list("jobs", jobRow{}), Query: page(brand, enabled)},
		"POST /api/v1/jobs":                            {Summary: "Create a job (409 when the id exists)", Tag: "jobs", Resp: streams.JobUpserted{}, Body: jobRequest{}, Status: 201},
		"GET /api/v1/jobs/{id}":                        {Summary: "Get a job", Tag: "jobs", Resp: streams.JobUpserted{}},
		"PUT /api/v1/jobs/{id}":                        {Summary: "Replace a job", Tag: "jobs", Resp: streams.JobUpserted{}, Body: jobRequest{}, Status: 202},
		"PATCH /api/v1/jobs/{id}":                      {Summary: "Change some fields of a job", Tag: "jobs", Resp: streams.JobUpserted{}, Body: jobRequest{}, Status: 202},
		"DELETE /api/v1/jobs/{id}":                     {Summary: "Delete a job", Tag: "jobs", Resp: deleted{}, Status: 202},
		"POST /api/v1/jobs/{id}/enable":                {Summary: "Enable a job", Tag: "jobs", Resp: streams.JobUpserted{}, Role: auth.Operator, Status: 202},
		"POST /api/v1/jobs/{id}/disable":               {Summary: "Disable a job", Tag: "jobs", Resp: streams.JobUpserted{}, Role: auth.Operator, Status: 202},
		"GET /api/v1/jobs/{id}/olts":                   {Summary: "List the OLTs a job is assigned to (404 for an unknown job)", Tag: "assignments", Resp: list("assignments", assignmentRow{}), Query: page(enabled)},
		"POST /api/v1/jobs/{id}/olts":                  {Summary: "Assign a job to an OLT (409 when assigned)", Tag: "assignments", Resp: streams.JobOLTAssigned{}, Body: assignRequest{}, Status: 201},
		"GET /api/v1/jobs/{id}/olts/{olt_id}":          {Summary: "Get an assignment", Tag: "assignments", Resp: streams.JobOLTAssigned{}},
		"PUT /api/v1/jobs/{id}/olts/{olt_id}":          {Summary: "Replace an assignment", Tag: "assignments", Resp: streams.JobOLTAssigned{}, Body: assignRequest{}, Status: 202},
		"PATCH /api/v1/jobs/{id}/olts/{olt_id}":        {Summary: "Change an assignment", Tag: "assignments", Resp: streams.JobOLTAssigned{}, Body: assignRequest{}, Status: 202},
		"DELETE /api/v1/jobs/{id}/olts/{olt_id}":       {Summary: "Unassign a job from an OLT", Tag: "assignments", Resp: assignmentDeleted{}, Status: 202},
		"POST /api/v1/jobs/{id}/olts/{olt_id}/enable":  {Summary: "Enable an assignment", Tag: "assignments", Resp: streams.JobOLTAssigned{}, Role: auth.Operator, Status: 202},
		"POST /api/v1/jobs/{id}/olts/{olt_id}/disable": {Summary: "Disable an assignment", Tag: "assignments", Resp: streams.JobOLTAssigned{}, Role: auth.Operator, Status: 202},
		"GET /api/v1/assignments":                      {Summary: "List every assignment of a job to an OLT", Tag: "assignments", Resp: list("assignments", assignmentRow{}), Query: page(job, olt, enabled)},
		"GET /api/v1/executions":                       {Summary: "List executions, newest first; each with cause (why it failed, machine readable: timeout, snmp_error, oid_not_increasing, empty_read, no_onus_known, profile_mismatch, lease_lost, shutdown, config, publish, bound_exceeded; null otherwise) beside error (the operator's text)", Tag: "executions", Resp: list("executions", executionRow{}), Query: page(olt, job, status, param{"cause", "string", "only failed with this cause (e.g. profile_mismatch)"})},
		"GET /api/v1/executions/{id}":                  {Summary: "Get an execution with its attempts; cause and error say why it failed; of a GET run, onu_failures (the ONUs not read whole: instance, pon_index, onu_id, oids, error; counts onus, failed_onus, failed_varbinds on the execution)", Tag: "executions", Resp: executionDetail{}},
		"GET /api/v1/coordinator-logs":                 {Summary: "List coordinator logs, newest first", Tag: "logs", Resp: list("logs", logRow{}), Query: page(olt, param{"level", "string", "DEBUG, INFO, WARNING, ERROR, CRITICAL"}, param{"event_type", "string", "e.g. TASK_ADDED"}, param{"since", "string", "RFC 3339 time: not before"}, param{"until", "string", "RFC 3339 time: not after"})},
		"GET /api/v1/events/stream": {Summary: "Live ONU changes, executions and notifications as server-sent events (text/event-stream; the filters of facho tail)", Tag: "events", Content: "text/event-stream",
			Query: []param{{"olt", "string", "only this OLT id"}, {"kind", "string", "onu, exec, notify, an ONU change (discovered, status, updated), a phase (started, succeeded, failed, skipped, interrupted) or a notification kind"}, {"last_event_id", "string", "resume after this event id (as the Last-Event-ID header): the events missed since, up to the last 10000 messages of each stream, then the live ones"}}},
		"GET /api/v1/quotas": {Summary: "List hourly quota trackers (quota_tracker: per OLT, task type = job id, hour), newest hour first; quota_required follows the scheduling rule (next run an interval after the previous one ends); a running hour's risk: runs_possible (pending and still due before its end), can_meet (completed + possible reach the quota), at_risk (open and no longer can), best_compliance_percent, next_due_at, cycle_ms", Tag: "quotas", Resp: list("quotas", quotaRow{}),
			Query: page(olt, param{"task_type", "string", "only of this task type (job id)"}, param{"status", "string", "IN_PROGRESS, COMPLETED, PARTIAL, QUOTA_NOT_MET, INTERRUPTED"}, param{"since", "string", "RFC 3339 time: hours starting not before"}, param{"until", "string", "RFC 3339 time: hours starting not after"})},
		"GET /api/v1/violations": {Summary: "List quota violations (quota_violations), newest first", Tag: "quotas", Resp: list("violations", violationRow{}),
			Query: page(olt, param{"task_type", "string", "only of this task type (job id)"}, param{"severity", "string", "LOW, MEDIUM, HIGH, CRITICAL"}, param{"notified", "boolean", "only notified (true) or not yet (false)"}, param{"since", "string", "RFC 3339 time: hours starting not before"}, param{"until", "string", "RFC 3339 time: hours starting not after"})},
		"GET /api/v1/violations/{id}":                  {Summary: "Get a quota violation with its JSON report", Tag: "quotas", Resp: violationRow{}},
		"GET /api/v1/webhooks":                         {Summary: "List webhooks (never their secret)", Tag: "webhooks", Resp: list("webhooks", webhookView{}), Query: page(enabled)},
		"POST /api/v1/webhooks":                        {Summary: "Create a webhook: url, events (quota_violation, olt_disabled, repeated_failures, olt_enabled, alert.firing, alert.resolved), secret (sealed at once; generated and shown once when absent)", Tag: "webhooks", Resp: webhookCreated{}, Body: webhookRequest{}, Status: 201},
		"GET /api/v1/webhooks/{id}":                    {Summary: "Get a webhook (never its secret)", Tag: "webhooks", Resp: webhookView{}},
		"PUT /api/v1/webhooks/{id}":                    {Summary: "Change a webhook (the secret is kept when absent)", Tag: "webhooks", Resp: webhookView{}, Body: webhookRequest{}},
		"PATCH /api/v1/webhooks/{id}":                  {Summary: "Change some fields of a webhook", Tag: "webhooks", Resp: webhookView{}, Body: webhookRequest{}},
		"DELETE /api/v1/webhooks/{id}":                 {Summary: "Delete a webhook and its delivery records", Tag: "webhooks", Resp: deleted{}},
		"GET /api/v1/webhooks/{id}/deliveries":         {Summary: "List a webhook's deliveries, newest first: status (pending, delivered, failed), attempts, last error", Tag: "webhooks", Resp: list("deliveries", deliveryRow{}), Query: page(param{"status", "string", "pending, delivered or failed"})},
		"GET /api/v1/workflows":                        {Summary: "List workflows (a master job and its chain on an OLT)", Tag: "workflows", Resp: list("workflows", workflowRow{}), Query: page(olt, enabled)},
		"GET /api/v1/workflows/{id}":                   {Summary: "Get a workflow", Tag: "workflows", Resp: streams.WorkflowUpserted{}},
		"POST /api/v1/workflows/{id}/enable":           {Summary: "Enable a workflow", Tag: "workflows", Resp: streams.WorkflowUpserted{}, Role: auth.Operator, Status: 202},
		"POST /api/v1/workflows/{id}/disable":          {Summary: "Disable a workflow: its jobs run as plain nodes", Tag: "workflows", Resp: streams.WorkflowUpserted{}, Role: auth.Operator, Status: 202},
		"POST /api/v1/workflows":                       {Summary: "Create a workflow: on olt_id, master_job_id and chain_job_ids run as one composite node under one lease", Tag: "workflows", Resp: streams.WorkflowUpserted{}, Body: workflowRequest{}, Status: 201},
		"PUT /api/v1/workflows/{id}":                   {Summary: "Replace a workflow (enabled false disables it)", Tag: "workflows", Resp: streams.WorkflowUpserted{}, Body: workflowRequest{}, Status: 202},
		"DELETE /api/v1/workflows/{id}":                {Summary: "Delete a workflow: its jobs are plain nodes again", Tag: "workflows", Resp: deleted{}, Status: 202},
		"GET /api/v1/olts/{id}/nodes":                  {Summary: "The OLT's nodes (job on OLT) from the persisted schedule: node_id, job_id, kind, chain, enabled, state, next_run_at, last_run_at, last_status", Tag: "schedule", Resp: nodeList{}},
		"GET /api/v1/nodes/{node_id}":                  {Summary: "One node's persisted schedule (node id <job_id>.<olt_id>)", Tag: "schedule", Resp: streams.NodeSchedule{}},
		"GET /api/v1/pollers/queue/{$}":                {Summary: "The planner's queue: size (every due node not started: waiting in the planner + dispatched and not taken by a poller slot), waiting, dispatched_waiting, is_overload (any class overloaded), next_nodes (next 10), delayed buckets (5s..10m) per class and per OLT, classes (per queue class: size, waiting, dispatched, dispatched_waiting, running, capacity, free, late, is_saturated, is_overload); 503 without an active planner", Tag: "pollers", Resp: queueAnswer{}},
		"POST /api/v1/pollers/nodes/{node_id}/run/{$}": {Summary: "Run a node now, ahead of its OLT's queue, without moving its schedule: 202 with the execution id, 404 unknown node, 409 OLT or node disabled", Tag: "pollers", Resp: runAccepted{}, Errors: []int{http.StatusConflict, http.StatusInternalServerError}, Role: auth.Operator, Status: 202},
		"GET /api/v1/pollers/{$}":                      {Summary: "List the pollers: every execution slot of every live poller process, with status FREE/BUSY, current_node_id, busy_time, total_time, busy_percentage, tasks_completed, tasks_delayed", Tag: "pollers", Resp: pollerList{}},
		"GET /api/v1/pollers/stats/{$}":                {Summary: "Global poller stats: total_pollers, free_pollers, busy_pollers, busy_percentage, queue_size (the planner's whole backlog), is_saturated (busy_percentage > 75, or any class saturated), total_tasks_completed, total_tasks_delayed; classes: per queue class total_pollers, free_pollers, busy_pollers, busy_percentage, queue_size, is_saturated (busy > 75 %, or every slot busy with a backlog of the class)", Tag: "pollers", Resp: pollerStats{}},
		"GET /api/v1/users":                            {Summary: "List users", Tag: "users", Resp: userList{}, Role: auth.Admin},
		"POST /api/v1/users":                           {Summary: "Create a user (409 when the username exists)", Tag: "users", Resp: auth.User{}, Body: userRequest{}, Status: 201},
		"GET /api/v1/users/{id}":                       {Summary: "Get a user", Tag: "users", Resp: auth.User{}, Role: auth.Admin},
		"PATCH /api/v1/users/{id}":                     {Summary: "Change a user's role, password or disabled flag", Tag: "users", Resp: auth.User{}, Errors: []int{http.StatusConflict}, Body: userRequest{}},
		"DELETE /api/v1/users/{id}":                    {Summary: "Delete a user with their sessions and tokens", Tag: "users", Status: 202, Resp: userDeleted{}, Errors: []int{http.StatusConflict}},
		"GET /api/v1/tokens":                           {Summary: "List my API tokens (an admin's: everyone's)", Tag: "tokens", Resp: tokenList{}},
		"POST /api/v1/tokens":                          {Summary: "Create an API token for me; its secret is shown once", Tag: "tokens", Resp: tokenCreated{}, Role: auth.Viewer, Body: tokenRequest{}, Status: 201},
		"DELETE /api/v1/tokens/{id}":                   {Summary: "Revoke an API token (mine; an admin: anyone's)", Tag: "tokens", Resp: revoked{}, Role: auth.Viewer, Status: 202},
	}
	// Alerts, incidents, silences, PONs (alerts.go).
	for k, v := range alertRouteDocs() {
		docs[k] = v
	}
	// OLT health (health.go).
	for k, v := range healthRouteDocs() {
		docs[k] = v
	}
	// The OLT's traps (traps.go).
	for k, v := range trapRouteDocs() {
		docs[k] = v
	}
	return docs
}

// routeRole is the role a route needs.
func routeRole(pattern string) auth.Role {
	if d, ok := routeDocs()[pattern]; ok && d.Role != "" {
		return d.Role
	}
	method, path, _ := strings.Cut(pattern, " ")
	if method == http.MethodGet || method == http.MethodHead || !strings.Contains(pattern, " ") {
		return auth.Viewer
	}
	// Operators' actions by convention: run now, enable, disable.
	for _, action := range []string{"/run", "/run/", "/enable", "/disable"} {
		if method == http.MethodPost && strings.HasSuffix(path, action) {
			return auth.Operator
		}
	}
	return auth.Admin
}

var pathParamRE = regexp.MustCompile(`\{([a-z_]+)(\.\.\.)?\}`)

// openAPIDocument builds the OpenAPI 3.0 document of the registered API
// routes: parameters, request and response schemas reflected from the Go
// types (openapi_schema.go), every status a route answers.
func (s *server) openAPIDocument() map[string]any {
	docs := routeDocs()
	paths := map[string]map[string]any{}
	// gen describes the responses' named types once, in components.
	gen := &schemaGen{}
	errSchema := gen.response(errorBody{})
	for _, pattern := range s.mux.patterns {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok {
			continue // a catch-all without method (documented in routeDocs, not an operation)
		}
		d, ok := docs[pattern]
		if !ok || d.HTML {
			continue
		}
		path = strings.TrimSuffix(path, "{$}")
		oaPath := pathParamRE.ReplaceAllString(path, "{$1}")
		op := map[string]any{
			"summary":     d.Summary,
			"operationId": operationID(method, oaPath),
			"tags":        []string{d.Tag},
		}
		var params []map[string]any
		for _, m := range pathParamRE.FindAllStringSubmatch(path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range d.Query {
			params = append(params, map[string]any{"name": q.Name, "in": "query", "description": q.Desc, "schema": map[string]any{"type": q.Type}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if d.Body != nil {
			req := &schemaGen{request: true}
			op["requestBody"] = map[string]any{"required": !d.OptionalBody, "content": map[string]any{"application/json": map[string]any{"schema": req.response(d.Body)}}}
		}
		op["responses"] = d.responses(method, path, gen)
		if !d.Public {
			op["x-role"] = string(routeRole(pattern))
		} else {
			op["security"] = []any{}
		}
		if paths[oaPath] == nil {
			paths[oaPath] = map[string]any{}
		}
		paths[oaPath][strings.ToLower(method)] = op
	}
	errResp := func(what string) map[string]any {
		return map[string]any{"description": what, "content": map[string]any{"application/json": map[string]any{"schema": errSchema}}}
	}
	responses := map[string]any{}
	for code, what := range errorStatuses() {
		responses[errorRef(code)] = errResp(what)
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":       "Facho API",
			"version":     "1",
			"description": "Configuration (published as events on FACHO_CONFIG, answered at once: never blocked on SNMP work) and queries over the read models. Authenticate with `Authorization: Bearer <token>`: a user's API token (scope = the user's role) or one of FACHO_API_TOKENS (admin). Roles: viewer reads; operator also runs, enables and disables; admin also changes configuration and users. x-role names the role an operation needs. Every error answers {\"error\": \"...\"}, a 400 also names the input at fault in field.",
		},
		"paths": paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{
				"bearer":  map[string]any{"type": "http", "scheme": "bearer"},
				"session": map[string]any{"type": "apiKey", "in": "cookie", "name": SessionCookie, "description": "console session; unsafe methods also need the X-CSRF-Token header"},
			},
			"schemas":   gen.components,
			"responses": responses,
		},
		"security": []any{map[string]any{"bearer": []any{}}, map[string]any{"session": []any{}}},
	}
}

// errorStatuses are the error answers of the document, each a response
// component named by errorRef.
func errorStatuses() map[int]string {
	return map[int]string{
		http.StatusBadRequest:            "invalid input; field names the input at fault",
		http.StatusUnauthorized:          "no valid token or session",
		http.StatusForbidden:             "the role does not allow it, or CSRF token missing",
		http.StatusNotFound:              "no such resource (or parent)",
		http.StatusConflict:              "the id already exists, the resource is in use, or its state forbids it",
		http.StatusRequestEntityTooLarge: "body larger than the limit",
		http.StatusUnprocessableEntity:   "understood but not possible: e.g. no vendor profile matches what the OLT answered",
		http.StatusTooManyRequests:       "too many failed authentications from this address: retry later",
		http.StatusInternalServerError:   "the server could not do it (sealing a secret, encoding an event)",
		http.StatusServiceUnavailable:    "a dependency (read model, configuration stream, schedule, planner) is unavailable: retry later",
	}
}

func errorRef(code int) string {
	return strings.ReplaceAll(http.StatusText(code), " ", "")
}

// responses are the operation's answers: the success with its schema, and
// every error status the route can answer.
func (d routeDoc) responses(method, path string, gen *schemaGen) map[string]any {
	status := d.Status
	if status == 0 {
		status = http.StatusOK
	}
	success := map[string]any{"description": http.StatusText(status)}
	switch {
	case d.Content != "":
		success["content"] = map[string]any{d.Content: map[string]any{"schema": map[string]any{"type": "string"}}}
	case d.Resp != nil:
		success["content"] = map[string]any{"application/json": map[string]any{"schema": gen.response(d.Resp)}}
	}
	resp := map[string]any{itoa(status): success}
	codes := append([]int(nil), d.Errors...)
	if !d.Public {
		// 503 also from authentication (the user database down).
		codes = append(codes, http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable)
	}
	if d.Body != nil {
		codes = append(codes, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusInternalServerError)
	}
	if len(d.Query) > 0 {
		codes = append(codes, http.StatusBadRequest)
	}
	if strings.Contains(path, "{") {
		codes = append(codes, http.StatusNotFound)
	}
	if method == http.MethodPost && status == http.StatusCreated {
		codes = append(codes, http.StatusConflict)
	}
	for _, code := range codes {
		resp[itoa(code)] = map[string]any{"$ref": "#/components/responses/" + errorRef(code)}
	}
	for code, v := range d.Other {
		resp[itoa(code)] = map[string]any{"description": http.StatusText(code),
			"content": map[string]any{"application/json": map[string]any{"schema": gen.response(v)}}}
	}
	return resp
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, part := range strings.Split(path, "/") {
		part = strings.Trim(part, "{}")
		if part == "" || part == "api" || part == "v1" {
			continue
		}
		for _, w := range strings.FieldsFunc(part, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

func (s *server) openAPI(w http.ResponseWriter, _ *http.Request) *apiError {
	writeJSON(w, http.StatusOK, s.openAPIDocument())
	return nil
}

// apiDocs renders the OpenAPI document as one HTML page (no script, no
// CDN).
func (s *server) apiDocs(w http.ResponseWriter, _ *http.Request) {
	doc := s.openAPIDocument()
	paths := doc["paths"].(map[string]map[string]any)
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type op struct {
		Method, Path, Summary, Role, Tag string
		Params                           []map[string]any
		Body                             string
		Responses                        []string
		// Answer is the success's schema: a component's name (Ref) or
		// the schema itself; Media its media type.
		Ref, Answer, Media string
	}
	pretty := func(v any) string {
		b, _ := json.MarshalIndent(v, "", "  ")
		return string(b)
	}
	var ops []op
	for _, p := range keys {
		for _, m := range []string{"get", "post", "put", "patch", "delete"} {
			o, ok := paths[p][m].(map[string]any)
			if !ok {
				continue
			}
			x := op{Method: strings.ToUpper(m), Path: p, Summary: o["summary"].(string), Tag: o["tags"].([]string)[0]}
			x.Role, _ = o["x-role"].(string)
			x.Params, _ = o["parameters"].([]map[string]any)
			if rb, ok := o["requestBody"].(map[string]any); ok {
				b, _ := json.MarshalIndent(rb["content"].(map[string]any)["application/json"].(map[string]any)["schema"], "", "  ")
				x.Body = string(b)
			}
			for code, r := range o["responses"].(map[string]any) {
				x.Responses = append(x.Responses, code)
				content, _ := r.(map[string]any)["content"].(map[string]any)
				if code[0] != '2' || content == nil {
					continue
				}
				for media, mt := range content {
					x.Media = media
					sch := mt.(map[string]any)["schema"]
					if ref, ok := sch.(map[string]any)["$ref"].(string); ok {
						x.Ref = strings.TrimPrefix(ref, "#/components/schemas/")
					} else if media == "application/json" {
						x.Answer = pretty(sch)
					}
				}
			}
			sort.Strings(x.Responses)
			ops = append(ops, x)
		}
	}
	type schema struct{ Name, JSON string }
	var schemas []schema
	comps := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name, sch := range comps {
		schemas = append(schemas, schema{name, pretty(sch)})
	}
	sort.Slice(schemas, func(i, j int) bool { return schemas[i].Name < schemas[j].Name })
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = s.docsTmpl.Execute(w, map[string]any{"Ops": ops, "Info": doc["info"], "Schemas": schemas})
}

// apiDocsHTML renders the operations of the OpenAPI document.
const apiDocsHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Facho API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f5f6f8}
header{background:#1d2330;color:#fff;padding:10px 20px}header a{color:#9cc3ff}
main{max-width:1100px;margin:0 auto;padding:16px 20px}
details{background:#fff;border:1px solid #dde1e7;border-radius:6px;margin:6px 0}
summary{padding:8px 12px;cursor:pointer;display:flex;gap:10px;align-items:center}
.m{font:600 12px monospace;padding:2px 6px;border-radius:4px;color:#fff;min-width:54px;text-align:center}
.GET{background:#2f7d32}.POST{background:#1565c0}.PUT{background:#8e5b00}.PATCH{background:#6a4c93}.DELETE{background:#b3261e}
code,pre{font:12px monospace}pre{background:#f0f2f5;padding:8px;overflow:auto;margin:0 12px 10px}
.role{margin-left:auto;font-size:12px;color:#5b6472}.body{padding:0 12px 10px}table{border-collapse:collapse;margin:0 12px 10px}
td,th{border-bottom:1px solid #eee;padding:3px 8px;text-align:left;font-size:13px}
</style></head><body>
<header><strong>Facho API</strong> · OpenAPI 3.0: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a> · <a href="/">console</a></header>
<main><p>{{index .Info "description"}}</p>
{{range .Ops}}<details id="{{.Method}}-{{.Path}}"><summary><span class="m {{.Method}}">{{.Method}}</span><code>{{.Path}}</code> {{.Summary}}<span class="role">{{.Tag}}{{if .Role}} · role {{.Role}}{{else}} · public{{end}}</span></summary>
{{if .Params}}<table><tr><th>parameter</th><th>in</th><th>type</th><th></th></tr>{{range .Params}}<tr><td><code>{{index . "name"}}</code></td><td>{{index . "in"}}</td><td>{{index (index . "schema") "type"}}</td><td>{{index . "description"}}</td></tr>{{end}}</table>{{end}}
{{if .Body}}<div class="body">Request body (JSON):</div><pre>{{.Body}}</pre>{{end}}
{{if .Ref}}<div class="body">Answer ({{.Media}}): <a href="#schema-{{.Ref}}"><code>{{.Ref}}</code></a></div>{{else if .Answer}}<div class="body">Answer ({{.Media}}):</div><pre>{{.Answer}}</pre>{{else if .Media}}<div class="body">Answer: <code>{{.Media}}</code></div>{{end}}
<div class="body">Responses: {{range .Responses}}<code>{{.}}</code> {{end}}(errors: <a href="#schema-ErrorBody"><code>ErrorBody</code></a>)</div></details>
{{end}}
<h2>Schemas</h2>
{{range .Schemas}}<details id="schema-{{.Name}}"><summary><code>{{.Name}}</code></summary><pre>{{.JSON}}</pre></details>
{{end}}</main></body></html>`
