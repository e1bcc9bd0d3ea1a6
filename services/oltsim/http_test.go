package oltsim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHandler(t *testing.T) {
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("hw", 1, 4)}})
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	g := client(t, f.OLT("hw"), "public")
	if _, err := g.Get([]string{".1.3.6.1.2.1.1.5.0"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path, body string
		status             int
		contains           string
	}{
		{"GET", "/healthz", "", 200, "ok"},
		{"GET", "/olts", "", 200, `"name":"hw"`},
		{"GET", "/olts/hw/record", "", 200, `"requests":1`},
		{"GET", "/olts/hw/onus", "", 200, `"Serial":"HWTC`},
		{"GET", "/olts/nope/onus", "", 404, "no such olt"},
		{"PUT", "/olts/hw/faults", `{"latency":"25ms","loss_percent":0}`, 200, `"latency":"25ms"`},
		{"PUT", "/olts/hw/faults", `{"latency":"fast"}`, 400, "duration"},
		{"PUT", "/olts/hw/faults", `{"bogus":1}`, 400, "unknown field"},
		{"GET", "/olts/hw/faults", "", 200, `"latency":"25ms"`},
		{"POST", "/olts/hw/tick", "", 200, `"tick":1`},
		{"DELETE", "/olts/hw/record", "", 204, ""},
		{"GET", "/metrics", "", 200, `oltsim_requests_total{olt="hw"}`},
	}
	for _, tc := range tests {
		status, body := do(tc.method, tc.path, tc.body)
		if status != tc.status || !strings.Contains(body, tc.contains) {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, status, body)
		}
	}
	// One ONU's life through PATCH /olts/{name}/onus/{index}.
	u := f.OLT("hw").ONUs()[0]
	path := "/olts/hw/onus/" + u.Index
	for _, tc := range []struct {
		method, path, body string
		status             int
		contains           string
	}{
		{"GET", path, "", 200, `"Index":"` + u.Index + `"`},
		{"PATCH", path, `{"online":true,"rx_power_dbm":-19}`, 200, `"RxPowerDBm":-19`},
		{"PATCH", path, `{"rx_power_dbm":-29}`, 200, `"RxPowerDBm":-29`},
		{"PATCH", path, `{"online":false}`, 200, `"RxPowerDBm":null`},
		{"GET", path, "", 200, `"Online":false`},
		{"PATCH", path, `{"online":true,"rx_power_dbm":-19.5}`, 200, `"RxPowerDBm":-19.5`},
		{"PATCH", path, `{"rx_power_dbm":-41}`, 400, "want -40..10"},
		{"PATCH", path, `{}`, 400, "nothing to change"},
		{"PATCH", path, `{"rx":-20}`, 400, "unknown field"},
		{"PATCH", "/olts/hw/onus/9.9", `{"online":false}`, 404, "no such onu"},
		{"GET", "/olts/hw/onus/9.9", "", 404, "no such onu"},
		{"PATCH", "/olts/nope/onus/" + u.Index, `{"online":false}`, 404, "no such olt"},
	} {
		status, body := do(tc.method, tc.path, tc.body)
		if status != tc.status || !strings.Contains(body, tc.contains) {
			t.Errorf("%s %s %s: %d %s", tc.method, tc.path, tc.body, status, body)
		}
	}
	if got, _ := f.OLT("hw").ONU(u.Index); !got.Online || got.RxPowerDBm != -19.5 {
		t.Errorf("after the patches: %+v", got)
	}
	if got := f.OLT("hw").Faults().Latency; got != 25*time.Millisecond {
		t.Errorf("latency %v", got)
	}
	_, body := do("GET", "/olts", "")
	if strings.Contains(body, "public") {
		t.Error("community exposed")
	}
	var onus []map[string]any
	_, body = do("GET", "/olts/hw/onus", "")
	if err := json.Unmarshal([]byte(body), &onus); err != nil || len(onus) != 4 {
		t.Errorf("onus: %v %d", err, len(onus))
	}
}
