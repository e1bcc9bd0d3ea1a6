package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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
	// The starting position: the stream followed, nothing seen yet.
	if l, err := rd.ReadString('\n'); err != nil || l != "id: FACHO_EXEC-0\n" {
		t.Fatalf("second line %q %v", l, err)
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

// sseEvent is one block of a server-sent event stream.
type sseEvent struct{ id, event, data string }

// readSSE sends the blocks of an event stream (comments dropped) to the
// channel until the body ends.
func readSSE(body *bufio.Reader, out chan<- sseEvent) {
	defer close(out)
	var ev sseEvent
	for {
		l, err := body.ReadString('\n')
		if err != nil {
			return
		}
		l = strings.TrimSuffix(l, "\n")
		switch {
		case l == "":
			if ev != (sseEvent{}) {
				out <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(l, "id: "):
			ev.id = strings.TrimPrefix(l, "id: ")
		case strings.HasPrefix(l, "event: "):
			ev.event = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: "):
			ev.data = strings.TrimPrefix(l, "data: ")
		}
	}
}

// A client that reconnects with the id of the last event it read gets the
// events published while it was away (of every stream it follows), none it
// already had, then the live ones.
func TestEventStreamResume(t *testing.T) {
	f := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(ctx context.Context, lastID string) <-chan sseEvent {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/api/v1/events/stream?olt=olt-1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %d", resp.StatusCode)
		}
		out := make(chan sseEvent, 64)
		go func() {
			defer resp.Body.Close()
			readSSE(bufio.NewReader(resp.Body), out)
		}()
		return out
	}
	next := func(ch <-chan sseEvent) sseEvent {
		t.Helper()
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			return ev
		case <-ctx.Done():
			t.Fatal("no event within a minute")
		}
		return sseEvent{}
	}
	n := 0
	// publish sends an execution or an ONU change of olt-1 (alternately,
	// so that the cursor moves in two streams), and returns its summary.
	publish := func() string {
		n++
		var subject string
		var ev streams.Event
		if n%2 == 1 {
			subject, ev = streams.SubjectExec("olt-1", streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: fmt.Sprintf("e%d", n), JobID: "j", OLTID: "olt-1", Attempt: 1, StartedAt: time.Now()}
		} else {
			subject, ev = streams.SubjectONU("olt-1", streams.ONUDiscovered), streams.ONUChanged{OLTID: "olt-1", PonIndex: 1, ONUID: int64(n), Change: streams.ONUDiscovered,
				Current: streams.ONUState{Serial: fmt.Sprintf("HWTC%08d", n), Status: "ONLINE"}, ObservedAt: time.Now()}
		}
		b, err := streams.Encode("test", time.Now(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.js.Publish(ctx, subject, b); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("e%d", n)
	}
	summaryOf := func(ev sseEvent) string {
		t.Helper()
		var te replay.TailEvent
		if err := json.Unmarshal([]byte(ev.data), &te); err != nil {
			t.Fatalf("event %+v: %v", ev, err)
		}
		if te.Class == replay.ClassExec {
			return strings.Fields(te.Summary)[1] // execution <id> ...
		}
		_, c, err := streams.DecodeOn[streams.ONUChanged](te.Subject, te.Data)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("e%d", c.ONUID)
	}

	first, stopFirst := context.WithCancel(ctx)
	ch := connect(first, "")
	start := next(ch)
	if start.event != "" || start.id == "" {
		t.Fatalf("first block %+v, want the starting id", start)
	}
	var got []string
	lastID := start.id
	for range 4 {
		publish()
	}
	for range 3 { // read three of four, then leave
		ev := next(ch)
		got = append(got, summaryOf(ev))
		lastID = ev.id
	}
	stopFirst()
	for range 3 { // published while away
		publish()
	}
	ch = connect(ctx, lastID)
	if ev := next(ch); ev.id != lastID || ev.event != "" {
		t.Fatalf("resumed stream starts with %+v, want id %q", ev, lastID)
	}
	for range 4 {
		ev := next(ch)
		if ev.event == "gap" {
			t.Fatalf("a gap on a short absence: %s", ev.data)
		}
		got = append(got, summaryOf(ev))
	}
	publish() // live, after the catch-up
	got = append(got, summaryOf(next(ch)))
	// Each stream delivers in its own order: compare as sets, and no
	// duplicates.
	seen := map[string]int{}
	for _, g := range got {
		seen[g]++
	}
	for i := 1; i <= n; i++ {
		if c := seen[fmt.Sprintf("e%d", i)]; c != 1 {
			t.Errorf("event e%d received %d times (all: %v)", i, c, got)
		}
	}
	if len(got) != n {
		t.Errorf("received %d events, published %d: %v", len(got), n, got)
	}
	select {
	case ev := <-ch:
		t.Errorf("an extra event %+v", ev)
	case <-time.After(500 * time.Millisecond):
	}

	// A bad id is refused at the field.
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/api/v1/events/stream?last_event_id=nonsense", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("last_event_id=nonsense: %d, want 400", resp.StatusCode)
	}
}
