package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/alerter"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
)

// contract checks real answers of a running stack against its OpenAPI
// document with kin-openapi's openapi3filter: the request against the
// operation's parameters and body, the answer's status, media type and
// body against the declared response (objects declare additionalProperties
// false, so a member the schema lacks fails too). It records every
// operation answered with a success.
type contract struct {
	t       *testing.T
	base    string
	token   string
	http    *http.Client
	csrf    string
	doc     *openapi3.T
	router  routers.Router
	covered map[string]bool
}

func newContract(t *testing.T, base, token string) *contract {
	t.Helper()
	c := &contract{t: t, base: base, token: token, http: &http.Client{Timeout: 30 * time.Second}, covered: map[string]bool{}}
	raw := c.raw(http.MethodGet, "/api/v1/openapi.json", "", http.StatusOK)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("load the API's document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the API's document is not valid OpenAPI: %v", err)
	}
	if c.router, err = gorillamux.NewRouter(doc); err != nil {
		t.Fatal(err)
	}
	c.doc = doc
	return c
}

// raw sends a request as the contract's principal without validation.
func (c *contract) raw(method, path, body string, want int) []byte {
	c.t.Helper()
	code, b, _ := c.send(method, path, body)
	if code != want {
		c.t.Fatalf("%s %s = %d %s, want %d", method, path, code, b, want)
	}
	return b
}

func (c *contract) send(method, path, body string) (int, []byte, *http.Response) {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.csrf != "" {
		req.Header.Set("X-CSRF-Token", c.csrf)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, b, resp
}

// call sends a request, validates it and its answer against the document,
// requires status want and decodes the answer into out (when not nil).
func (c *contract) call(method, path, body string, want int, out any) {
	c.t.Helper()
	code, b, resp := c.send(method, path, body)
	if code != want {
		c.t.Fatalf("%s %s = %d %s, want %d", method, path, code, b, want)
	}
	c.validate(method, path, body, resp, b)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

func (c *contract) validate(method, path, body string, resp *http.Response, b []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Errorf("%s %s: no operation of the document: %v", method, path, err)
		return
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		c.t.Errorf("%s %s: the request does not match the document: %v", method, path, err)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(b)), Options: opts}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		c.t.Errorf("%s %s = %d: the answer does not match the document: %v\nanswer: %.600s", method, path, resp.StatusCode, err, b)
	}
	if resp.StatusCode < 300 {
		c.covered[route.Method+" "+route.Path] = true
	}
}

// stream checks a server-sent events answer: its status and media type
// are the document's (its body does not end).
func (c *contract) stream(path string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	route, _, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	r := route.Operation.Responses.Status(resp.StatusCode)
	if r == nil || r.Value.Content.Get(strings.TrimSpace(strings.Split(resp.Header.Get("Content-Type"), ";")[0])) == nil {
		c.t.Errorf("GET %s = %d %s: not declared", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		return
	}
	c.covered[route.Method+" "+route.Path] = true
}

// uncovered are the document's operations no call answered with success.
func (c *contract) uncovered() []string {
	var out []string
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			if !c.covered[method+" "+path] {
				out = append(out, method+" "+path)
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestAPIAnswersMatchTheOpenAPIDocument runs the whole stack with a
// simulated OLT added by profile and polled, an outage that raises
// alerts, and calls every operation of the API's OpenAPI document (and a
// few errors), validating each request and answer against the document.
func TestAPIAnswersMatchTheOpenAPIDocument(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hold := time.Second
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir: t.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(t), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 1,
		Planner: planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Fleet: oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "olt-a", Listen: "127.0.0.1:0", Community: "e2e-secret-community",
			Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 16}, Seed: 1}}},
		Alerter: alerter.Config{Tick: 100 * time.Millisecond, Rules: alerter.Rules{Global: alerter.Override{ONUDownHold: &hold}}},
	}, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	c := newContract(t, s.APIURL, token)
	sim := s.Fleet.OLTs()[0]
	for _, o := range sim.ONUs() {
		if err := sim.PatchONU(o.Index, oltsim.ONUPatch{Online: ptr(true), RxPowerDBm: ptr(-20.0)}); err != nil {
			t.Fatal(err)
		}
	}

	// The OLT by profile, as the getting-started guide adds one.
	addr := sim.Addr()
	var created struct {
		Assigned []string `json:"assigned"`
	}
	c.call("POST", "/api/v1/olts", `{"id":"olt-a","name":"OLT A","ip":"`+addr.IP.String()+`","port":`+strconv.Itoa(addr.Port)+
		`,"community":"e2e-secret-community","profile":"huawei-ma5800"}`, http.StatusCreated, &created)
	for _, j := range created.Assigned {
		c.call("PATCH", "/api/v1/jobs/"+j, `{"interval_seconds":10}`, http.StatusAccepted, nil)
	}
	waitFor(t, "32 ONUs online", 60*time.Second, func() (bool, string) {
		var n int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM onu_data WHERE olt_id = 'olt-a' AND status = 'ONLINE'`).Scan(&n)
		return n == 32, strconv.Itoa(n)
	})
	cutPONAndTwoONUs(t, sim, sim.ONUs())
	waitFor(t, "an outage incident", 60*time.Second, func() (bool, string) {
		var n int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM incidents WHERE state = 'firing'`).Scan(&n)
		return n > 0, strconv.Itoa(n)
	})
	waitFor(t, "the planner's queue report", 30*time.Second, func() (bool, string) {
		code, b, _ := c.send("GET", "/api/v1/pollers/queue/", "")
		return code == http.StatusOK, string(b)
	})

	// Operations, health, the document.
	c.call("GET", "/healthz", "", http.StatusOK, nil)
	c.call("GET", "/metrics", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/me", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/openapi.json", "", http.StatusOK, nil)
	c.stream("/api/v1/events/stream?olt=olt-a")

	// Vendor profiles.
	c.call("GET", "/api/v1/vendor-profiles", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/vendor-profiles/huawei-ma5800", "", http.StatusOK, nil)

	// Brands, OIDs, a second OLT, jobs, assignments, workflows.
	c.call("GET", "/api/v1/brands", "", http.StatusOK, nil)
	c.call("POST", "/api/v1/brands", `{"id":"lab","name":"Lab","index_scheme":"pon.onu"}`, http.StatusCreated, nil)
	c.call("GET", "/api/v1/brands/lab", "", http.StatusOK, nil)
	c.call("PUT", "/api/v1/brands/lab", `{"name":"Lab","description":"the lab's OLTs","index_scheme":"pon.onu"}`, http.StatusAccepted, nil)
	c.call("PATCH", "/api/v1/brands/lab", `{"snmp":{"max_repetitions":20}}`, http.StatusAccepted, nil)
	c.call("POST", "/api/v1/oids", `{"id":"lab-serial","brand_id":"lab","name":"serial","oid":"1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3","field":"serial","decoder":{"kind":"hex_serial"}}`, http.StatusCreated, nil)
	c.call("GET", "/api/v1/oids", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/oids/lab-serial", "", http.StatusOK, nil)
	c.call("PUT", "/api/v1/oids/lab-serial", `{"brand_id":"lab","name":"serial number","oid":"1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3","field":"serial","decoder":{"kind":"hex_serial"}}`, http.StatusAccepted, nil)
	c.call("PATCH", "/api/v1/oids/lab-serial", `{"name":"serial"}`, http.StatusAccepted, nil)
	c.call("POST", "/api/v1/olts", `{"id":"lab-1","name":"Lab 1","ip":"127.0.0.1","port":1,"community":"lab-community","brand_id":"lab","enabled":false}`, http.StatusCreated, nil)
	c.call("GET", "/api/v1/olts", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/olts/olt-a", "", http.StatusOK, nil)
	c.call("PUT", "/api/v1/olts/lab-1", `{"name":"Lab 1","ip":"127.0.0.1","port":1,"brand_id":"lab","enabled":false}`, http.StatusAccepted, nil)
	c.call("PATCH", "/api/v1/olts/lab-1", `{"description":"bench"}`, http.StatusAccepted, nil)
	c.call("POST", "/api/v1/olts/lab-1/enable", "", http.StatusAccepted, nil)
	c.call("POST", "/api/v1/olts/lab-1/disable", "", http.StatusAccepted, nil)
	c.call("GET", "/api/v1/jobs", "", http.StatusOK, nil)
	for _, id := range []string{"lab-get", "lab-chain"} {
		c.call("POST", "/api/v1/jobs", `{"id":"`+id+`","name":"`+id+`","brand_id":"lab","kind":"get","oid_ids":["lab-serial"],"interval_seconds":3600,"enabled":false}`, http.StatusCreated, nil)
	}
	c.call("GET", "/api/v1/jobs/lab-get", "", http.StatusOK, nil)
	c.call("PUT", "/api/v1/jobs/lab-get", `{"name":"lab get","brand_id":"lab","kind":"get","oid_ids":["lab-serial"],"interval_seconds":3600,"enabled":false}`, http.StatusAccepted, nil)
	c.call("PATCH", "/api/v1/jobs/lab-get", `{"interval_seconds":7200}`, http.StatusAccepted, nil)
	c.call("POST", "/api/v1/jobs/lab-get/enable", "", http.StatusAccepted, nil)
	c.call("POST", "/api/v1/jobs/lab-get/disable", "", http.StatusAccepted, nil)
	c.call("POST", "/api/v1/jobs/lab-get/olts", `{"olt_id":"lab-1"}`, http.StatusCreated, nil)
	c.call("GET", "/api/v1/jobs/lab-get/olts", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/jobs/lab-get/olts/lab-1", "", http.StatusOK, nil)
	c.call("PUT", "/api/v1/jobs/lab-get/olts/lab-1", `{"olt_id":"lab-1","enabled":true}`, http.StatusAccepted, nil)
	c.call("PATCH", "/api/v1/jobs/lab-get/olts/lab-1", `{"enabled":false}`, http.StatusAccepted, nil)
	c.call("POST", "/api/v1/jobs/lab-get/olts/lab-1/enable", "", http.StatusAccepted, nil)
	c.call("POST", "/api/v1/jobs/lab-get/olts/lab-1/disable", "", http.StatusAccepted, nil)
	c.call("GET", "/api/v1/assignments?olt_id=olt-a", "", http.StatusOK, nil)
	c.call("POST", "/api/v1/workflows", `{"id":"lab-flow","name":"lab flow","olt_id":"lab-1","master_job_id":"lab-get","chain_job_ids":["lab-chain"]}`, http.StatusCreated, nil)
	c.call("GET", "/api/v1/workflows/lab-flow", "", http.StatusOK, nil)
	c.call("PUT", "/api/v1/workflows/lab-flow", `{"name":"lab flow","olt_id":"lab-1","master_job_id":"lab-get","chain_job_ids":["lab-chain"],"stop_on_failure":true}`, http.StatusAccepted, nil)
	c.call("POST", "/api/v1/workflows/lab-flow/disable", "", http.StatusAccepted, nil)
	c.call("POST", "/api/v1/workflows/lab-flow/enable", "", http.StatusAccepted, nil)
	waitFor(t, "the workflow in the read model", 30*time.Second, func() (bool, string) {
		var out struct{ Count int }
		c.call("GET", "/api/v1/workflows", "", http.StatusOK, &out)
		return out.Count == 1, strconv.Itoa(out.Count)
	})

	// ONUs, their history, PONs, the schedule, executions.
	var onus struct {
		ONUs []struct {
			PonIndex int64  `json:"pon_index"`
			ONUID    int64  `json:"onu_id"`
			Serial   string `json:"serial"`
		} `json:"onus"`
	}
	c.call("GET", "/api/v1/olts/olt-a/onus?limit=5", "", http.StatusOK, &onus)
	onu := onus.ONUs[0]
	onuPath := "/api/v1/olts/olt-a/onus/" + strconv.FormatInt(onu.PonIndex, 10) + "/" + strconv.FormatInt(onu.ONUID, 10)
	c.call("GET", onuPath, "", http.StatusOK, nil)
	c.call("GET", onuPath+"?at="+url.QueryEscape(time.Now().UTC().Format(time.RFC3339)), "", http.StatusOK, nil)
	c.call("GET", onuPath+"/history", "", http.StatusOK, nil)
	c.call("GET", onuPath+"/chart", "", http.StatusOK, nil)
	c.call("GET", onuPath+"/chart?field=rx_power_dbm&from="+url.QueryEscape(time.Now().Add(-30*24*time.Hour).UTC().Format(time.RFC3339)), "", http.StatusOK, nil)
	c.call("GET", "/api/v1/olts/olt-a/pons/"+strconv.FormatInt(onu.PonIndex, 10)+"/chart", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/onus?serial="+url.QueryEscape(onu.Serial[:4]+"*"), "", http.StatusOK, nil)
	waitFor(t, "the OLT's first health reading", 60*time.Second, func() (bool, string) {
		var n int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM olt_health WHERE olt_id = 'olt-a'`).Scan(&n)
		return n == 1, strconv.Itoa(n)
	})
	c.call("GET", "/api/v1/olts/olt-a/pons", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/olts/olt-a/health", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/olts/olt-a/traps", "", http.StatusOK, nil)
	var nodes struct {
		Nodes []struct {
			NodeID string `json:"node_id"`
		} `json:"nodes"`
	}
	c.call("GET", "/api/v1/olts/olt-a/nodes", "", http.StatusOK, &nodes)
	if len(nodes.Nodes) == 0 {
		t.Fatal("olt-a has no node")
	}
	c.call("GET", "/api/v1/nodes/"+nodes.Nodes[0].NodeID, "", http.StatusOK, nil)
	c.call("GET", "/api/v1/pollers/queue/", "", http.StatusOK, nil)
	c.call("POST", "/api/v1/pollers/nodes/"+nodes.Nodes[0].NodeID+"/run/", "", http.StatusAccepted, nil)
	c.call("GET", "/api/v1/pollers/", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/pollers/stats/", "", http.StatusOK, nil)
	var execs struct {
		Executions []struct {
			ID string `json:"id"`
		} `json:"executions"`
	}
	c.call("GET", "/api/v1/executions?olt_id=olt-a", "", http.StatusOK, &execs)
	c.call("GET", "/api/v1/executions/"+execs.Executions[0].ID, "", http.StatusOK, nil)
	c.call("GET", "/api/v1/coordinator-logs?olt_id=olt-a", "", http.StatusOK, nil)

	// Quotas and a violation (the auditor's row, written as it does).
	c.call("GET", "/api/v1/quotas", "", http.StatusOK, nil)
	var violation int64
	if err := s.DB.QueryRow(ctx, `INSERT INTO quota_violations (olt_id, task_type, period_start, period_end, compliance, report, severity, notification_id)
		VALUES ('olt-a', 'discovery', date_trunc('hour', now()) - interval '1 hour', date_trunc('hour', now()), 40, '{"runs":2}', 'HIGH', 'quota_violation:olt-a:discovery:1')
		RETURNING id`).Scan(&violation); err != nil {
		t.Fatal(err)
	}
	c.call("GET", "/api/v1/violations", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/violations/"+strconv.FormatInt(violation, 10), "", http.StatusOK, nil)

	// Alerts, incidents, silences.
	var alerts struct {
		Alerts []struct {
			ID string `json:"id"`
		} `json:"alerts"`
	}
	c.call("GET", "/api/v1/alerts?rule=onu_rx_low", "", http.StatusOK, &alerts)
	if len(alerts.Alerts) == 0 {
		c.call("GET", "/api/v1/alerts", "", http.StatusOK, &alerts)
	}
	c.call("GET", "/api/v1/alerts/"+alerts.Alerts[0].ID, "", http.StatusOK, nil)
	c.call("POST", "/api/v1/alerts/"+alerts.Alerts[0].ID+"/ack", `{"comment":"on it"}`, http.StatusAccepted, nil)
	var incidents struct {
		Incidents []struct {
			ID string `json:"id"`
		} `json:"incidents"`
	}
	c.call("GET", "/api/v1/incidents", "", http.StatusOK, &incidents)
	c.call("GET", "/api/v1/incidents/"+incidents.Incidents[0].ID, "", http.StatusOK, nil)
	var silence struct {
		ID string `json:"id"`
	}
	c.call("POST", "/api/v1/silences", `{"olt_id":"olt-a","duration":"2h","comment":"maintenance"}`, http.StatusCreated, &silence)
	c.call("GET", "/api/v1/silences", "", http.StatusOK, nil)
	c.call("DELETE", "/api/v1/silences/"+silence.ID, "", http.StatusAccepted, nil)

	// Webhooks.
	var hook struct {
		Webhook struct {
			ID string `json:"id"`
		} `json:"webhook"`
	}
	c.call("POST", "/api/v1/webhooks", `{"url":"http://127.0.0.1:9/hook","events":["quota_violation"]}`, http.StatusCreated, &hook)
	c.call("GET", "/api/v1/webhooks", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/webhooks/"+hook.Webhook.ID, "", http.StatusOK, nil)
	c.call("PUT", "/api/v1/webhooks/"+hook.Webhook.ID, `{"url":"http://127.0.0.1:9/hook2","events":["quota_violation","olt_disabled"]}`, http.StatusOK, nil)
	c.call("PATCH", "/api/v1/webhooks/"+hook.Webhook.ID, `{"enabled":false}`, http.StatusOK, nil)
	c.call("GET", "/api/v1/webhooks/"+hook.Webhook.ID+"/deliveries", "", http.StatusOK, nil)
	c.call("DELETE", "/api/v1/webhooks/"+hook.Webhook.ID, "", http.StatusOK, nil)

	// Users and tokens: a token belongs to a logged-in user.
	var user struct {
		ID int64 `json:"id"`
	}
	c.call("POST", "/api/v1/users", `{"username":"vic","role":"viewer","password":"correct horse battery"}`, http.StatusCreated, &user)
	uid := strconv.FormatInt(user.ID, 10)
	c.call("GET", "/api/v1/users", "", http.StatusOK, nil)
	c.call("GET", "/api/v1/users/"+uid, "", http.StatusOK, nil)
	c.call("PATCH", "/api/v1/users/"+uid, `{"role":"operator"}`, http.StatusOK, nil)
	vic := c.session("vic", "correct horse battery")
	var tok struct {
		Token struct {
			ID string `json:"id"`
		} `json:"token"`
	}
	vic.call("POST", "/api/v1/tokens", `{"name":"scripts"}`, http.StatusCreated, &tok)
	vic.call("GET", "/api/v1/tokens", "", http.StatusOK, nil)
	vic.call("DELETE", "/api/v1/tokens/"+tok.Token.ID, "", http.StatusAccepted, nil)
	for k := range vic.covered {
		c.covered[k] = true
	}

	// Deletions, last.
	c.call("DELETE", "/api/v1/workflows/lab-flow", "", http.StatusAccepted, nil)
	c.call("DELETE", "/api/v1/jobs/lab-get/olts/lab-1", "", http.StatusAccepted, nil)
	c.call("DELETE", "/api/v1/olts/lab-1", "", http.StatusAccepted, nil)
	c.call("DELETE", "/api/v1/jobs/lab-get", "", http.StatusAccepted, nil)
	c.call("DELETE", "/api/v1/jobs/lab-chain", "", http.StatusAccepted, nil)
	c.call("DELETE", "/api/v1/users/"+uid, "", http.StatusAccepted, nil)
	// The brand's OID is used by no job any more once the read model
	// has the deletions.
	waitFor(t, "the lab jobs deleted in the read model", 30*time.Second, func() (bool, string) {
		code, b, resp := c.send("DELETE", "/api/v1/oids/lab-serial", "")
		if code == http.StatusAccepted {
			c.validate("DELETE", "/api/v1/oids/lab-serial", "", resp, b)
		}
		return code == http.StatusAccepted, string(b)
	})
	waitFor(t, "the lab OIDs and OLT deleted in the read model", 30*time.Second, func() (bool, string) {
		code, b, resp := c.send("DELETE", "/api/v1/brands/lab", "")
		if code == http.StatusAccepted {
			c.validate("DELETE", "/api/v1/brands/lab", "", resp, b)
		}
		return code == http.StatusAccepted, string(b)
	})

	// Errors answer the document's statuses and error body.
	c.call("GET", "/api/v1/olts/nope", "", http.StatusNotFound, nil)
	c.call("POST", "/api/v1/olts", `{"id":"olt-a","name":"again","ip":"127.0.0.1","community":"x","profile":"huawei-ma5800"}`, http.StatusConflict, nil)
	c.call("POST", "/api/v1/brands", `{"id":"bad","name":"","index_scheme":"pon.onu"}`, http.StatusBadRequest, nil)
	c.call("GET", "/api/v1/olts?limit=-1", "", http.StatusBadRequest, nil)
	anon := &contract{t: t, base: c.base, http: c.http, doc: c.doc, router: c.router, covered: map[string]bool{}}
	anon.call("GET", "/api/v1/olts", "", http.StatusUnauthorized, nil)

	if missing := c.uncovered(); len(missing) > 0 {
		t.Errorf("operations of the document no call answered with success (add a call above): %s", strings.Join(missing, ", "))
	}
}

// session logs in through the console's form and returns a contract of
// that user's session (its cookie and CSRF token).
func (c *contract) session(user, password string) *contract {
	c.t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.PostForm(c.base+"/login", url.Values{"username": {user}, "password": {password}})
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("login %s = %d", user, resp.StatusCode)
	}
	page, err := hc.Get(c.base + "/tokens")
	if err != nil {
		c.t.Fatal(err)
	}
	b, _ := io.ReadAll(page.Body)
	page.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(b)
	if m == nil {
		c.t.Fatalf("no CSRF token in the tokens page")
	}
	return &contract{t: c.t, base: c.base, http: hc, csrf: string(m[1]), doc: c.doc, router: c.router, covered: map[string]bool{}}
}
