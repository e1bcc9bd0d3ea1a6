package projector

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// decodeAvailability projects an OLT's availability (consumer
// projector-olt on FACHO_OLT) into olt_availability: one row per OLT, the
// event's stream sequence stored with it, so an older or redelivered event
// changes nothing. A malformed event (unknown state, no olt_id) goes to
// the dead letters with the reason.
func (p *projector) decodeAvailability(m jsrouter.Msg) (projection.Change, error) {
	env, err := streams.DecodeEnvelope(m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	if env.Type != streams.TypeOLTAvailability {
		return projection.Change{}, fmt.Errorf("%w: %s on %s", streams.ErrMalformed, env.Type, m.Subject)
	}
	var e streams.OLTAvailability
	if err := streams.DecodeData(env, &e); err != nil {
		return projection.Change{}, err
	}
	if err := needID(env, e.OLTID); err != nil {
		return projection.Change{}, err
	}
	if !streams.ValidAvailability(e.State) || e.Since.IsZero() {
		return projection.Change{}, fmt.Errorf("%w: olt.availability of %s: state %q since %s", streams.ErrMalformed, e.OLTID, e.State, e.Since)
	}
	at := env.Time
	if at.IsZero() {
		at = time.Now().UTC()
	}
	var observed *time.Time
	if !e.ObservedAt.IsZero() {
		observed = &e.ObservedAt
	}
	seq := m.Seq
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO olt_availability (olt_id, state, previous, since, last_error, source, execution_id,
				failed_checks, observed_at, updated_at, stream_seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (olt_id) DO UPDATE SET state = EXCLUDED.state, previous = EXCLUDED.previous, since = EXCLUDED.since,
				last_error = EXCLUDED.last_error, source = EXCLUDED.source, execution_id = EXCLUDED.execution_id,
				failed_checks = EXCLUDED.failed_checks, observed_at = EXCLUDED.observed_at, updated_at = EXCLUDED.updated_at,
				stream_seq = EXCLUDED.stream_seq
			WHERE olt_availability.stream_seq < EXCLUDED.stream_seq`,
			e.OLTID, e.State, e.Previous, e.Since, pgText(e.LastError), e.Source, e.ExecutionID, e.FailedChecks, observed, at, int64(seq))
		return wrap(err, "upsert availability of olt %s", e.OLTID)
	}}, nil
}
