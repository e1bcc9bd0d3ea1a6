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
// sequence: a firing inserts the row, an update changes a firing row's
// summary and value, a resolution ends it with its last summary and value
// (a resolution never goes back to firing), an acknowledgement records who and when. The live consumer
// applies these statements grouped (alertsloop.go); a rebuild one by one.
func alertsDecoder(m jsrouter.Msg) (projection.Change, error) {
	st, err := alertStatement(m)
	if err != nil || st.sql == "" {
		return projection.Change{}, err
	}
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
			return fmt.Errorf("project %s: %w", st.what, err)
		}
		return nil
	}}, nil
}

// statement is what one alert event does to the alerts table ("" sql:
// nothing).
type statement struct {
	sql  string
	args []any
	what string
}

const sqlAlertUpsert = `INSERT INTO alerts (id, key, rule, severity, state, olt_id, olt_name, pon_index, pon, onu_id, serial, description,
	summary, cause, value, unit, incident_id, inhibited, labels, starts_at, ends_at, stream_seq, updated_at)
	VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), NULLIF($7, ''), $8, NULLIF($9, ''), $10, NULLIF($11, ''), NULLIF($12, ''),
	$13, NULLIF($14, ''), $15, NULLIF($16, ''), NULLIF($17, ''), $18, $19, $20, $21, $22, now())
	ON CONFLICT (id) DO UPDATE SET state = excluded.state, ends_at = excluded.ends_at, summary = excluded.summary, value = excluded.value,
		stream_seq = excluded.stream_seq, updated_at = now()
	WHERE alerts.state = 'firing'`

// An update changes only a firing row (an update after the resolution,
// or of a row never seen, changes nothing).
const sqlAlertUpdate = `UPDATE alerts SET summary = $2, value = $3, unit = NULLIF($4, ''), stream_seq = $5, updated_at = now()
	WHERE id = $1 AND state = 'firing'`

func alertStatement(m jsrouter.Msg) (statement, error) {
	env, err := streams.DecodeEnvelope(m.Data)
	if err != nil {
		return statement{}, err
	}
	seq := int64(m.Seq)
	switch env.Type {
	case streams.TypeAlertFiring, streams.TypeAlertResolved, streams.TypeAlertUpdated:
		// Not streams.DecodeOn: Alert's EventType depends on its state,
		// so a zero Alert names alert.firing and DecodeOn would refuse
		// every alert.resolved. SubjectChecked checked the envelope
		// against the subject.
		var a streams.Alert
		if err := json.Unmarshal(env.Data, &a); err != nil {
			return statement{}, fmt.Errorf("%w: %s: %v", streams.ErrMalformed, env.Type, err)
		}
		if env.Type == streams.TypeAlertUpdated {
			if err := streams.CheckSubjectOf(m.Subject, env, streams.AlertUpdated(a)); err != nil {
				return statement{}, err
			}
		} else if err := streams.CheckSubjectOf(m.Subject, env, a); err != nil {
			return statement{}, err
		}
		if a.ID == "" || a.Key == "" || a.Rule == "" || a.StartsAt.IsZero() {
			return statement{}, fmt.Errorf("%w: alert without id, key, rule or starts_at", streams.ErrMalformed)
		}
		if env.Type == streams.TypeAlertUpdated {
			if a.State != streams.AlertStateFiring {
				return statement{}, fmt.Errorf("%w: %s with state %q", streams.ErrMalformed, env.Type, a.State)
			}
			return statement{sql: sqlAlertUpdate, args: []any{a.ID, a.Summary, a.Value, a.Unit, seq}, what: "alert update " + a.ID}, nil
		}
		if (env.Type == streams.TypeAlertResolved) != (a.State == streams.AlertStateResolved) {
			return statement{}, fmt.Errorf("%w: %s with state %q", streams.ErrMalformed, env.Type, a.State)
		}
		var labels []byte
		if len(a.Labels) > 0 {
			if labels, err = json.Marshal(a.Labels); err != nil {
				return statement{}, fmt.Errorf("%w: labels: %v", streams.ErrMalformed, err)
			}
		}
		return statement{sql: sqlAlertUpsert, what: "alert " + a.ID, args: []any{
			a.ID, a.Key, a.Rule, a.Severity, a.State, a.OLTID, a.OLTName, a.PonIndex, a.Pon, a.ONUID, a.Serial, a.Description,
			a.Summary, a.Cause, a.Value, a.Unit, a.IncidentID, a.Inhibited, labels, a.StartsAt, a.EndsAt, seq}}, nil
	case streams.TypeAlertAcknowledged:
		_, ack, err := streams.DecodeOn[streams.AlertAcknowledged](m.Subject, m.Data)
		if err != nil {
			return statement{}, err
		}
		if ack.AlertID == "" {
			return statement{}, fmt.Errorf("%w: acknowledgement without alert_id", streams.ErrMalformed)
		}
		return statement{sql: `UPDATE alerts SET acked_at = $2, acked_by = $3, ack_comment = NULLIF($4, ''), stream_seq = $5, updated_at = now()
			WHERE id = $1 AND acked_at IS NULL`, args: []any{ack.AlertID, ack.At, bounded(ack.By, 128), bounded(ack.Comment, 1024), seq},
			what: "acknowledgement of " + ack.AlertID}, nil
	}
	return statement{}, nil
}
