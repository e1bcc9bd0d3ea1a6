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
// a run touched once per run (a few statements over the hour's
// executions), so a run ten times the default recomputes a tenth as often.
//
// Both sources are partitioned by OLT (the subject's OLT token): every
// row a run of them writes is of its OLT (the quota execution, the OLT's
// trackers and failure streak) but the consumer's watermark, which only
// moves forward (greatest): a rebuild applies the OLTs on several
// transactions at once, each OLT's events in stream order, and a run
// recomputes only its own OLTs' trackers. As for the executions read
// model, an execution's events are taken to name one OLT. On 150,000
// events of 10 OLTs: 66k events/s against 56k applying one run of all
// OLTs at a time (runs of 25,000), in the same run of the harness.
const quotaRebuildBatch = 10000

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
			src.ApplyBatch = a.scheduleBatch(c.name) // quota_batch.go
			src.Batch = quotaRebuildBatch
			src.Partition = projection.SubjectToken(3) // facho.schedule.due.<olt>[.<class>]
			quotas = append(quotas, src)
		case streams.ConsumerAuditorQuotaExec:
			src.ApplyBatch = a.execQuotaBatch(c.name)
			src.Batch = quotaRebuildBatch
			src.Partition = projection.SubjectToken(2) // facho.exec.<olt>.<phase>
			// First: a rebuild applies its sources one after the other, and
			// the trackers do not depend on the order (recompute), but the
			// work does. Before their NodeDue, an execution's events touch
			// no tracker (no hour yet), so the executions' pass recomputes
			// none and the NodeDue pass recomputes each touched hour once
			// per run; the other way round both passes recompute them,
			// each over the hour's executions. On 150,000 events of 10
			// OLTs: Postgres CPU 0.86-1.04 s -> 0.74-0.87 s per rebuild. A
			// row keeps the olt_id and task_type of the first event of its
			// execution (nodeDueSQL): the execution event's now, the
			// NodeDue's before; they are the same ids unless a publisher
			// is wrong.
			quotas = append([]projection.Source{src}, quotas...)
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
			Description: "hourly quota trackers (quota_tracker), from NodeDue, execution, OLT and audit events",
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
			Description: "quota violations (quota_violations), from the quota_violation notifications",
			Sources:     []projection.Source{violations},
			Tables: []projection.Table{
				{Name: "quota_violations", Key: []string{"olt_id", "task_type", "period_start"},
					Ignore: []string{"id", "notified", "notified_at"}, Generated: []string{"id"}},
			},
		},
	}
}
