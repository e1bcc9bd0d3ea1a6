package projector

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"

	"github.com/facho-olt/facho/streams"
)

// The last availability of each OLT is in olt_availability; a redelivered
// or older event changes nothing; a malformed one is dead-lettered.
func TestOLTAvailabilityProjection(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	ev := func(state, prev string, since time.Time, errText string) streams.OLTAvailability {
		return streams.OLTAvailability{OLTID: "olt-1", State: state, Previous: prev, Since: since, LastError: errText,
			Source: streams.AvailabilitySourceProbe, FailedChecks: 1, ObservedAt: since}
	}
	subject := streams.SubjectOLTAvailability("olt-1")
	r.publish(subject, ev(streams.AvailabilityAvailable, "", t0, ""))
	r.publish(subject, ev(streams.AvailabilityUnreachable, streams.AvailabilityAvailable, t0.Add(time.Minute), "request timeout"))
	seq := r.publish(subject, ev(streams.AvailabilityUnavailable, streams.AvailabilityUnreachable, t0.Add(time.Minute), "request timeout"))
	r.waitCheckpoint(streams.ConsumerProjectorOLT, seq)

	row := func() (state, lastErr string, since time.Time, stored int64) {
		t.Helper()
		err := r.pool.QueryRow(context.Background(), `SELECT state, last_error, since, stream_seq FROM olt_availability WHERE olt_id = 'olt-1'`).
			Scan(&state, &lastErr, &since, &stored)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	state, lastErr, since, stored := row()
	if state != streams.AvailabilityUnavailable || lastErr != "request timeout" || !since.Equal(t0.Add(time.Minute)) || uint64(stored) != seq {
		t.Fatalf("row %s %q %s %d", state, lastErr, since, stored)
	}

	// Replaying an older event (as a redelivery would) changes nothing.
	p := &projector{}
	b, _ := streams.Encode("test", t0, ev(streams.AvailabilityAvailable, "", t0, ""))
	msg := jsrouter.Msg{Stream: streams.StreamOLT, Subject: subject, Seq: seq - 2, Data: b}
	ch, err := p.decodeAvailability(msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error { return ch.Apply(context.Background(), tx) }); err != nil {
		t.Fatal(err)
	}
	if state, _, _, stored := row(); state != streams.AvailabilityUnavailable || uint64(stored) != seq {
		t.Fatalf("an older event replaced the row: %s %d", state, stored)
	}

	// A state that is none of the three is refused (dead letter), the row stays.
	bad := r.publish(subject, ev("sleeping", streams.AvailabilityUnavailable, t0.Add(2*time.Minute), ""))
	r.waitCheckpoint(streams.ConsumerProjectorOLT, bad)
	if state, _, _, _ := row(); state != streams.AvailabilityUnavailable {
		t.Fatalf("row %s after a malformed event", state)
	}
	if n := r.streamMsgs(streams.StreamDLQ); n != 1 {
		t.Fatalf("%d dead letters, want 1", n)
	}
}
