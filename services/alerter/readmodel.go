package alerter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// ReadModelAlerts is the alerts read model's name for `facho rebuild`.
const ReadModelAlerts = "alerts"

// ReadModels registers the alerter's rebuildable read model: the alerts
// table from FACHO_ALERT (firing, resolved, acknowledged), with the
// decoder the live consumer uses.
func ReadModels() []projection.ReadModel {
	return []projection.ReadModel{{
		Name:        ReadModelAlerts,
		Description: "alerts and incidents, from the alert events",
		Sources:     []projection.Source{{Stream: streams.StreamAlert, Consumer: streams.ConsumerAlerterAlerts, Decode: projection.SubjectChecked(alertsDecoder)}},
		Tables:      []projection.Table{{Name: "alerts", Key: []string{"id"}, Ignore: []string{"updated_at"}}},
	}}
}

// alertsDecoder projects one alert event into alerts, with the stream
// sequence: a firing inserts the row, a resolution ends it (a resolution
// never goes back to firing), an acknowledgement records who and when.
func alertsDecoder(m jsrouter.Msg) (projection.Change, error) {
	env, err := streams.DecodeEnvelope(m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	seq := int64(m.Seq)
	switch env.Type {
	case streams.TypeAlertFiring, streams.TypeAlertResolved:
		// Not streams.DecodeOn: Alert's EventType depends on its state,
		// so a zero Alert names alert.firing and DecodeOn would refuse
		// every alert.resolved. SubjectChecked checked the envelope
		// against the subject.
		var a streams.Alert
		if err := json.Unmarshal(env.Data, &a); err != nil {
			return projection.Change{}, fmt.Errorf("%w: %s: %v", streams.ErrMalformed, env.Type, err)
		}
		if err := streams.CheckSubjectOf(m.Subject, env, a); err != nil {
			return projection.Change{}, err
		}
		if a.ID == "" || a.Key == "" || a.Rule == "" || a.StartsAt.IsZero() {
			return projection.Change{}, fmt.Errorf("%w: alert without id, key, rule or starts_at", streams.ErrMalformed)
		}
		if (env.Type == streams.TypeAlertResolved) != (a.State == streams.AlertStateResolved) {
			return projection.Change{}, fmt.Errorf("%w: %s with state %q", streams.ErrMalformed, env.Type, a.State)
		}
		var labels []byte
		if len(a.Labels) > 0 {
			if labels, err = json.Marshal(a.Labels); err != nil {
				return projection.Change{}, fmt.Errorf("%w: labels: %v", streams.ErrMalformed, err)
			}
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO alerts (id, key, rule, severity, state, olt_id, olt_name, pon_index, pon, onu_id, serial, description,
				summary, cause, value, unit, incident_id, inhibited, labels, starts_at, ends_at, stream_seq, updated_at)
				VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), NULLIF($7, ''), $8, NULLIF($9, ''), $10, NULLIF($11, ''), NULLIF($12, ''),
				$13, NULLIF($14, ''), $15, NULLIF($16, ''), NULLIF($17, ''), $18, $19, $20, $21, $22, now())
				ON CONFLICT (id) DO UPDATE SET state = excluded.state, ends_at = excluded.ends_at, stream_seq = excluded.stream_seq, updated_at = now()
				WHERE alerts.state = 'firing'`,
				a.ID, a.Key, a.Rule, a.Severity, a.State, a.OLTID, a.OLTName, a.PonIndex, a.Pon, a.ONUID, a.Serial, a.Description,
				a.Summary, a.Cause, a.Value, a.Unit, a.IncidentID, a.Inhibited, labels, a.StartsAt, a.EndsAt, seq)
			if err != nil {
				return fmt.Errorf("project alert %s: %w", a.ID, err)
			}
			return nil
		}}, nil
	case streams.TypeAlertAcknowledged:
		_, ack, err := streams.DecodeOn[streams.AlertAcknowledged](m.Subject, m.Data)
		if err != nil {
			return projection.Change{}, err
		}
		if ack.AlertID == "" {
			return projection.Change{}, fmt.Errorf("%w: acknowledgement without alert_id", streams.ErrMalformed)
		}
		return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE alerts SET acked_at = $2, acked_by = $3, ack_comment = NULLIF($4, ''), stream_seq = $5, updated_at = now()
				WHERE id = $1 AND acked_at IS NULL`, ack.AlertID, ack.At, bounded(ack.By, 128), bounded(ack.Comment, 1024), seq)
			if err != nil {
				return fmt.Errorf("project acknowledgement of %s: %w", ack.AlertID, err)
			}
			return nil
		}}, nil
	}
	return projection.Change{}, nil
}
