package auditor

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// Read model names for `facho rebuild`.
const (
	ReadModelQuotas     = "quotas"
	ReadModelViolations = "quota_violations"
)

// quotaRebuildBatch is the run a rebuild applies per transaction from the
// schedule and execution sources: the batch form recomputes every tracker
// a run touched once per run (a statement over the hour's executions), so
// a run 25 times the default recomputes a 25th as often (on 150,000
// events of 10 trackers: 60 recomputes instead of 150 at 10,000, the
// rebuild 62k events/s to 69k/s). A rebuild holds a few runs in flight
// (decoded ahead: about 6), so this also bounds its memory (~100 MB of
// messages at 700 B).
const quotaRebuildBatch = 25000

// quotaReadModels are the quotas' rebuildable read models, with the
// decoders Run uses:
//
//   - quotas: quota_tracker, quota_executions, quota_interruptions,
//     quota_watermarks and failure_streaks from NodeDue, the execution,
//     OLT configuration and audit events. The hourly check's verdicts
//     (status after the hour, checked_at) come from a timer, not from the
//     streams: they are not compared, and a rebuilt hour is closed again
//     by the check (its violation, already recorded, is not notified
//     twice). Notifications the decoders would write (repeated failures,
//     OLT_DISABLED) go to scratch copies: a rebuild sends nothing.
//   - quota_violations: from the quota violation notifications of
//     FACHO_NOTIFY; notified and notified_at (webhook deliveries) are not
//     compared.
func (a *auditor) quotaReadModels() []projection.ReadModel {
	var quotas []projection.Source
	var violations projection.Source
	for _, c := range a.quotaConsumers() {
		src := projection.Source{Stream: c.stream, Consumer: c.name, Decode: projection.SubjectChecked(c.decode)}
		switch c.name {
		case streams.ConsumerAuditorSchedule:
			b := a.scheduleBatch(c.name) // quota_batch.go
			src.ApplyBatch, src.DecodeBatch, src.ApplyDecoded = b.whole, b.decode, b.apply
			src.Batch = quotaRebuildBatch
			quotas = append(quotas, src)
		case streams.ConsumerAuditorQuotaExec:
			b := a.execQuotaBatch(c.name)
			src.ApplyBatch, src.DecodeBatch, src.ApplyDecoded = b.whole, b.decode, b.apply
			src.Batch = quotaRebuildBatch
			quotas = append(quotas, src)
		case streams.ConsumerAuditorNotify:
			violations = src
		case streams.ConsumerAuditorNotifyLog:
			// In the coordinator_logs read model.
		default:
			quotas = append(quotas, src)
		}
	}
	retention := a.cfg.Quota.Retention
	return []projection.ReadModel{
		{
			Name:        ReadModelQuotas,
			Description: "hourly quota trackers (seed 003 quota_tracker), from NodeDue, execution, OLT and audit events",
			Sources:     quotas,
			Tables: []projection.Table{
				{Name: "quota_tracker", Key: []string{"olt_id", "task_type", "period_start"},
					Ignore: []string{"id", "status", "checked_at", "created_at", "updated_at"}, Generated: []string{"id"}},
				{Name: "quota_executions", Key: []string{"execution_id"}, Ignore: []string{"updated_at"}},
				{Name: "quota_interruptions", Key: []string{"olt_id", "period_start"}},
				{Name: "quota_watermarks", Key: []string{"consumer"}},
				{Name: "failure_streaks", Key: []string{"olt_id"}},
			},
			Scratch: []string{"notifications", "webhook_deliveries"},
			Prune: func(ctx context.Context, tx pgx.Tx) error {
				before := a.deps.Now().Add(-retention)
				for _, q := range []string{
					`DELETE FROM quota_executions WHERE coalesce(period_start, updated_at) < $1`,
					`DELETE FROM quota_tracker WHERE period_start < $1`,
					`DELETE FROM quota_interruptions WHERE period_start < $1`,
				} {
					if _, err := tx.Exec(ctx, q, before); err != nil {
						return fmt.Errorf("prune quotas: %w", err)
					}
				}
				return nil
			},
		},
		{
			Name:        ReadModelViolations,
			Description: "quota violations (seed 003 quota_violations), from the quota_violation notifications",
			Sources:     []projection.Source{violations},
			Tables: []projection.Table{
				{Name: "quota_violations", Key: []string{"olt_id", "task_type", "period_start"},
					Ignore: []string{"id", "notified", "notified_at"}, Generated: []string{"id"}},
			},
		},
	}
}
