package projector

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// Read model names, as `facho rebuild` takes them.
const (
	ReadModelONUData         = "onu_data"
	ReadModelExecutions      = "executions"
	ReadModelOLTAvailability = "olt_availability"
	ReadModelOLTHealth       = "olt_health"
)

// ReadModels registers the projector's rebuildable read models
// (pkg/replay.Rebuild): their live consumers, with the decoders Run gives
// those consumers, and their tables. The decoders are built without
// JetStream and with a private metrics registry: a rebuild runs Apply
// only (never Committed), so nothing is published from a rebuild and the
// live projector's metrics do not move. the ONU changes a rebuild recomputes
// are not published (Apply returns them and the rebuild drops them).
func ReadModels(cfg Config, log zerolog.Logger) ([]projection.ReadModel, error) {
	cfg = cfg.WithDefaults()
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	p := &projector{cfg: cfg, log: log, metrics: m}
	return []projection.ReadModel{
		{
			Name:        ReadModelONUData,
			Description: "current state of every ONU, from the raw varbinds and the ONU status traps",
			Sources: []projection.Source{
				// The traps set an ONU's status between polls (traps.go).
				// First: the fold holds them and applies each before the
				// first batch of its OLT the stream stored after it, as
				// the live consumers met them (onudata_fold.go).
				{Stream: streams.StreamTrap, Consumer: streams.ConsumerProjectorTraps, Decode: projection.SubjectChecked(p.decodeTrap),
					Partition: projection.SubjectToken(2)}, // facho.trap.<olt>
				{Stream: streams.StreamVarbinds, Consumer: streams.ConsumerProjectorVarbinds, Decode: projection.SubjectChecked(p.decodeVarbinds),
					Partition: projection.SubjectToken(2), ApplyBatch: p.applyVarbindBatch, // facho.varbinds.<olt>: rows of that OLT
					// Runs of 100 batches (a walk's are tens of kilobytes
					// each): the fold decodes a few runs ahead.
					Batch: 100},
			},
			Tables: []projection.Table{
				{Name: "onu_data", Key: []string{"olt_id", "pon_index", "onu_id"}},
				{Name: "execution_placement", Key: []string{"olt_id", "execution_id"}},
				// Inserted only, each row once (its by-ONU and by-time
				// indexes serve the API and the live pruner, its key a
				// replay into a table that kept its rows; the shadow is
				// pruned once, compared by hash joins).
				{Name: "onu_history", Key: []string{"olt_id", "pon_index", "onu_id", "stream_seq", "field"}, ShadowUniqueOnly: true, ShadowNoIndex: true},
				// Its hourly rollups, written with it.
				{Name: "onu_history_hourly", Key: []string{"olt_id", "pon_index", "onu_id", "field", "hour"}},
				// And their PONs' rollups, written with them.
				{Name: "pon_history_hourly", Key: []string{"olt_id", "pon_index", "field", "hour"}},
				{Name: "onu_walks", Key: []string{"olt_id"}},
			},
			// onu_walk_seen: a walk's records in progress, one row per
			// transaction, so how many rows depends on how the live
			// projector grouped its batches; the rebuild fills a copy of
			// its own for its end-of-walk checks, and the live one, at
			// the live checkpoint the shadow catches up to, stays.
			// traps: the trap consumer's own table, written by the traps'
			// decoder (not part of this model).
			Scratch: []string{"onu_event_outbox", "pending_events", "onu_walk_seen", "traps"},
			// The shadow's onu_history and its rollups are pruned as the
			// live maintenance prunes them (cfg.HistoryRetention; 0: nothing). No Window: onu_data is
			// every ONU's latest state, which a stream that lost old
			// messages lacks for ONUs not polled since.
			Prune: pruneHistoryShadow(cfg.HistoryRetention, cfg.now),
			// The first pass folded in memory and copied in
			// (onudata_fold.go).
			Fold: p.newONUFold,
		},
		{
			Name:        ReadModelExecutions,
			Description: "executions, their attempts and dead-lettered batches, from NodeDue, lifecycle and dead-letter events",
			Sources: []projection.Source{
				{Stream: streams.StreamSchedule, Consumer: streams.ConsumerProjectorSchedule, Decode: projection.SubjectChecked(p.decodeNodeDue),
					Partition: projection.SubjectToken(3), ApplyBatch: p.applyNodeDueBatch}, // facho.schedule.due.<olt>
				{Stream: streams.StreamExec, Consumer: streams.ConsumerProjectorExec, Decode: projection.SubjectChecked(p.decodeExec),
					Partition: projection.SubjectToken(2), ApplyBatch: p.applyExecBatch}, // facho.exec.<olt>.<phase>: an execution is of one OLT
				{Stream: streams.StreamDLQ, Consumer: streams.ConsumerProjectorDLQ, Decode: projection.SubjectChecked(p.decodeDeadLetter)},
			},
			Tables: []projection.Table{
				// updated_at is the projection's clock, not the event's.
				// Looked up by id alone (the dead letters by execution_id:
				// that table keeps its indexes).
				{Name: "executions", Key: []string{"id"}, Ignore: []string{"updated_at"}, ShadowUniqueOnly: true},
				{Name: "execution_attempts", Key: []string{"execution_id", "attempt"}, Ignore: []string{"updated_at"}},
				{Name: "execution_dead_letters", Key: []string{"stream", "stream_seq"}},
			},
			// The schedule and lifecycle sources folded in memory and
			// copied in (executions_fold.go).
			Fold: p.newExecFold,
		},
		{
			Name:        ReadModelOLTAvailability,
			Description: "each OLT's availability (available, unreachable, unavailable), from the availability events",
			Sources: []projection.Source{
				{Stream: streams.StreamOLT, Consumer: streams.ConsumerProjectorOLT, Decode: projection.SubjectChecked(p.decodeAvailability)},
			},
			// updated_at is the event's time: the same live and rebuilt.
			Tables: []projection.Table{{Name: "olt_availability", Key: []string{"olt_id"}}},
		},
		p.healthReadModel(), // health.go
	}, nil
}
