package projector

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/streams"
)

type silenceRow struct {
	OLTID, Pon, Rule *string
	StartsAt, EndsAt time.Time
	CreatedBy        string
	Comment          string
	DeletedAt        *time.Time
	Seq              int64
}

func (r *rig) silence(id string) (silenceRow, bool) {
	r.t.Helper()
	var s silenceRow
	err := r.pool.QueryRow(context.Background(), `SELECT olt_id, pon, rule, starts_at, ends_at, created_by, comment, deleted_at, stream_seq
		FROM alert_silences WHERE id = $1`, id).Scan(&s.OLTID, &s.Pon, &s.Rule, &s.StartsAt, &s.EndsAt, &s.CreatedBy, &s.Comment, &s.DeletedAt, &s.Seq)
	if err == pgx.ErrNoRows {
		return s, false
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return s, true
}

// The configuration consumer projects silence.upserted and .deleted into
// alert_silences, with the stream sequence; a restart replays nothing
// twice, and the projection does not dead-letter them.
func TestSilenceProjection(t *testing.T) {
	r := newRig(t)
	stop := r.start()
	start := time.Now().UTC().Truncate(time.Second)
	up := streams.SilenceUpserted{ID: "s1", OLTID: "olt-1", Pon: "0/1/3", StartsAt: start, EndsAt: start.Add(2 * time.Hour),
		CreatedBy: "ana", Comment: "fiber repair", CreatedAt: start}
	seq := r.publish(streams.SubjectSilence("s1"), up)
	r.publish(streams.SubjectSilence("s2"), streams.SilenceUpserted{ID: "s2", Rule: streams.RuleONUDown, StartsAt: start, EndsAt: start.Add(time.Hour), CreatedBy: "ana", CreatedAt: start})
	last := r.publish(streams.SubjectSilence("s2"), streams.SilenceDeleted{ID: "s2"})
	r.waitCheckpoint(streams.ConsumerProjectorConfig, last)

	s1, ok := r.silence("s1")
	if !ok || s1.OLTID == nil || *s1.OLTID != "olt-1" || s1.Pon == nil || *s1.Pon != "0/1/3" || s1.Rule != nil ||
		!s1.StartsAt.Equal(start) || !s1.EndsAt.Equal(start.Add(2*time.Hour)) || s1.CreatedBy != "ana" || s1.Comment != "fiber repair" ||
		s1.DeletedAt != nil || s1.Seq != int64(seq) {
		t.Errorf("s1 = %+v (found %v), want the silence at seq %d", s1, ok, seq)
	}
	s2, ok := r.silence("s2")
	if !ok || s2.DeletedAt == nil || s2.Rule == nil || *s2.Rule != streams.RuleONUDown || s2.OLTID != nil || s2.Seq != int64(last) {
		t.Errorf("s2 = %+v, want deleted at seq %d", s2, last)
	}
	// Nothing dead-lettered.
	if n := r.streamMsgs(streams.StreamDLQ); n != 0 {
		t.Errorf("%d dead letters, want 0", n)
	}
	// A restart: the checkpoint holds, the rows are the same.
	stop()
	r.startWith(Config{})
	seq3 := r.publish(streams.SubjectSilence("s3"), streams.SilenceUpserted{ID: "s3", OLTID: "olt-2", StartsAt: start, EndsAt: start.Add(time.Hour), CreatedBy: "bo", CreatedAt: start})
	r.waitCheckpoint(streams.ConsumerProjectorConfig, seq3)
	if again, _ := r.silence("s1"); again.Seq != s1.Seq || again.DeletedAt != nil {
		t.Errorf("s1 after a restart = %+v", again)
	}
	var n int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM alert_silences`).Scan(&n); err != nil || n != 3 {
		t.Errorf("%d silences (%v), want 3", n, err)
	}
}

// Applying an older silence event after a newer one (a redelivery after
// the checkpoint moved, a replay) changes nothing: the row keeps the
// newest stream sequence.
func TestSilenceProjectionKeepsNewest(t *testing.T) {
	r := newRig(t)
	p := &projector{log: zerolog.Nop()}
	start := time.Now().UTC().Truncate(time.Second)
	apply := func(seq uint64, ev streams.Event) {
		t.Helper()
		b, err := streams.Encode("test", time.Now(), ev)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := p.decodeConfig(jsrouter.Msg{Subject: streams.SubjectSilence("s1"), Seq: seq, Data: b})
		if err != nil {
			t.Fatal(err)
		}
		if err := pgx.BeginFunc(context.Background(), r.pool, func(tx pgx.Tx) error { return ch.Apply(context.Background(), tx) }); err != nil {
			t.Fatal(err)
		}
	}
	up := streams.SilenceUpserted{ID: "s1", Rule: streams.RulePONOutage, StartsAt: start, EndsAt: start.Add(time.Hour), CreatedBy: "ana", CreatedAt: start}
	apply(5, up)
	apply(7, streams.SilenceDeleted{ID: "s1"})
	apply(5, up) // redelivered: must not revive it
	apply(6, streams.SilenceDeleted{ID: "s1"})
	s, _ := r.silence("s1")
	if s.DeletedAt == nil || s.Seq != 7 {
		t.Errorf("s1 = %+v, want deleted at seq 7", s)
	}
	// A malformed silence is refused (dead-lettered by the handler).
	b, _ := streams.Encode("test", time.Now(), streams.SilenceUpserted{ID: "s9"})
	if _, err := p.decodeConfig(jsrouter.Msg{Subject: streams.SubjectSilence("s9"), Seq: 9, Data: b}); err == nil {
		t.Error("silence without starts_at/ends_at accepted")
	}
}
