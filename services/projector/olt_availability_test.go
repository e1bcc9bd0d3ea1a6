package projector

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/replay"
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

// `facho rebuild olt_availability` gives the rows the live consumer made:
// identical after the live projection, and the same rows back after the
// live table was damaged.
func TestRebuildOLTAvailabilityEqualsLive(t *testing.T) {
	r := newRig(t)
	r.start()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	var last uint64
	for i := range 5 {
		olt := fmt.Sprintf("olt-%d", i)
		subject := streams.SubjectOLTAvailability(olt)
		last = r.publish(subject, streams.OLTAvailability{OLTID: olt, State: streams.AvailabilityAvailable, Since: t0, Source: streams.AvailabilitySourceProbe, ObservedAt: t0})
		if i%2 == 0 {
			at := t0.Add(time.Duration(i+1) * time.Minute)
			last = r.publish(subject, streams.OLTAvailability{OLTID: olt, State: streams.AvailabilityUnreachable, Previous: streams.AvailabilityAvailable,
				Since: at, LastError: "request timeout", Source: streams.AvailabilitySourceProbe, FailedChecks: 1, ObservedAt: at})
		}
	}
	r.waitCheckpoint(streams.ConsumerProjectorOLT, last)

	models, err := ReadModels(Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var model projection.ReadModel
	for _, m := range models {
		if m.Name == ReadModelOLTAvailability {
			model = m
		}
	}
	if model.Name == "" {
		t.Fatal("no olt_availability read model")
	}
	if rep, err := replay.Rebuild(ctx, r.js, r.pool, model, replay.RebuildOptions{DryRun: true, Log: zerolog.Nop()}); err != nil || !rep.Identical {
		t.Fatalf("rebuild of the live rows: identical %v, err %v, %+v", rep.Identical, err, rep.Tables)
	}
	want := r.availabilityRows()
	if len(want) != 5 {
		t.Fatalf("%d live rows, want 5", len(want))
	}
	if _, err := r.pool.Exec(ctx, `UPDATE olt_availability SET state = 'available', last_error = '' WHERE olt_id = 'olt-0'`); err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Rebuild(ctx, r.js, r.pool, model, replay.RebuildOptions{Log: zerolog.Nop()})
	if err != nil || !rep.Swapped {
		t.Fatalf("rebuild of damaged rows: swapped %v, err %v", rep.Swapped, err)
	}
	if got := r.availabilityRows(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rebuilt rows\n%v\nwant\n%v", got, want)
	}
}

func (r *rig) availabilityRows() []string {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), `SELECT olt_id, state, coalesce(last_error, ''), since, stream_seq FROM olt_availability ORDER BY olt_id`)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var id, state, lastErr string
		var since time.Time
		var seq int64
		if err := rows.Scan(&id, &state, &lastErr, &since, &seq); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %q %s %d", id, state, lastErr, since.UTC().Format(time.RFC3339), seq))
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}
