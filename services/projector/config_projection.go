package projector

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/configrules"
	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// decodeConfig turns a configuration event into its upsert. The sealed SNMP
// community of OLTUpserted is dropped here: it never reaches Postgres.
func (p *projector) decodeConfig(m jsrouter.Msg) (projection.Change, error) {
	env, err := streams.DecodeEnvelope(m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	if env.Version != 1 {
		return projection.Change{}, fmt.Errorf("%w: %s version %d not supported", streams.ErrMalformed, env.Type, env.Version)
	}
	at := env.Time
	if at.IsZero() {
		at = time.Now().UTC()
	}
	switch env.Type {
	case streams.TypeBrandUpserted:
		var e streams.BrandUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		if err := p.refuseBroken(env, e.ID, configrules.Brand(e)); err != nil {
			return projection.Change{}, err
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO brands (id, name, description, index_scheme, updated_at) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, description = EXCLUDED.description,
				index_scheme = EXCLUDED.index_scheme, updated_at = EXCLUDED.updated_at`,
				e.ID, e.Name, e.Description, e.IndexScheme, at)
			return wrap(err, "upsert brand %s", e.ID)
		}}, nil
	case streams.TypeOIDUpserted:
		var e streams.OIDUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		if err := p.refuseBroken(env, e.ID, configrules.OIDEvent(e)); err != nil {
			return projection.Change{}, err
		}
		dec, err := json.Marshal(e.Decoder)
		if err != nil {
			return projection.Change{}, fmt.Errorf("%w: oid %s decoder: %v", streams.ErrMalformed, e.ID, err)
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO oids (id, brand_id, name, oid, field, decoder, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
				ON CONFLICT (id) DO UPDATE SET brand_id = EXCLUDED.brand_id, name = EXCLUDED.name, oid = EXCLUDED.oid,
				field = EXCLUDED.field, decoder = EXCLUDED.decoder, updated_at = EXCLUDED.updated_at`,
				e.ID, e.BrandID, e.Name, e.OID, e.Field, string(dec), at)
			return wrap(err, "upsert oid %s", e.ID)
		}}, nil
	case streams.TypeBrandDeleted, streams.TypeOIDDeleted:
		var e struct {
			ID string `json:"id"`
		}
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		table := "brands"
		if env.Type == streams.TypeOIDDeleted {
			table = "oids"
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE id = $1`, e.ID)
			return wrap(err, "delete %s %s", env.Type, e.ID)
		}}, nil
	case streams.TypeOLTUpserted:
		var e streams.OLTUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		if err := p.refuseBroken(env, e.ID, configrules.OLT(e)); err != nil {
			return projection.Change{}, err
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			// An OLT event ends an auto-disable: the OLT is as it says.
			_, err := tx.Exec(ctx, `INSERT INTO olts (id, name, ip, port, brand_id, enabled, description, deleted, updated_at, disabled_reason, disabled_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, false, $8, '', NULL)
				ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, ip = EXCLUDED.ip, port = EXCLUDED.port,
				brand_id = EXCLUDED.brand_id, enabled = EXCLUDED.enabled, description = EXCLUDED.description,
				deleted = false, updated_at = EXCLUDED.updated_at, disabled_reason = '', disabled_at = NULL`,
				e.ID, e.Name, e.IP, e.Port, e.BrandID, e.Enabled, e.Description, at)
			return wrap(err, "upsert olt %s", e.ID)
		}}, nil
	case streams.TypeOLTDeleted:
		var e streams.OLTDeleted
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE olts SET deleted = true, enabled = false, updated_at = $2 WHERE id = $1`, e.ID, at)
			return wrap(err, "delete olt %s", e.ID)
		}}, nil
	case streams.TypeJobUpserted:
		var e streams.JobUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		if err := p.refuseBroken(env, e.ID, configrules.Job(e)); err != nil {
			return projection.Change{}, err
		}
		oidIDs := e.OIDIDs
		if oidIDs == nil {
			oidIDs = []string{}
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO snmp_jobs (id, name, brand_id, kind, oid_ids, interval_seconds, max_retries,
				retry_delay_seconds, timeout_seconds, priority, enabled, deleted, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, false, $12)
				ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, brand_id = EXCLUDED.brand_id, kind = EXCLUDED.kind,
				oid_ids = EXCLUDED.oid_ids, interval_seconds = EXCLUDED.interval_seconds, max_retries = EXCLUDED.max_retries,
				retry_delay_seconds = EXCLUDED.retry_delay_seconds, timeout_seconds = EXCLUDED.timeout_seconds,
				priority = EXCLUDED.priority, enabled = EXCLUDED.enabled, deleted = false, updated_at = EXCLUDED.updated_at`,
				e.ID, e.Name, e.BrandID, e.Kind, oidIDs, e.IntervalSeconds, e.MaxRetries, e.RetryDelaySeconds,
				e.TimeoutSeconds, e.Priority, e.Enabled, at)
			return wrap(err, "upsert job %s", e.ID)
		}}, nil
	case streams.TypeJobDeleted:
		var e streams.JobDeleted
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE snmp_jobs SET deleted = true, enabled = false, updated_at = $2 WHERE id = $1`, e.ID, at)
			return wrap(err, "delete job %s", e.ID)
		}}, nil
	case streams.TypeJobOLTAssigned:
		var e streams.JobOLTAssigned
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needIDs(env, e.JobID, e.OLTID); err != nil {
			return projection.Change{}, err
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO snmp_job_olts (job_id, olt_id, enabled, deleted, updated_at) VALUES ($1, $2, $3, false, $4)
				ON CONFLICT (job_id, olt_id) DO UPDATE SET enabled = EXCLUDED.enabled, deleted = false, updated_at = EXCLUDED.updated_at`,
				e.JobID, e.OLTID, e.Enabled, at)
			return wrap(err, "assign job %s to olt %s", e.JobID, e.OLTID)
		}}, nil
	case streams.TypeJobOLTUnassigned:
		var e streams.JobOLTUnassigned
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needIDs(env, e.JobID, e.OLTID); err != nil {
			return projection.Change{}, err
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE snmp_job_olts SET deleted = true, enabled = false, updated_at = $3 WHERE job_id = $1 AND olt_id = $2`,
				e.JobID, e.OLTID, at)
			return wrap(err, "unassign job %s from olt %s", e.JobID, e.OLTID)
		}}, nil
	case streams.TypeOLTAutoDisabled:
		var e streams.OLTAutoDisabled
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE olts SET enabled = false, disabled_reason = $2, disabled_at = $3, updated_at = $4 WHERE id = $1`,
				e.ID, pgText(e.Reason), e.DisabledAt, at)
			return wrap(err, "auto-disable olt %s", e.ID)
		}}, nil
	case streams.TypeOLTAutoEnabled:
		var e streams.OLTAutoEnabled
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			// Only an auto-disabled OLT (disabled_at set): an OLT a person
			// disabled since (olt.upserted clears disabled_at) stays so.
			_, err := tx.Exec(ctx, `UPDATE olts SET enabled = true, disabled_reason = '', disabled_at = NULL, updated_at = $2
				WHERE id = $1 AND disabled_at IS NOT NULL`, e.ID, at)
			return wrap(err, "auto-enable olt %s", e.ID)
		}}, nil
	case streams.TypeWorkflowUpserted:
		var e streams.WorkflowUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needIDs(env, e.ID, e.OLTID, e.MasterJobID); err != nil {
			return projection.Change{}, err
		}
		chain := e.ChainJobIDs
		if chain == nil {
			chain = []string{}
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO workflows (id, name, olt_id, master_job_id, chain_job_ids, stop_on_failure, enabled, deleted, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, false, $8)
				ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, olt_id = EXCLUDED.olt_id, master_job_id = EXCLUDED.master_job_id,
				chain_job_ids = EXCLUDED.chain_job_ids, stop_on_failure = EXCLUDED.stop_on_failure, enabled = EXCLUDED.enabled,
				deleted = false, updated_at = EXCLUDED.updated_at`,
				e.ID, pgText(e.Name), e.OLTID, e.MasterJobID, chain, e.StopOnFailure, e.Enabled, at)
			return wrap(err, "upsert workflow %s", e.ID)
		}}, nil
	case streams.TypeWorkflowDeleted:
		var e streams.WorkflowDeleted
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE workflows SET deleted = true, enabled = false, updated_at = $2 WHERE id = $1`, e.ID, at)
			return wrap(err, "delete workflow %s", e.ID)
		}}, nil
	case streams.TypeSilenceUpserted:
		var e streams.SilenceUpserted
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		if e.StartsAt.IsZero() || e.EndsAt.IsZero() {
			return projection.Change{}, fmt.Errorf("%w: silence %s without starts_at or ends_at", streams.ErrMalformed, e.ID)
		}
		created := e.CreatedAt
		if created.IsZero() {
			created = at
		}
		seq := m.Seq
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			// stream_seq guards the row: an older event (a redelivery, a
			// replay from before) changes nothing.
			_, err := tx.Exec(ctx, `INSERT INTO alert_silences (id, olt_id, pon, rule, starts_at, ends_at, created_by, comment, created_at, deleted_at, stream_seq)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, $10)
				ON CONFLICT (id) DO UPDATE SET olt_id = EXCLUDED.olt_id, pon = EXCLUDED.pon, rule = EXCLUDED.rule,
				starts_at = EXCLUDED.starts_at, ends_at = EXCLUDED.ends_at, created_by = EXCLUDED.created_by, comment = EXCLUDED.comment,
				created_at = EXCLUDED.created_at, deleted_at = NULL, stream_seq = EXCLUDED.stream_seq
				WHERE alert_silences.stream_seq < EXCLUDED.stream_seq`,
				e.ID, nullText(e.OLTID), nullText(e.Pon), nullText(e.Rule), e.StartsAt, e.EndsAt, pgText(e.CreatedBy), pgText(e.Comment), created, int64(seq))
			return wrap(err, "upsert silence %s", e.ID)
		}}, nil
	case streams.TypeSilenceDeleted:
		var e streams.SilenceDeleted
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if err := needID(env, e.ID); err != nil {
			return projection.Change{}, err
		}
		seq := m.Seq
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE alert_silences SET deleted_at = $2, stream_seq = $3 WHERE id = $1 AND stream_seq < $3`,
				e.ID, at, int64(seq))
			return wrap(err, "delete silence %s", e.ID)
		}}, nil
	default:
		// A type this version does not know is dead-lettered, not dropped:
		// it stays visible, and a replay after an upgrade applies it.
		return projection.Change{}, fmt.Errorf("%w: unknown configuration event type %q", streams.ErrMalformed, env.Type)
	}
}

// nullText is a text column's value: NULL for an empty (or blank) text.
// refuseBroken refuses (dead-letters, with the reason) a configuration
// event that breaks the field rules the API applies (package configrules):
// whoever published it, it is not stored.
func (p *projector) refuseBroken(env streams.Envelope, id string, ruleErr error) error {
	if ruleErr == nil {
		return nil
	}
	p.metrics.refused.WithLabelValues(RefuseConfigRule).Inc()
	return fmt.Errorf("%w: %s %.64q refused: %v", streams.ErrMalformed, env.Type, id, ruleErr)
}

func nullText(s string) any {
	if s = pgText(s); s == "" {
		return nil
	}
	return s
}

func needID(env streams.Envelope, id string) error { return needIDs(env, id) }

func needIDs(env streams.Envelope, ids ...string) error {
	for _, id := range ids {
		if id == "" {
			return fmt.Errorf("%w: %s without id", streams.ErrMalformed, env.Type)
		}
	}
	return nil
}

func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
}
