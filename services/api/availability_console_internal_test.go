package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
)

// The console shows an OLT's availability on the OLT list and its page:
// the state as a badge, since when, and the last error.
func TestConsoleAvailabilityBadge(t *testing.T) {
	r := newRig(t)
	_, viewer, _ := r.user("vera", auth.Viewer)
	api := func(method, path, body string, want int) {
		t.Helper()
		if code, out := r.do(client(t), method, path, staticToken, "", body); code != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, code, out, want)
		}
	}
	api("POST", "/api/v1/brands", `{"id":"huawei","name":"Huawei","index_scheme":"pon.onu"}`, http.StatusCreated)
	api("POST", "/api/v1/olts", `{"id":"olt-a","name":"A","ip":"10.0.0.1","community":"s3cr3t-community","brand_id":"huawei"}`, http.StatusCreated)
	ctx := context.Background()
	if _, err := r.s.deps.DB.Exec(ctx, `INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at, deleted, disabled_reason, disabled_at)
		VALUES ('olt-a', 'A', '10.0.0.1', 161, 'huawei', true, now(), false, '', NULL) ON CONFLICT (id) DO NOTHING`); err != nil {
		t.Fatal(err)
	}
	if _, body := r.do(viewer, "GET", "/olts/olt-a", "", "", ""); !strings.Contains(body, `id="olt-availability">not probed yet`) {
		t.Errorf("the OLT page of a never probed OLT:\n%s", body)
	}
	since := time.Now().Add(-2 * time.Minute).UTC()
	if _, err := r.s.deps.DB.Exec(ctx, `INSERT INTO olt_availability (olt_id, state, since, last_error, source, updated_at, stream_seq)
		VALUES ('olt-a', 'unavailable', $1, 'probe 10.0.0.1:161: no answer to a GET of sysUpTime.0', 'probe', now(), 1)`, since); err != nil {
		t.Fatal(err)
	}
	_, body := r.do(viewer, "GET", "/olts/olt-a", "", "", "")
	for _, want := range []string{`class="badge b-bad" id="olt-availability">unavailable`, `id="olt-availability-since"`, `no answer to a GET of sysUpTime.0`} {
		if !strings.Contains(body, want) {
			t.Errorf("the OLT page lacks %q", want)
		}
	}
	_, body = r.do(viewer, "GET", "/olts", "", "", "")
	if !strings.Contains(body, `class="badge b-bad availability"`) || !strings.Contains(body, `no answer to a GET of sysUpTime.0`) {
		t.Errorf("the OLT list lacks the availability badge:\n%s", body)
	}
}
