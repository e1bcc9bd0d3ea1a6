package auditor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// ReadModelCoordinatorLogs is the coordinator log's name for `facho rebuild`.
const ReadModelCoordinatorLogs = "coordinator_logs"

// ReadModels registers the auditor's rebuildable read models
// (pkg/replay.Rebuild): the quotas and violations (quota_readmodels.go),
// and coordinator_logs from its three live consumers, with
// the decoders Run uses. A rebuild runs Apply only, never Committed: the
// rotating file gets no line. Rows older than cfg.Retention are pruned from
// the rebuild, as the daily cleanup prunes them live; the id is a sequence,
// so rows are compared by (source_stream, source_seq) and a swap takes new
// ids from the live sequence.
func ReadModels(cfg Config, log zerolog.Logger, now func() time.Time) ([]projection.ReadModel, error) {
	cfg = cfg.WithDefaults()
	if now == nil {
		now = time.Now
	}
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	a := &auditor{cfg: cfg, deps: Deps{Log: log, Now: now}, m: m, file: &fileLog{w: io.Discard}}
	return append([]projection.ReadModel{{
		Name:        ReadModelCoordinatorLogs,
		Description: "coordinator logs, from execution lifecycle and audit events",
		Sources: []projection.Source{
			// Inserts only, one row per message: any partition will do.
			{Stream: streams.StreamExec, Consumer: streams.ConsumerAuditorExec, Decode: projection.SubjectChecked(a.decoder(fromExec)), Partition: projection.SubjectToken(2),
				ApplyBatch: a.logBatch(fromExec, fromExecOn), Batch: logBatchSize},
			{Stream: streams.StreamAudit, Consumer: streams.ConsumerAuditorAudit, Decode: projection.SubjectChecked(a.decoder(fromAudit)), Partition: projection.SubjectToken(2),
				ApplyBatch: a.logBatch(fromAudit, nil), Batch: logBatchSize},
			// QUOTA_VIOLATION rows, from the quota violation notifications.
			{Stream: streams.StreamNotify, Consumer: streams.ConsumerAuditorNotifyLog, Decode: projection.SubjectChecked(a.violationLogDecoder)},
		},
		Tables: []projection.Table{{
			Name: "coordinator_logs", Key: []string{"source_stream", "source_seq"},
			Ignore: []string{"id"}, Generated: []string{"id"},
			// Inserted only: the by-OLT, by-type and by-level indexes
			// serve the API.
			ShadowUniqueOnly: true,
		}},
		// Events older than the retention make no row: a stream that lost
		// only those still holds the whole model.
		Window: cfg.Retention,
		Prune: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `DELETE FROM coordinator_logs WHERE "timestamp" < $1`, now().Add(-cfg.Retention))
			return err
		},
	}}, a.quotaReadModels()...), nil
}

// logBatchSize is how many messages one rebuild transaction of
// coordinator logs copies: each transaction costs a few statements
// besides its COPY, and with 1,000 they were a tenth of Postgres's time.
const logBatchSize = 4000

// logBatch is the set-based form of SubjectChecked(a.decoder(toEntry))
// for a rebuild (projection.Source.ApplyBatch): the same entries, ignored
// and malformed messages, inserted with one COPY (copyMany). fast, when
// set, makes the entry of a message in one pass with its subject checked
// (false: the general path decides).
func (a *auditor) logBatch(toEntry func(streams.Envelope) (Entry, error), fast func(d *projection.Decoders, subject string, data []byte) (Entry, bool)) projection.BatchApplier {
	return func(ctx context.Context, tx pgx.Tx, msgs []jsrouter.Msg) (projection.BatchResult, error) {
		var res projection.BatchResult
		entries := make([]Entry, 0, len(msgs))
		details := make([][]byte, 0, len(msgs))
		var buf []byte // the details of the run, one after the other
		dec := projection.NewDecoders()
		add := func(m jsrouter.Msg, e Entry) {
			e.SourceStream, e.SourceSeq = m.Stream, m.Seq
			e = sanitize(e)
			start := len(buf)
			var err error
			if buf, err = appendDetails(buf, e.Details); err != nil {
				buf = buf[:start]
				res.Malformed++
				return
			}
			entries, details = append(entries, e), append(details, buf[start:len(buf):len(buf)])
		}
		for _, m := range msgs {
			if fast != nil {
				if e, ok := fast(dec, m.Subject, m.Data); ok {
					add(m, e)
					continue
				}
			}
			env, err := streams.DecodeEnvelope(m.Data)
			if err != nil {
				res.Malformed++ // DecodeEnvelope's errors are all ErrMalformed
				continue
			}
			// The event is decoded once: toEntry first, then the subject
			// is checked against the entry's olt_id (the only field a
			// subject of these streams names) instead of parsing the data
			// again. The outcome is SubjectChecked's: an event on a
			// subject not its own is malformed whatever toEntry says.
			e, err := toEntry(env)
			var skip errSkip
			skipped := errors.As(err, &skip)
			switch {
			case skipped:
				err = streams.CheckSubject(m.Subject, env)
			case err == nil:
				err = streams.CheckSubjectWith(m.Subject, env, func(name string) (string, bool) { return e.OLTID, name == "olt_id" })
			default:
				res.Malformed++
				continue
			}
			if err != nil {
				if !errors.Is(err, streams.ErrMalformed) {
					return res, fmt.Errorf("decode %s seq %d: %w", m.Stream, m.Seq, err)
				}
				res.Malformed++
				continue
			}
			if skipped {
				res.Ignored++
				continue
			}
			add(m, e)
		}
		res.Applied = len(entries)
		return res, copyMany(ctx, tx, entries, details)
	}
}
