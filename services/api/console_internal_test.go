package api

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/facho-olt/facho/services/api/auth"
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
