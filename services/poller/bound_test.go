package poller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/streams"
)

// A NodeDue still waiting on its streams.PollerMaxDeliveries-th delivery
// (here: OLT busy) is dead-lettered instead of NAKed again; before that it
// is NAKed and comes back.
func TestNodeDueGivenUpOnItsLastDelivery(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx := context.Background()
	m, err := newMetrics(prometheus.NewRegistry(), "p1", 1)
	if err != nil {
		t.Fatal(err)
	}
	p := &poller{cfg: Config{PollerID: "p1"}.WithDefaults(), js: env.JS, log: zerolog.Nop(), metrics: m}
	node := streams.NodeDue{ExecutionID: "e1", JobID: "j", OLTID: "olt-1", Target: streams.Target{Host: "192.0.2.1", Port: 161}, OIDs: []streams.OIDSpec{{OID: "1.3"}}}
	b, err := streams.EncodeWithID("e1", "test", time.Now(), node)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.JS.Publish(ctx, streams.SubjectNodeDue("olt-1"), b); err != nil {
		t.Fatal(err)
	}
	cons, err := env.JS.Consumer(ctx, streams.StreamSchedule, streams.ConsumerPoller)
	if err != nil {
		t.Fatal(err)
	}
	next := func() jetstream.Msg {
		t.Helper()
		msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	// Not yet the last delivery: NAKed, it comes back.
	p.later(ctx, next(), streams.PollerMaxDeliveries-1, time.Millisecond, "olt busy", p.log)
	msg := next()
	meta, err := msg.Metadata()
	if err != nil || meta.NumDelivered != 2 {
		t.Fatalf("redelivery: %+v %v", meta, err)
	}
	// The last delivery: dead-lettered and terminated.
	p.later(ctx, msg, streams.PollerMaxDeliveries, time.Millisecond, "olt busy", p.log)
	dlq, err := env.JS.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := dlq.GetLastMsgForSubject(ctx, streams.SubjectDLQ(streams.ConsumerPoller))
	if err != nil {
		t.Fatal(err)
	}
	_, dl, err := streams.Decode[streams.DeadLetter](raw.Data)
	if err != nil {
		t.Fatal(err)
	}
	want := "gave up after 1000 deliveries: olt busy"
	if dl.Reason != want || dl.ExecutionID != "e1" || dl.OLTID != "olt-1" || dl.StreamSeq != meta.Sequence.Stream {
		t.Fatalf("dead letter %+v, want reason %q", dl, want)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumPending == 0 && info.NumAckPending == 0 && info.NumRedelivered == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the given-up NodeDue is still pending: %+v", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.HasPrefix(dl.PayloadExcerpt, `{"id":"e1"`) {
		t.Errorf("excerpt %q", dl.PayloadExcerpt)
	}
}
