package projector

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// recordGetResult stores what a get read and could not read with its
// execution (executions.onus, failed_onus, failed_varbinds, onu_failures):
// per-ONU failures are never dropped silently. Nothing for other events.
func recordGetResult(ctx context.Context, tx pgx.Tx, ev execEvent) error {
	r := ev.GetResult
	if r == nil {
		return nil
	}
	var failures []byte
	if len(r.Failures) > 0 {
		b, err := json.Marshal(r.Failures)
		if err != nil {
			return fmt.Errorf("encode onu failures of execution %s: %w", ev.ID, err)
		}
		failures = b
	}
	_, err := tx.Exec(ctx, `UPDATE executions SET onus = $2, failed_onus = $3, failed_varbinds = $4, onu_failures = $5 WHERE id = $1`,
		ev.ID, r.ONUs, r.FailedONUs, r.FailedVarbinds, failures)
	if err != nil {
		return fmt.Errorf("record onu failures of execution %s: %w", ev.ID, err)
	}
	return nil
}
