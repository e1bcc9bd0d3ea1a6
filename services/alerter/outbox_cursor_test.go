package alerter

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/streams"
)

// The publisher reads the outbox after its cursor (the rows it has not
// published yet), not from the start: a row that commits behind the
// cursor (a former leader's last transaction) waits for the next read
// from the start, which comes every rescan period; a failed publish makes
// the next read start from the beginning.
func TestOutboxReadAfterItsCursor(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	_, js := env.Connect(t, natsauth.Alerter)
	db := pgtest.New(t)
	ctx := context.Background()
	a := &alerter{cfg: Config{}.WithDefaults(), deps: Deps{JS: js, DB: db}, wake: make(chan struct{}, 1), dwake: make(chan struct{}, 1)}
	m, err := newMetrics(prometheus.NewRegistry(), a)
	if err != nil {
		t.Fatal(err)
	}
	a.m = m

	add := func(seq int64, id string) {
		t.Helper()
		if _, err := db.Exec(ctx, `INSERT INTO alerter_outbox (seq, msg_id, alert_id, state, subject, payload, notify)
			VALUES ($1, $2, $2, 'firing', $3, '{}', false)`, seq, id, streams.SubjectAlert("olt-1", streams.AlertStateFiring)); err != nil {
			t.Fatal(err)
		}
	}
	unpublished := func() []string {
		t.Helper()
		rows, err := db.Query(ctx, `SELECT msg_id FROM alerter_outbox WHERE published_at IS NULL ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	stored := func() uint64 {
		t.Helper()
		s, err := js.Stream(ctx, streams.StreamAlert)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}

	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	cur := &outboxCursor{rescan: time.Minute, now: func() time.Time { return now }}
	for i, id := range []string{"a", "b", "c"} {
		add(int64(10+i), id)
	}
	if err := a.publishPending(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if got := unpublished(); len(got) != 0 || cur.after != 12 || stored() != 3 {
		t.Fatalf("after the first read: unpublished %v, cursor %d, %d stored; want none, 12, 3", got, cur.after, stored())
	}

	// A straggler behind the cursor and a row after it: the read after
	// the cursor publishes the new row only.
	add(5, "straggler")
	add(13, "d")
	now = now.Add(30 * time.Second)
	if err := a.publishPending(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if got := unpublished(); len(got) != 1 || got[0] != "straggler" || cur.after != 13 {
		t.Fatalf("read after the cursor: unpublished %v, cursor %d; want [straggler], 13", got, cur.after)
	}
	// The rescan period over, the read starts from the beginning.
	now = now.Add(31 * time.Second)
	if err := a.publishPending(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if got := unpublished(); len(got) != 0 || stored() != 5 {
		t.Fatalf("after the rescan: unpublished %v, %d stored; want none, 5", got, stored())
	}

	// A publish that fails (a subject the stream does not take) leaves
	// the cursor at the start: the next read looks at every row again.
	add(14, "bad")
	if _, err := db.Exec(ctx, `UPDATE alerter_outbox SET subject = 'nowhere.at.all' WHERE msg_id = 'bad'`); err != nil {
		t.Fatal(err)
	}
	a.cfg.Timeout = 2 * time.Second
	if err := a.publishPending(ctx, cur); err == nil {
		t.Fatal("publishing to a subject no stream takes: no error")
	}
	if cur.after != 0 {
		t.Fatalf("cursor %d after a failed publish, want 0 (read from the start)", cur.after)
	}
}
