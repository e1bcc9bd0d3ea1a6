package projector

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/streams"
)

// pendingJS records the most async publishes the real JetStream context
// had waiting for their acks.
type pendingJS struct {
	jetstream.JetStream
	mu  sync.Mutex
	max int
}

func (p *pendingJS) PublishAsync(subject string, data []byte, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	f, err := p.JetStream.PublishAsync(subject, data, opts...)
	p.mu.Lock()
	p.max = max(p.max, p.JetStream.PublishAsyncPending())
	p.mu.Unlock()
	return f, err
}

func onuRows(n int, subject func(i int) string) []outboxRow {
	rows := make([]outboxRow, n)
	for i := range rows {
		rows[i] = outboxRow{MsgID: fmt.Sprintf("window-test:%d", i), Subject: subject(i), Payload: []byte(`{}`)}
	}
	return rows
}

// A first discovery's transaction publishes thousands of events: they go
// out a window at a time, every one lands once, and the context's pending
// limit is never reached (sent all at once, they stalled past it).
func TestPublishAllKeepsAWindow(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	js := &pendingJS{JetStream: env.JS}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows := onuRows(4096, func(i int) string { return streams.SubjectONU(fmt.Sprintf("olt-%d", i%7), "discovered") })
	n, err := publishAll(ctx, js, rows, 10*time.Second)
	if err != nil || n != len(rows) {
		t.Fatalf("publishAll: %d of %d acknowledged, %v", n, len(rows), err)
	}
	// The context's pending limit (4,000) is shared by the default 4
	// workers of a projector.
	if limit := min(publishWindow, 4000/4); js.max > limit {
		t.Errorf("%d publishes awaited their acks at once, want at most %d", js.max, limit)
	}
	st, err := env.JS.Stream(ctx, streams.StreamONU)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(len(rows)) {
		t.Errorf("stream holds %d events, want %d", info.State.Msgs, len(rows))
	}
}

// A round that fails says how many events, from the first, were stored, so
// the retry does not send them again.
func TestPublishAllReportsTheAcknowledgedPrefix(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const good = 612
	rows := onuRows(good+50, func(i int) string {
		if i >= good {
			return "facho.nowhere.olt-1" // no stream: refused
		}
		return streams.SubjectONU("olt-1", "updated")
	})
	n, err := publishAll(ctx, env.JS, rows, 5*time.Second)
	if err == nil {
		t.Fatal("publishing to a subject no stream holds succeeded")
	}
	if n != good {
		t.Errorf("%d acknowledged, want %d (%v)", n, good, err)
	}
	if !strings.Contains(err.Error(), rows[good].MsgID) {
		t.Errorf("error %q does not name the event that failed (%s)", err, rows[good].MsgID)
	}
}
