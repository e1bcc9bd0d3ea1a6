package projector

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// The trap consumer (projector-traps on FACHO_TRAP). Each trap event is
// applied in one transaction with the consumer's checkpoint:
//
//   - trap.received and trap.decoded upsert the trap's row in traps (one
//     row per trap id, whichever comes first), and the OLT's rows beyond
//     the newest TrapsKeep are deleted;
//   - a trap.decoded whose kind sets an ONU's status (los, dying_gasp,
//     offline, online) of an ONU onu_data knows updates its status at
//     once (and its last down cause and time, or last up time), unless a
//     poll read the ONU after the trap was received (onu_data.last_seen):
//     the poll is newer, and stays the truth. The change is recorded in
//     onu_history with source 'trap' and an onu.changed event (source
//     trap), so the alerter sees it at once; and a confirmation poll of
//     the OLT is requested: a manual run of the OLT's get job (the highest
//     priority enabled one), which the planner runs under the OLT's lease
//     ahead of its queue. One confirmation per OLT per TrapConfirmWindow
//     (its execution id derives from the OLT and the window, so the
//     stream's duplicate window and the planner drop the repeats).
//
// The onu.changed and the run request are written to onu_event_outbox in
// the same transaction and published after the commit (Committed), so a
// crash between the two loses neither.

// TrapConfirmWindow: at most one confirmation poll per OLT per window.
const TrapConfirmWindow = 30 * time.Second

// trapsPruneEvery: the OLT's old rows are deleted on every this-many-th
// trap event, so the table holds at most TrapsKeep + this many rows of an
// OLT.
const trapsPruneEvery = 16

func (p *projector) decodeTrap(m jsrouter.Msg) (projection.Change, error) {
	env, err := streams.DecodeEnvelope(m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	seq := int64(m.Seq)
	switch env.Type {
	case streams.TypeTrapReceived:
		var e streams.TrapReceived
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		vbs, err := json.Marshal(e.Varbinds)
		if err != nil {
			return projection.Change{}, fmt.Errorf("%w: varbinds: %v", streams.ErrMalformed, err)
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO traps (trap_id, olt_id, received_at, version, source, trap_oid, varbinds, stream_seq)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
				ON CONFLICT (trap_id) DO UPDATE SET received_at = EXCLUDED.received_at, version = EXCLUDED.version, source = EXCLUDED.source,
					trap_oid = EXCLUDED.trap_oid, varbinds = EXCLUDED.varbinds`,
				env.ID, e.OLTID, e.ReceivedAt, e.Version, pgText(e.Source), pgText(e.TrapOID), vbs, seq)
			if err != nil {
				return wrap(err, "record trap %s of olt %s", env.ID, e.OLTID)
			}
			return p.pruneTraps(ctx, tx, e.OLTID, seq)
		}}, nil
	case streams.TypeTrapDecoded:
		var e streams.TrapDecoded
		if err := streams.DecodeData(env, &e); err != nil {
			return projection.Change{}, err
		}
		if e.TrapID == "" {
			return projection.Change{}, fmt.Errorf("%w: trap.decoded without trap_id", streams.ErrMalformed)
		}
		var outbox []outboxRow
		return projection.Change{
			Apply: func(ctx context.Context, tx pgx.Tx) error {
				applied := false
				if streams.TrapONUStatus(e.Kind) != "" {
					rows, err := p.applyTrapStatus(ctx, tx, seq, e)
					if err != nil {
						return err
					}
					applied, outbox = len(rows) > 0, rows
				}
				_, err := tx.Exec(ctx, `INSERT INTO traps (trap_id, olt_id, received_at, trap_oid, kind, rule, pon_index, onu_id, onu_index, port_name, applied, stream_seq)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
					ON CONFLICT (trap_id) DO UPDATE SET kind = EXCLUDED.kind, rule = EXCLUDED.rule, pon_index = EXCLUDED.pon_index,
						onu_id = EXCLUDED.onu_id, onu_index = EXCLUDED.onu_index, port_name = EXCLUDED.port_name, applied = EXCLUDED.applied`,
					e.TrapID, e.OLTID, e.At, pgText(e.TrapOID), e.Kind, pgText(e.Rule), e.PonIndex, e.ONUID, pgText(e.Index), pgText(e.PortName), applied, seq)
				if err != nil {
					return wrap(err, "record decoded trap %s of olt %s", e.TrapID, e.OLTID)
				}
				for _, r := range outbox {
					if _, err := tx.Exec(ctx, `INSERT INTO onu_event_outbox (msg_id, subject, payload) VALUES ($1, $2, $3) ON CONFLICT (msg_id) DO NOTHING`,
						r.MsgID, r.Subject, r.Payload); err != nil {
						return wrap(err, "queue event %s", r.MsgID)
					}
				}
				return p.pruneTraps(ctx, tx, e.OLTID, seq)
			},
			Committed: func(ctx context.Context) {
				if len(outbox) == 0 {
					return
				}
				if err := p.outbox.flush(ctx); err != nil {
					// Left in the outbox: the next trap's commit or the
					// projector's next start publishes them.
					p.metrics.outboxFailures.Inc()
					p.log.Warn().Err(err).Str("olt", e.OLTID).Msg("publishing a trap's ONU change failed; will retry")
				}
			},
		}, nil
	}
	return projection.Change{}, fmt.Errorf("%w: %s on %s", streams.ErrMalformed, env.Type, m.Subject)
}

// pruneTraps keeps the newest TrapsKeep rows of an OLT (on every
// trapsPruneEvery-th event).
func (p *projector) pruneTraps(ctx context.Context, tx pgx.Tx, olt string, seq int64) error {
	if seq%trapsPruneEvery != 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `DELETE FROM traps WHERE olt_id = $1 AND stream_seq < (
			SELECT stream_seq FROM traps WHERE olt_id = $1 ORDER BY stream_seq DESC OFFSET $2 LIMIT 1)`,
		olt, p.cfg.TrapsKeep-1)
	return wrap(err, "prune the traps of olt %s", olt)
}

// trapState is an ONU's state after a status trap, the trap's time, and
// whether the status changed (a trap that repeats the status changes
// nothing). The live consumer and the onu_data fold both apply it.
func trapState(old streams.ONUState, e streams.TrapDecoded) (cur streams.ONUState, at time.Time, changed bool) {
	cur = old
	cur.Status = streams.TrapONUStatus(e.Kind)
	at = e.At.UTC()
	switch e.Kind {
	case streams.TrapKindLOS, streams.TrapKindDyingGasp:
		cur.LastDownCause, cur.LastDownAt = cur.Status, &at
	case streams.TrapKindOffline:
		cur.LastDownAt = &at
	case streams.TrapKindOnline:
		cur.LastUpAt = &at
	}
	return cur, at, cur.Status != old.Status
}

// applyTrapStatus sets the status a decoded trap says of a known ONU; it
// returns the events to publish (none when nothing changed).
func (p *projector) applyTrapStatus(ctx context.Context, tx pgx.Tx, seq int64, e streams.TrapDecoded) ([]outboxRow, error) {
	k := ONUKey{PonIndex: *e.PonIndex, ONUID: *e.ONUID}
	stored, err := loadONUs(ctx, tx, e.OLTID, map[ONUKey]struct{}{k: {}})
	if err != nil {
		return nil, err
	}
	r, ok := stored[k]
	switch {
	case !ok || r.RemovedAt != nil:
		return nil, nil // an ONU no poll found: traps do not create ONUs
	case !r.LastSeen.Before(e.At):
		return nil, nil // a poll read it after the trap: the poll stands
	}
	// A newer trap of this ONU was applied (a redelivery, or groups
	// applied side by side): it stands. Trap rows of onu_history carry
	// minus the FACHO_TRAP sequence.
	var newer bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM onu_history WHERE olt_id = $1 AND pon_index = $2 AND onu_id = $3
		AND stream_seq < 0 AND stream_seq <= $4 AND source = 'trap')`, e.OLTID, k.PonIndex, k.ONUID, -seq).Scan(&newer); err != nil {
		return nil, wrap(err, "read the last trap of onu %d.%d of olt %s", k.PonIndex, k.ONUID, e.OLTID)
	}
	if newer {
		return nil, nil
	}
	old := r.State
	cur, at, changed := trapState(old, e)
	if !changed {
		return nil, nil
	}
	tag, err := tx.Exec(ctx, `UPDATE onu_data SET status = $4, last_down_cause = $5, last_down_at = $6, last_up_at = $7
		WHERE olt_id = $1 AND pon_index = $2 AND onu_id = $3 AND last_seen < $8 AND removed_at IS NULL`,
		e.OLTID, k.PonIndex, k.ONUID, cur.Status, cur.LastDownCause, cur.LastDownAt, cur.LastUpAt, at)
	if err != nil {
		return nil, wrap(err, "set the status of onu %d.%d of olt %s from a trap", k.PonIndex, k.ONUID, e.OLTID)
	}
	if tag.RowsAffected() == 0 {
		return nil, nil
	}
	prev, next := historyFields(old), historyFields(cur)
	var fields []string
	var olds, news []*string
	for i, name := range historyFieldNames {
		if prev[i] != next[i] {
			fields = append(fields, name)
			olds, news = append(olds, optPtr(prev[i])), append(news, optPtr(next[i]))
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO onu_history (olt_id, pon_index, onu_id, field, old_value, new_value, at, execution_id, stream_seq, source)
		SELECT $1, $2, $3, f.field, f.old, f.new, $4, '', $5, 'trap' FROM unnest($6::text[], $7::text[], $8::text[]) AS f(field, old, new)
		ON CONFLICT DO NOTHING`, e.OLTID, k.PonIndex, k.ONUID, at, -seq, fields, olds, news); err != nil {
		return nil, wrap(err, "record the trap's change of onu %d.%d of olt %s", k.PonIndex, k.ONUID, e.OLTID)
	}
	id := streams.MsgID("onu-trap", e.OLTID, seq)
	payload, err := streams.EncodeWithID(id, p.cfg.Source, at, streams.ONUChanged{OLTID: e.OLTID, PonIndex: k.PonIndex, ONUID: k.ONUID,
		Change: streams.ONUStatusChanged, Previous: &old, Current: cur, ObservedAt: at, Source: streams.ONUChangeSourceTrap, TrapID: e.TrapID})
	if err != nil {
		return nil, fmt.Errorf("encode the trap's onu change: %w", err)
	}
	rows := []outboxRow{{MsgID: id, Subject: streams.SubjectONU(e.OLTID, streams.ONUStatusChanged), Payload: payload}}
	confirm, err := p.confirmationRun(ctx, tx, e.OLTID, at)
	if err != nil {
		return nil, err
	}
	if confirm != nil {
		rows = append(rows, *confirm)
	}
	p.metrics.trapStatus.WithLabelValues(e.Kind).Inc()
	return rows, nil
}

func optPtr(o optText) *string {
	if !o.set {
		return nil
	}
	return &o.v
}

// confirmationRun is the manual run request of the OLT's get job that
// confirms a trap's status change; nil when the OLT or its get job is
// disabled or it has none.
func (p *projector) confirmationRun(ctx context.Context, tx pgx.Tx, olt string, at time.Time) (*outboxRow, error) {
	var job string
	err := tx.QueryRow(ctx, `SELECT j.id FROM snmp_jobs j
		JOIN snmp_job_olts a ON a.job_id = j.id AND a.olt_id = $1 AND a.enabled
		JOIN olts o ON o.id = a.olt_id AND o.enabled AND NOT o.deleted
		WHERE j.kind = $2 AND j.enabled AND NOT j.deleted
		ORDER BY j.priority DESC, j.id LIMIT 1`, olt, streams.KindGet).Scan(&job)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err, "find the get job of olt %s", olt)
	}
	window := at.Truncate(TrapConfirmWindow)
	exec := uuid.NewSHA1(uuid.NameSpaceURL, []byte(streams.MsgID("trap-confirm", olt, window.Unix()))).String()
	req := streams.NodeRunRequested{ExecutionID: exec, NodeID: job + "." + olt, JobID: job, OLTID: olt, RequestedAt: at}
	id := streams.MsgID("manual-request", exec)
	payload, err := streams.EncodeWithID(exec, p.cfg.Source, at, req)
	if err != nil {
		return nil, fmt.Errorf("encode the confirmation run of olt %s: %w", olt, err)
	}
	return &outboxRow{MsgID: id, Subject: streams.SubjectManualRun(olt), Payload: payload}, nil
}
