package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/streams"
)

// The event stream: authenticated, filters checked, and the events of the
// filter (only those) as server-sent events.
func TestEventStream(t *testing.T) {
	f := setup(t)
	for _, tc := range []struct {
		query string
		auth  bool
		want  int
	}{
		{"", false, http.StatusUnauthorized},
		{"?kind=nonsense", true, http.StatusBadRequest},
		{"?olt=a.b", true, http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/api/v1/events/stream"+tc.query, nil)
		if tc.auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%q auth %v: %d, want %d", tc.query, tc.auth, resp.StatusCode, tc.want)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/api/v1/events/stream?olt=olt-1&kind=exec", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(resp.Body)
	if l, err := rd.ReadString('\n'); err != nil || l != ": facho events\n" {
		t.Fatalf("first line %q %v", l, err)
	}
	// The consumers exist now: publish one event the filter drops (another
	// OLT), one it drops (an ONU change), then the one it keeps.
	pub := func(subject string, ev streams.Event) {
		b, err := streams.Encode("test", time.Now(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.js.Publish(context.Background(), subject, b); err != nil {
			t.Fatal(err)
		}
	}
	pub(streams.SubjectExec("olt-2", streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: "e2", JobID: "j", OLTID: "olt-2", Attempt: 1, StartedAt: time.Now()})
	pub(streams.SubjectONU("olt-1", streams.ONUDiscovered), streams.ONUChanged{OLTID: "olt-1", PonIndex: 1, ONUID: 2, Change: streams.ONUDiscovered,
		Current: streams.ONUState{Serial: "HWTC00000001", Status: "ONLINE"}, ObservedAt: time.Now()})
	pub(streams.SubjectExec("olt-1", streams.PhaseFailed), streams.ExecutionFailed{ExecutionID: "e1", JobID: "j", OLTID: "olt-1", Attempt: 2,
		StartedAt: time.Now(), FinishedAt: time.Now(), DurationMS: 1500, Error: "timeout"})
	var lines []string
	for len(lines) < 3 {
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v (so far %q)", err, lines)
		}
		if strings.HasPrefix(l, ":") || l == "\n" {
			continue
		}
		lines = append(lines, strings.TrimSuffix(l, "\n"))
	}
	if lines[0] != "id: FACHO_EXEC-2" || lines[1] != "event: exec" || !strings.HasPrefix(lines[2], "data: ") {
		t.Fatalf("event %q", lines)
	}
	var ev replay.TailEvent
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[2], "data: ")), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.OLT != "olt-1" || ev.Kind != "failed" || ev.Summary != "execution e1 attempt 2 1500 ms: timeout" {
		t.Errorf("event %+v", ev)
	}
	if _, _, err := streams.DecodeOn[streams.ExecutionFailed](ev.Subject, ev.Data); err != nil {
		t.Errorf("data is not the published envelope: %v", err)
	}
}
