package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/streams"
)

// The console without a browser: the anonymous get the login page; a wrong
// password is refused; forms show the API's error at the field; lists
// search and paginate; a viewer's batch action is refused by the API.
func TestConsolePages(t *testing.T) {
	r := newRig(t)
	anon := client(t)
	code, _ := r.do(anon, "GET", "/", "", "", "")
	if code != http.StatusSeeOther {
		t.Fatalf("GET / anonymous = %d, want 303 to /login", code)
	}
	if code, body := r.do(anon, "GET", "/login", "", "", ""); code != 200 || !strings.Contains(body, `id="username"`) {
		t.Fatalf("login page = %d", code)
	}
	if code, body := r.do(anon, "POST", "/login", "", "", "username=nobody&password=whatever-long"); code != http.StatusUnauthorized || !strings.Contains(body, "wrong password") {
		t.Errorf("bad login = %d", code)
	}
	if code, _ := r.do(anon, "POST", "/login", "", "", "username=x&password=y&next=//evil.example/"); code != http.StatusUnauthorized {
		t.Errorf("bad login = %d", code)
	}
	_, admin, csrf := r.user("ada", auth.Admin)
	_, viewer, vcsrf := r.user("vera", auth.Viewer)
	form := func(v url.Values) string { v.Set("csrf", csrf); return v.Encode() }

	if code, body := r.do(admin, "POST", "/brands/new", "", "", form(url.Values{"id": {"huawei"}, "name": {"Huawei"}, "index_scheme": {"pon.onu"}})); code != http.StatusSeeOther {
		t.Fatalf("new brand = %d %s", code, body)
	}
	bad := url.Values{"id": {"olt-a"}, "name": {"A"}, "ip": {"300.1.1.1"}, "community": {"public-xyz"}, "brand_id": {"huawei"}, "enabled": {"on"}}
	code, body := r.do(admin, "POST", "/olts/new", "", "", form(bad))
	if code != http.StatusBadRequest || !strings.Contains(body, `id="error-ip"`) || !strings.Contains(body, `value="300.1.1.1"`) {
		t.Fatalf("bad ip = %d, want the error at the ip field:\n%s", code, body)
	}
	if strings.Contains(body, "public-xyz") {
		t.Error("the form echoes the community")
	}
	good := bad
	good.Set("ip", "10.0.0.1")
	if code, _ := r.do(admin, "POST", "/olts/new", "", "", form(good)); code != http.StatusSeeOther {
		t.Fatalf("good olt = %d", code)
	}
	if code, body := r.do(admin, "POST", "/olts/new", "", "", form(good)); code != http.StatusConflict || !strings.Contains(body, "already exists") {
		t.Errorf("same id again = %d", code)
	}
	if code, body := r.do(admin, "GET", "/olts/olt-a", "", "", ""); code != 200 || !strings.Contains(body, `id="live-onus"`) || !strings.Contains(body, `data-live-topic="olt:olt-a"`) {
		t.Errorf("olt page = %d", code)
	}
	for _, p := range []string{"/brands?q=hua&sort=-name", "/olts", "/oids", "/jobs", "/assignments", "/logs?level=ERROR", "/users", "/tokens", "/olts/olt-a/edit", "/olts/new", "/jobs/new", "/oids/new", "/assignments/new", "/quotas", "/violations?severity=HIGH", "/pollers"} {
		if code, body := r.do(admin, "GET", p, "", "", ""); code != 200 || !strings.Contains(body, "</html>") {
			t.Errorf("GET %s = %d", p, code)
		}
	}
	if code, _ := r.do(admin, "GET", "/no-such-page", "", "", ""); code != http.StatusNotFound {
		t.Errorf("unknown page = %d", code)
	}
	// A viewer sees the buttons disabled, and the server refuses anyway.
	_, body = r.do(viewer, "GET", "/olts", "", "", "")
	if !strings.Contains(body, `value="disable" class="act-disable" disabled`) {
		t.Errorf("viewer's disable button is not disabled")
	}
	code, _ = r.do(viewer, "POST", "/olts/batch", "", "", url.Values{"csrf": {vcsrf}, "action": {"disable"}, "id": {"olt-a"}}.Encode())
	if code != http.StatusForbidden {
		t.Errorf("viewer batch = %d, want 403", code)
	}
	// An admin's batch goes through the API.
	code, _ = r.do(admin, "POST", "/olts/batch", "", "", form(url.Values{"action": {"disable"}, "id": {"olt-a", "nope"}, "back": {"/olts"}}))
	if code != http.StatusSeeOther {
		t.Errorf("batch = %d", code)
	}
	if code, _ := r.do(admin, "POST", "/logout", "", "", form(url.Values{})); code != http.StatusSeeOther {
		t.Errorf("logout = %d", code)
	}
	if code, _ := r.do(admin, "GET", "/olts", "", "", ""); code != http.StatusSeeOther {
		t.Errorf("after logout = %d, want the login page", code)
	}
}

// The scheduler's and vendor profiles' pages: an OLT's nodes with their
// schedule and a run now that shows its execution id (or why the OLT
// refuses it), workflows validated at the field, the queue, the vendor
// profiles and the OLT form's profile select.
func TestConsoleSchedulePages(t *testing.T) {
	r := newRig(t)
	_, admin, csrf := r.user("ada", auth.Admin)
	_, viewer, vcsrf := r.user("vera", auth.Viewer)
	form := func(v url.Values) string { v.Set("csrf", csrf); return v.Encode() }
	api := func(method, path, body string, want int) {
		t.Helper()
		if code, out := r.do(client(t), method, path, staticToken, "", body); code != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, code, out, want)
		}
	}
	api("POST", "/api/v1/brands", `{"id":"huawei","name":"Huawei","index_scheme":"pon.onu"}`, http.StatusCreated)
	api("POST", "/api/v1/oids", `{"id":"hw-sn","brand_id":"huawei","name":"sn","oid":"1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3","field":"serial","decoder":{"kind":"hex_serial"}}`, http.StatusCreated)
	api("POST", "/api/v1/jobs", `{"id":"get-serial","name":"GET serial","brand_id":"huawei","kind":"get","oid_ids":["hw-sn"],"interval_seconds":300}`, http.StatusCreated)
	api("POST", "/api/v1/jobs", `{"id":"get-rx","name":"GET rx","brand_id":"huawei","kind":"get","oid_ids":["hw-sn"],"interval_seconds":300}`, http.StatusCreated)
	api("POST", "/api/v1/olts", `{"id":"olt-a","name":"A","ip":"10.0.0.1","community":"s3cr3t-community","brand_id":"huawei"}`, http.StatusCreated)

	// The planner's schedule of the OLT.
	kv, err := r.s.deps.JS.KeyValue(context.Background(), streams.BucketSchedule)
	if err != nil {
		t.Fatal(err)
	}
	next, last := time.Now().Add(4*time.Minute).UTC(), time.Now().Add(-time.Minute).UTC()
	b, _ := json.Marshal(streams.NodeSchedule{NodeID: "get-serial.olt-a", JobID: "get-serial", OLTID: "olt-a", JobName: "GET serial", Kind: streams.KindGet,
		Chain: []string{}, Enabled: true, State: streams.NodeIdle, NextRunAt: &next, LastRunAt: &last, LastStatus: "SUCCESS", LastExecutionID: "exec-last-1"})
	if _, err := kv.Put(context.Background(), "get-serial.olt-a", b); err != nil {
		t.Fatal(err)
	}
	code, body := r.do(admin, "GET", "/olts/olt-a", "", "", "")
	if code != 200 || !strings.Contains(body, `data-node="get-serial.olt-a"`) || !strings.Contains(body, "SUCCESS") ||
		!strings.Contains(body, "/executions/exec-last-1") || !strings.Contains(body, `class="next-run" title="`+next.Format(time.RFC3339Nano)) {
		t.Fatalf("OLT page without its node's schedule = %d:\n%s", code, body)
	}
	// Run now: 202 shows the execution id.
	loc := func(c *http.Client, path, body string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", r.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST %s = %d, want 303", path, resp.StatusCode)
		}
		return resp.Header.Get("Location")
	}
	to := loc(admin, "/olts/olt-a/run", form(url.Values{"job_id": {"get-serial"}}))
	u, _ := url.Parse(to)
	exec := u.Query().Get("exec")
	if exec == "" || !strings.Contains(u.Query().Get("msg"), exec) {
		t.Fatalf("run now went to %s, want the execution id", to)
	}
	if _, body := r.do(admin, "GET", to, "", "", ""); !strings.Contains(body, `id="run-exec"`) || !strings.Contains(body, exec) {
		t.Errorf("the OLT page does not show the requested execution")
	}
	// Auto-disabled by the planner: the page shows the reason and when;
	// run now is refused (409) with the reason.
	ev, _ := streams.Encode("planner", time.Now(), streams.OLTAutoDisabled{ID: "olt-a", Reason: "3 consecutive failed executions", Failures: 3, DisabledAt: time.Now()})
	if _, err := r.s.deps.JS.Publish(context.Background(), streams.SubjectOLTDisabled("olt-a"), ev); err != nil {
		t.Fatal(err)
	}
	if _, body := r.do(admin, "GET", "/olts/olt-a", "", "", ""); !strings.Contains(body, `id="olt-disabled-reason"`) || !strings.Contains(body, "3 consecutive failed executions") {
		t.Errorf("the OLT page does not show the auto-disable")
	}
	to = loc(admin, "/olts/olt-a/run", form(url.Values{"job_id": {"get-serial"}}))
	if u, _ := url.Parse(to); !strings.Contains(u.Query().Get("err"), "disabled: 3 consecutive failed executions") {
		t.Errorf("run now of an auto-disabled OLT went to %s, want why", to)
	}
	// A viewer's run now is disabled, and refused.
	if _, body := r.do(viewer, "GET", "/olts/olt-a", "", "", ""); !strings.Contains(body, `class="run-now" disabled`) {
		t.Errorf("a viewer's run now is not disabled")
	}
	if code, _ := r.do(viewer, "POST", "/olts/olt-a/run", "", "", url.Values{"csrf": {vcsrf}, "job_id": {"get-serial"}}.Encode()); code != http.StatusForbidden {
		t.Errorf("viewer run now = %d, want 403", code)
	}

	// The OLT page's live stream moves with its nodes (the schedule KV).
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", r.srv.URL+"/events?topic=olt:olt-a", nil)
	resp, err := admin.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	if l := <-lines; !strings.HasPrefix(l, "retry:") {
		t.Fatalf("events start with %q", l)
	}
	time.Sleep(1500 * time.Millisecond) // the first fingerprint is taken
	b, _ = json.Marshal(streams.NodeSchedule{NodeID: "get-serial.olt-a", JobID: "get-serial", OLTID: "olt-a", Chain: []string{}, State: streams.NodeDisabled, DisabledReason: "OLT disabled"})
	if _, err := kv.Put(context.Background(), "get-serial.olt-a", b); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		if l == "event: change" {
			break
		}
	}
	if ctx.Err() != nil {
		t.Errorf("no change event after the node moved")
	}
	cancel()

	// Workflows: the API's error at the field, then saved, edited, disabled.
	wf := url.Values{"id": {"wf-1"}, "name": {"serial then rx"}, "olt_id": {"olt-a"}, "master_job_id": {"get-serial"}, "chain_job_ids": {"get-serial"}, "enabled": {"on"}}
	if code, body := r.do(admin, "POST", "/workflows/new", "", "", form(wf)); code != http.StatusBadRequest || !strings.Contains(body, `id="error-chain_job_ids"`) {
		t.Fatalf("workflow with its master in the chain = %d, want the error at the chain:\n%s", code, body)
	}
	wf.Set("chain_job_ids", "get-rx")
	if code, body := r.do(admin, "POST", "/workflows/new", "", "", form(wf)); code != http.StatusSeeOther {
		t.Fatalf("new workflow = %d %s", code, body)
	}
	if code, body := r.do(admin, "GET", "/workflows/wf-1/edit", "", "", ""); code != 200 || !strings.Contains(body, `value="get-rx"`) {
		t.Errorf("edit workflow = %d", code)
	}
	if to := loc(admin, "/workflows/batch", form(url.Values{"action": {"disable"}, "id": {"wf-1"}, "back": {"/workflows"}})); !strings.Contains(to, "1+done") {
		t.Errorf("disable workflow went to %s", to)
	}
	if code, body := r.do(client(t), "GET", "/api/v1/workflows/wf-1", staticToken, "", ""); code != 200 || !strings.Contains(body, `"enabled":false`) {
		t.Errorf("workflow after disable = %d %s", code, body)
	}

	// Vendor profiles, the queue, the OLT form's profile select.
	code, body = r.do(admin, "GET", "/vendor-profiles", "", "", "")
	m := regexp.MustCompile(`href="/vendor-profiles/([^"]+)"`).FindStringSubmatch(body)
	if code != 200 || m == nil {
		t.Fatalf("vendor profiles = %d, no profile linked", code)
	}
	if code, body := r.do(admin, "GET", "/vendor-profiles/"+m[1], "", "", ""); code != 200 || !strings.Contains(body, `id="profile-columns"`) {
		t.Errorf("vendor profile %s = %d", m[1], code)
	}
	if code, _ := r.do(admin, "GET", "/vendor-profiles/no-such-profile", "", "", ""); code != http.StatusNotFound {
		t.Errorf("unknown vendor profile = %d", code)
	}
	if code, body := r.do(admin, "GET", "/olts/new?profile="+m[1], "", "", ""); code != 200 || !strings.Contains(body, `id="f-profile"`) ||
		!strings.Contains(body, `value="auto"`) || !strings.Contains(body, `value="`+m[1]+`" selected`) {
		t.Errorf("OLT form = %d without the profile select", code)
	}
	if code, body := r.do(admin, "GET", "/queue", "", "", ""); code != 200 || !strings.Contains(body, "no active planner") {
		t.Errorf("queue without a planner = %d", code)
	}
	// With the planner's report: the next nodes, the backlog and the
	// delays per class and per OLT.
	four, zero := 4, 0
	leader, err := r.s.deps.JS.KeyValue(context.Background(), streams.BucketPlannerLeader)
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := json.Marshal(streams.QueueReport{GeneratedAt: time.Now(), Planner: "planner-1", Size: 7, IsOverload: true,
		NextNodes:    []streams.QueuedNode{{NodeID: "get-serial.olt-a", OLTID: "olt-a", JobID: "get-serial", DueAt: time.Now(), DelaySeconds: 12.5, Priority: 40, Class: "polling"}},
		Delayed:      map[string]int{"5s": 7, "10s": 3},
		DelayedClass: map[string]map[string]int{"polling": {"5s": 7, "10s": 3}},
		DelayedOLT:   map[string]map[string]int{"olt-a": {"5s": 7}},
		Waiting:      5, DispatchedWaiting: 2,
		Classes: map[string]streams.ClassQueue{
			"discovery": {Size: 3, Waiting: 1, Dispatched: 4, DispatchedWaiting: 2, Running: 2, Capacity: &four, Free: &zero, Late: 1, IsSaturated: true, IsOverload: true},
			"polling":   {Size: 4, Waiting: 4, Late: 4}}})
	if _, err := leader.Put(context.Background(), streams.QueueKey, rep); err != nil {
		t.Fatal(err)
	}
	code, body = r.do(admin, "GET", "/queue", "", "", "")
	for _, want := range []string{`id="queue-size">7<`, `overloaded`, `id="backlog-class"`, `<td>discovery</td><td>3</td><td>1</td>`, `>unknown<`, `<span class="badge b-bad">overloaded</span>`, `get-serial.olt-a`, `<td>polling</td>`, `<a href="/olts/olt-a">olt-a</a>`, "12.5 s"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("queue page = %d without %s", code, want)
		}
	}
	for _, p := range []string{"/workflows?q=serial&sort=-name&enabled=false", "/workflows/new", "/pollers"} {
		if code, body := r.do(admin, "GET", p, "", "", ""); code != 200 || !strings.Contains(body, "</html>") {
			t.Errorf("GET %s = %d", p, code)
		}
	}
}
