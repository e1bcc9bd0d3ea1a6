package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/pkg/telemetry"
)

// sseHeartbeat is how often an idle event stream gets a comment line, so
// proxies and browsers keep the connection.
const sseHeartbeat = 15 * time.Second

// eventResumeMax bounds what a reconnecting client of the event stream
// gets back: at most the last eventResumeMax messages of each stream it
// follows are looked at again (older ones are reported as a gap).
const eventResumeMax = 10000

// streamEvents is GET /api/v1/events/stream?olt=&kind=: the live events of
// `facho tail` as server-sent events for dashboards: ONU changes,
// executions and notifications from now on, with the same filters (olt: an
// OLT id; kind: onu, exec, notify, an ONU change kind, an execution phase or
// a notification kind). Each event is "event: <class>", "id: <cursor>" and
// one JSON line of data (replay.TailEvent: the envelope as published, with
// a summary). The cursor is the position in every stream followed
// ("<stream>-<seq>" joined by commas); the stream's first block carries
// the starting one. A client that reconnects with it in Last-Event-ID (or
// the last_event_id parameter) gets the events it missed, then the live
// ones: nothing twice, and at most the last eventResumeMax messages of
// each stream back (an "event: gap" says what could not be replayed).
// Authenticated like the rest of the API. The stream ends when the client
// goes away or the server shuts down.
func (s *server) streamEvents(w http.ResponseWriter, r *http.Request) *apiError {
	f := replay.TailFilter{OLT: r.URL.Query().Get("olt"), Kind: r.URL.Query().Get("kind")}
	if err := f.Validate(); err != nil {
		field := "kind"
		if f.OLT != "" && (replay.TailFilter{OLT: f.OLT}).Validate() != nil {
			field = "olt"
		}
		return badField(field, "%s", err.Error())
	}
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last_event_id")
	}
	from, err := replay.ParseTailCursor(last)
	if err != nil {
		return badField("last_event_id", "%s", err.Error())
	}
	cursor := replay.TailCursor{}
	rc := http.NewResponseController(w)
	// The server's write timeout is for ordinary responses: this one
	// lasts as long as the client listens.
	_ = rc.SetWriteDeadline(time.Time{})
	var mu sync.Mutex
	write := func(format string, args ...any) error {
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return err
		}
		return rc.Flush()
	}
	// The stream ends when the client leaves or the server shuts down.
	ctx, stop := telemetry.UntilShutdown(r.Context())
	defer stop()
	done := make(chan struct{})
	defer close(done)
	started := false
	// ready: the consumers exist, every event from here on is sent.
	ready := func(start replay.TailStart) {
		started = true
		cursor = start.Cursor
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		_ = write(": facho events\nid: %s\n\n", cursor)
		for _, g := range start.Gaps {
			b, _ := json.Marshal(g)
			_ = write("event: gap\ndata: %s\n\n", b)
		}
		go func() {
			t := time.NewTicker(sseHeartbeat)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-t.C:
					if write(": heartbeat\n\n") != nil {
						return
					}
				}
			}
		}()
	}
	err = replay.TailFrom(ctx, s.deps.JS, f, from, eventResumeMax, ready, func(ev replay.TailEvent) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		cursor[ev.Stream] = ev.Seq
		return write("id: %s\nevent: %s\ndata: %s\n\n", cursor, ev.Class, b)
	})
	switch {
	case err == nil || ctx.Err() != nil:
	case !started:
		s.deps.Log.Warn().Err(err).Msg("event stream")
		return unavailable("event stream")
	default:
		s.deps.Log.Warn().Err(err).Msg("event stream")
		_ = write("event: error\ndata: %q\n\n", "event stream interrupted; reconnect")
	}
	return nil
}
