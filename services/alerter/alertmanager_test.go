package alerter_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// amBinary is the Debian package prometheus-alertmanager's binary.
func amBinary(t testing.TB) string {
	for _, p := range []string{os.Getenv("FACHO_ALERTMANAGER_BIN"), "/usr/bin/prometheus-alertmanager", "/usr/bin/alertmanager"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if path, err := exec.LookPath("alertmanager"); err == nil {
		return path
	}
	t.Skip("no Alertmanager: apt-get install prometheus-alertmanager (or set FACHO_ALERTMANAGER_BIN)")
	return ""
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// amNotification is what Alertmanager's webhook receiver posts.
type amNotification struct {
	Status string `json:"status"`
	Alerts []struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"alerts"`
	GroupLabels map[string]string `json:"groupLabels"`
}

// receiver records what a webhook receives.
type receiver struct {
	mu    sync.Mutex
	am    []amNotification
	facho []fachoDelivery
	srv   *httptest.Server
}

type fachoDelivery struct {
	ID, Event, Signature string
	Header               http.Header
	Body                 []byte
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		r.mu.Lock()
		defer r.mu.Unlock()
		switch req.URL.Path {
		case "/am":
			var n amNotification
			if err := json.Unmarshal(b, &n); err != nil {
				t.Errorf("alertmanager webhook: %v", err)
			}
			r.am = append(r.am, n)
		case "/facho":
			r.facho = append(r.facho, fachoDelivery{ID: req.Header.Get("X-Facho-Notification"), Event: req.Header.Get("X-Facho-Event"), Signature: req.Header.Get("X-Facho-Signature"), Header: req.Header.Clone(), Body: b})
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// startAlertmanager runs a real Alertmanager on a free port whose webhook
// receiver posts to rcv, grouped by alertname, OLT and PON, with short
// waits; it returns its base URL.
func startAlertmanager(t testing.TB, rcv *receiver) string {
	bin := amBinary(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`route:
  receiver: test
  group_by: [alertname, olt_id, pon]
  group_wait: 200ms
  group_interval: 500ms
  repeat_interval: 1h
receivers:
  - name: test
    webhook_configs:
      - url: %s/am
        send_resolved: true
`, rcv.srv.URL)
	if err := os.WriteFile(filepath.Join(dir, "am.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "am.yml"), "--storage.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--cluster.listen-address=")
	logf, err := os.Create(filepath.Join(dir, "am.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "am.log"))
			t.Logf("alertmanager log:\n%s", b)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("alertmanager not ready at %s", url)
		}
	}
}
