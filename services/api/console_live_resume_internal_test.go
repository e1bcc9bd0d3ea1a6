package api

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
)

// A console page that reconnects its live stream with the id it last had
// gets a change at once when the data moved while it was away, and none
// when nothing did.
func TestConsoleLiveResume(t *testing.T) {
	r := newRig(t)
	_, admin, _ := r.user("ada", auth.Admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// open connects to the logs topic and returns its blocks (comments and
	// retry dropped) until stop.
	open := func(lastID string) (<-chan map[string]string, context.CancelFunc) {
		t.Helper()
		c, stop := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(c, "GET", r.srv.URL+"/events?topic=logs", nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := admin.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("events: %v %v", resp, err)
		}
		out := make(chan map[string]string, 16)
		go func() {
			defer close(out)
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			block := map[string]string{}
			for sc.Scan() {
				l := sc.Text()
				if l == "" {
					if _, ok := block["retry"]; !ok && len(block) > 0 {
						out <- block
					}
					block = map[string]string{}
					continue
				}
				if k, v, ok := strings.Cut(l, ": "); ok {
					block[k] = v
				}
			}
		}()
		return out, stop
	}
	next := func(ch <-chan map[string]string, within time.Duration) map[string]string {
		select {
		case b := <-ch:
			return b
		case <-time.After(within):
			return nil
		}
	}
	addLog := func(seq int) {
		t.Helper()
		if _, err := r.s.deps.DB.Exec(ctx, `INSERT INTO coordinator_logs (event_type, level, message, "timestamp", source_stream, source_seq)
			VALUES ('TEST', 'INFO', 'live resume', now(), 'TEST', $1)`, seq); err != nil {
			t.Fatal(err)
		}
	}

	ch, stop := open("")
	first := next(ch, 10*time.Second)
	if first == nil || first["id"] == "" || first["event"] != "" {
		t.Fatalf("first block %v, want the starting id only", first)
	}
	addLog(1)
	change := next(ch, 10*time.Second)
	if change == nil || change["event"] != "change" || change["id"] == "" || change["id"] == first["id"] {
		t.Fatalf("after a new log: %v, want a change with a new id", change)
	}
	stop()

	// Away while a log arrives: the reconnect brings the change at once.
	addLog(2)
	ch, stop = open(change["id"])
	b := next(ch, 10*time.Second)
	if b == nil || b["event"] != "change" || b["id"] == change["id"] {
		t.Fatalf("reconnected after a change: %v, want a change", b)
	}
	stop()

	// Away while nothing moved: the id only, no change.
	ch, stop = open(b["id"])
	defer stop()
	if s := next(ch, 10*time.Second); s == nil || s["id"] != b["id"] || s["event"] != "" {
		t.Fatalf("reconnected without a change: %v, want the same id", s)
	}
	if extra := next(ch, 2500*time.Millisecond); extra != nil {
		t.Errorf("a change without one: %v", extra)
	}
}
