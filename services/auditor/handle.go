package auditor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// decoder turns a message into its coordinator log row and, once that row
// is committed as a new one, its file line. A message that cannot become an
// entry goes to the dead letters with the reason; an event type the
// auditor does not log is ignored.
func (a *auditor) decoder(toEntry func(streams.Envelope) (Entry, error)) projection.Decoder {
	return func(m jsrouter.Msg) (projection.Change, error) {
		env, err := streams.DecodeEnvelope(m.Data)
		var e Entry
		if err == nil {
			e, err = toEntry(env)
		}
		var skip errSkip
		switch {
		case errors.As(err, &skip):
			a.deps.Log.Debug().Str(telemetry.KeyConsumer, m.Consumer).Uint64(telemetry.KeyStreamSeq, m.Seq).
				Str("type", skip.typ).Msg("event without coordinator log")
			return projection.Change{}, nil
		case err != nil && !errors.Is(err, streams.ErrMalformed):
			return projection.Change{}, fmt.Errorf("%w: %w", streams.ErrMalformed, err)
		case err != nil:
			return projection.Change{}, err
		}
		e.SourceStream, e.SourceSeq = m.Stream, m.Seq
		e = sanitize(e)
		details, err := json.Marshal(e.Details)
		if err != nil {
			return projection.Change{}, fmt.Errorf("%w: encode details: %v", streams.ErrMalformed, err)
		}
		var inserted bool
		return projection.Change{
			Apply: func(ctx context.Context, tx pgx.Tx) error {
				var err error
				inserted, err = insert(ctx, tx, e, details)
				return err
			},
			Committed: func(context.Context) {
				// The file gets the line once: a row that was already in
				// the database was already written.
				if !inserted {
					m.SetOutcome(jsrouter.OutcomeSkipped)
					return
				}
				if err := a.file.write(e); err != nil {
					a.m.fileErrors.Inc()
					a.deps.Log.Error().Err(err).Str(telemetry.KeyConsumer, m.Consumer).Uint64(telemetry.KeyStreamSeq, m.Seq).Msg("coordinator log file")
				}
			},
		}, nil
	}
}
