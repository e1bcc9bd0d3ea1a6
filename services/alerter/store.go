package alerter

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/facho-olt/facho/streams"
)

// Receivers of a delivery row besides webhooks ("webhook:<id>").
const receiverAlertmanager = "alertmanager"

// load reads the persisted state into a new engine.
func load(ctx context.Context, db *pgxpool.Pool, rules Rules, limits Limits) (*Engine, error) {
	e := NewEngine(rules, limits)
	rows, err := db.Query(ctx, `SELECT kind, key, state FROM alerter_state`)
	if err != nil {
		return nil, fmt.Errorf("load alerter state: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind, key string
		var b []byte
		if err := rows.Scan(&kind, &key, &b); err != nil {
			return nil, fmt.Errorf("load alerter state: %w", err)
		}
		if err := e.restore(kind, key, b); err != nil {
			return nil, fmt.Errorf("load alerter state %s %s: %w", kind, key, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load alerter state: %w", err)
	}
	return e, nil
}

// restore puts one persisted entity back and rebuilds the indexes.
func (e *Engine) restore(kind, key string, b []byte) error {
	switch kind {
	case "onu":
		var o onuJSON
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		e.restoreONU(o)
	case "pon":
		var p ponState
		if err := json.Unmarshal(b, &p); err != nil {
			return err
		}
		e.pons[ponKey{p.OLT, p.PON}] = &p
	case "olt":
		var o oltState
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		e.olts[o.ID] = &o
	case "brand":
		var p string
		if err := json.Unmarshal(b, &p); err != nil {
			return err
		}
		e.brands[key] = p
	case "job":
		var j jobState
		if err := json.Unmarshal(b, &j); err != nil {
			return err
		}
		e.jobs[key] = j
	case "silence":
		var s streams.SilenceUpserted
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		e.silences[key] = s
	case "alert":
		var a activeAlert
		if err := json.Unmarshal(b, &a); err != nil {
			return err
		}
		e.active[key] = &a
		switch {
		case a.Pending:
			e.addPending(a.A)
		case a.A.Rule == streams.RuleONUFlapping && a.A.PonIndex != nil && a.A.ONUID != nil:
			e.flapping[key] = ONUKey{a.A.OLTID, *a.A.PonIndex, *a.A.ONUID}
		}
		if a.Until != nil {
			e.timed[key] = struct{}{}
		}
	default:
		return fmt.Errorf("unknown kind")
	}
	return nil
}

// value is the persisted form of an entity, nil when it is gone.
func (e *Engine) value(id stateID) (any, error) {
	switch id.Kind {
	case "onu":
		k, err := parseONUID(id.Key)
		if err != nil {
			return nil, err
		}
		if o := e.onus.get(k); o != nil {
			return e.onuJSON(o), nil
		}
	case "pon":
		i := strings.LastIndexByte(id.Key, '/')
		if i < 0 {
			return nil, fmt.Errorf("bad pon key %q", id.Key)
		}
		pon, err := strconv.ParseInt(id.Key[i+1:], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad pon key %q", id.Key)
		}
		if p := e.pons[ponKey{id.Key[:i], pon}]; p != nil {
			return p, nil
		}
	case "olt":
		if o := e.olts[id.Key]; o != nil {
			return o, nil
		}
	case "brand":
		if p, ok := e.brands[id.Key]; ok {
			return p, nil
		}
	case "job":
		if j, ok := e.jobs[id.Key]; ok {
			return j, nil
		}
	case "silence":
		if s, ok := e.silences[id.Key]; ok {
			return s, nil
		}
	case "alert":
		if a := e.active[id.Key]; a != nil {
			return a, nil
		}
	}
	return nil, nil
}

func parseONUID(s string) (ONUKey, error) {
	j := strings.LastIndexByte(s, '/')
	if j < 0 {
		return ONUKey{}, fmt.Errorf("bad onu key %q", s)
	}
	i := strings.LastIndexByte(s[:j], '/')
	if i < 0 {
		return ONUKey{}, fmt.Errorf("bad onu key %q", s)
	}
	pon, err1 := strconv.ParseInt(s[i+1:j], 10, 64)
	onu, err2 := strconv.ParseInt(s[j+1:], 10, 64)
	if err1 != nil || err2 != nil {
		return ONUKey{}, fmt.Errorf("bad onu key %q", s)
	}
	return ONUKey{s[:i], pon, onu}, nil
}

// persist writes what changed and the transitions' outbox rows (and their
// deliveries) in tx: one statement per table whatever the group's size
// (arrays unnested), so a group of a thousand ONU changes costs a few
// statements.
func (e *Engine) persist(ctx context.Context, tx pgx.Tx, dirty map[stateID]bool, out []Transition, source string, amEnabled bool) error {
	var upKinds, upKeys, delKinds, delKeys []string
	var upStates [][]byte
	for id := range dirty {
		v, err := e.value(id)
		if err != nil {
			return err
		}
		if v == nil {
			delKinds, delKeys = append(delKinds, id.Kind), append(delKeys, id.Key)
			continue
		}
		js, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", id.Kind, id.Key, err)
		}
		upKinds, upKeys, upStates = append(upKinds, id.Kind), append(upKeys, id.Key), append(upStates, js)
	}
	var msgIDs, alertIDs, states, subjects, notifyIDs, notifyTypes []string
	var payloads [][]byte
	var notify []bool
	for _, t := range out {
		a := t.Alert
		msgID := "alert:" + a.ID + ":" + a.State
		state := a.State
		var ev streams.Event = a
		if t.Update {
			state = streams.AlertStateUpdated
			msgID = "alert:" + a.ID + ":" + state + ":" + strconv.Itoa(t.Rev)
			ev = streams.AlertUpdated(a)
		}
		payload, err := streams.EncodeWithID(msgID, source, a.ObservedAt, ev)
		if err != nil {
			return fmt.Errorf("encode alert %s: %w", msgID, err)
		}
		msgIDs, alertIDs, states = append(msgIDs, msgID), append(alertIDs, a.ID), append(states, state)
		subjects, payloads, notify = append(subjects, streams.SubjectAlert(a.OLTID, state)), append(payloads, payload), append(notify, t.Notify && !t.Update)
		if t.Notify && !t.Update {
			notifyIDs, notifyTypes = append(notifyIDs, msgID), append(notifyTypes, a.EventType())
		}
	}
	b := &pgx.Batch{}
	if len(upKeys) > 0 {
		b.Queue(`INSERT INTO alerter_state (kind, key, state) SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[])
			ON CONFLICT (kind, key) DO UPDATE SET state = excluded.state`, upKinds, upKeys, upStates)
	}
	if len(delKeys) > 0 {
		b.Queue(`DELETE FROM alerter_state s USING unnest($1::text[], $2::text[]) AS d(kind, key) WHERE s.kind = d.kind AND s.key = d.key`, delKinds, delKeys)
	}
	if len(msgIDs) > 0 {
		// WITH ORDINALITY keeps the transitions' order in seq.
		b.Queue(`INSERT INTO alerter_outbox (msg_id, alert_id, state, subject, payload, notify)
			SELECT m, a, s, sub, p, n FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::boolean[]) WITH ORDINALITY AS x(m, a, s, sub, p, n, i)
			ORDER BY i ON CONFLICT (msg_id) DO NOTHING`, msgIDs, alertIDs, states, subjects, payloads, notify)
	}
	if len(notifyIDs) > 0 {
		b.Queue(`INSERT INTO alerter_deliveries (msg_id, receiver)
			SELECT x.m, 'webhook:' || w.id FROM unnest($1::text[], $2::text[]) AS x(m, t) JOIN webhooks w ON w.enabled AND x.t = ANY (w.events)
			ON CONFLICT DO NOTHING`, notifyIDs, notifyTypes)
		if amEnabled {
			b.Queue(`INSERT INTO alerter_deliveries (msg_id, receiver) SELECT m, $2 FROM unnest($1::text[]) AS m ON CONFLICT DO NOTHING`, notifyIDs, receiverAlertmanager)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write alerter state: %w", err)
	}
	return nil
}
