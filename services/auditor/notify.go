package auditor

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/streams"
)

// Webhook request headers. The signature is HMAC-SHA256 over
// "<timestamp>.<body>" with the webhook's secret, hex-encoded:
//
//	X-Facho-Timestamp: 1763719200
//	X-Facho-Signature: sha256=5d41402abc4b2a76b9719d911017c592...
//
// A receiver recomputes it (VerifySignature) and refuses a timestamp
// older than a few minutes, so a captured request cannot be replayed
// later. X-Facho-Notification is the notification's id (the same on every
// retry: deduplicate on it), X-Facho-Delivery the delivery's id,
// X-Facho-Attempt its attempt number.
const (
	HeaderSignature    = "X-Facho-Signature"
	HeaderTimestamp    = "X-Facho-Timestamp"
	HeaderEvent        = "X-Facho-Event"
	HeaderNotification = "X-Facho-Notification"
	HeaderDelivery     = "X-Facho-Delivery"
	HeaderAttempt      = "X-Facho-Attempt"
)

// Delivery statuses (webhook_deliveries.status).
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Sign is the X-Facho-Signature value of body sent at ts (unix seconds).
func Sign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// VerifySignature checks a webhook request's headers against body: the
// signature must be secret's and the timestamp within tolerance of now.
func VerifySignature(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return errors.New("webhook signature: missing or bad " + HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook signature: timestamp %d outside %s of now", ts, tolerance)
	}
	want := Sign(secret, ts, body)
	if !hmac.Equal([]byte(want), []byte(h.Get(HeaderSignature))) {
		return errors.New("webhook signature: mismatch")
	}
	return nil
}

// notification is one row of the notifications outbox to write.
type notification struct {
	ev streams.Notification
}

// enqueue writes n into the outbox and one pending delivery per enabled
// webhook subscribed to its kind, in the transaction that decided it; the
// publisher and the delivery loop take it from there. A notification
// already there (same id) is left alone (inserted=false).
func (a *auditor) enqueue(ctx context.Context, tx pgx.Tx, n notification) (bool, error) {
	payload, err := streams.EncodeWithID(n.ev.ID, a.cfg.Source, n.ev.OccurredAt, n.ev)
	if err != nil {
		return false, fmt.Errorf("encode notification %s: %w", n.ev.ID, err)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO notifications (id, kind, olt_id, subject, payload, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
		n.ev.ID, n.ev.Kind, n.ev.OLTID, streams.SubjectNotify(n.ev.Kind, n.ev.OLTID), payload, n.ev.OccurredAt)
	if err != nil {
		return false, fmt.Errorf("insert notification %s: %w", n.ev.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (notification_id, webhook_id, next_attempt_at)
		SELECT $1, id, now() FROM webhooks WHERE enabled AND $2 = ANY (events)
		ON CONFLICT (notification_id, webhook_id) DO NOTHING`, n.ev.ID, n.ev.Kind); err != nil {
		return false, fmt.Errorf("deliveries of notification %s: %w", n.ev.ID, err)
	}
	return true, nil
}

// failureStreak counts an OLT's consecutive final failures (delta +1), or
// resets them on a success (delta -1); the Nth in a row is notified.
func (a *auditor) failureStreak(ctx context.Context, tx pgx.Tx, env streams.Envelope, olt, execID, errText string, delta int) error {
	switch delta {
	case 0:
		return nil
	case -1:
		if _, err := tx.Exec(ctx, streakResetSQL, olt, execID, env.Time); err != nil {
			return fmt.Errorf("reset failure streak of %s: %w", olt, err)
		}
		return nil
	}
	var n int
	if err := tx.QueryRow(ctx, streakFailSQL, olt, execID, sanitizeString(errText), env.Time).Scan(&n); err != nil {
		return fmt.Errorf("failure streak of %s: %w", olt, err)
	}
	if n != a.cfg.Notify.FailureStreak {
		return nil
	}
	_, err := a.enqueue(ctx, tx, streakNotification(olt, execID, errText, n, env.Time))
	return err
}

// streakResetSQL ($1 olt, $2 execution, $3 time) ends an OLT's failure
// streak; streakFailSQL ($4 the error) counts a final failure in it and
// returns the streak.
const (
	streakResetSQL = `UPDATE failure_streaks SET consecutive_failures = 0, last_execution_id = $2, last_error = '', updated_at = $3
			WHERE olt_id = $1`
	streakFailSQL = `INSERT INTO failure_streaks (olt_id, consecutive_failures, last_execution_id, last_error, updated_at)
		VALUES ($1, 1, $2, $3, $4)
		ON CONFLICT (olt_id) DO UPDATE SET consecutive_failures = failure_streaks.consecutive_failures
				+ CASE WHEN failure_streaks.last_execution_id = EXCLUDED.last_execution_id THEN 0 ELSE 1 END,
			last_execution_id = EXCLUDED.last_execution_id, last_error = EXCLUDED.last_error, updated_at = EXCLUDED.updated_at
		RETURNING consecutive_failures`
)

// streakNotification is the repeated failures notification of an OLT's
// streak of n.
func streakNotification(olt, execID, errText string, n int, at time.Time) notification {
	return notification{ev: streams.Notification{
		ID: streams.MsgID(streams.NotifyRepeatedFailures, olt, execID), Kind: streams.NotifyRepeatedFailures, OLTID: olt,
		Severity: streams.LevelError, OccurredAt: at,
		Message: fmt.Sprintf("%d consecutive failed executions on OLT %s; last: %s", n, olt, sanitizeString(errText)),
		Details: map[string]any{"consecutive_failures": n, "last_execution_id": execID, "last_error": sanitizeString(errText)},
	}}
}

// auditNotify notifies an OLT_DISABLED or OLT_ENABLED audit event (consumer
// auditor-audit), in the transaction of its coordinator log row, and
// interrupts the OLT's quotas of the hour (the planner disables an OLT
// after its failures without a configuration event).
func (a *auditor) auditNotify(m jsrouter.Msg, env streams.Envelope) (func(context.Context, pgx.Tx) error, error) {
	mark := func(ctx context.Context, tx pgx.Tx) error { return watermark(ctx, tx, m.Consumer, env.Time) }
	if env.Type != streams.TypeAudit {
		return mark, nil
	}
	var ev streams.AuditEvent
	if err := streams.DecodeData(env, &ev); err != nil {
		return nil, err
	}
	kind := ""
	switch ev.Kind {
	case streams.AuditOLTDisabled:
		kind = streams.NotifyOLTDisabled
	case streams.AuditOLTEnabled:
		// Enabled again by its configuration or by the recovery probes.
		kind = streams.NotifyOLTEnabled
	default:
		return mark, nil
	}
	e := sanitize(Entry{OLTID: ev.OLTID, EventType: ev.Kind, Message: ev.Message, Details: ev.Details})
	// The notification's id is the audit event's own id (the publisher
	// derives it from what it audits: the execution that tipped an
	// auto-disable, the configuration event of a disable), not its stream
	// sequence: the same audit published again after the stream's
	// duplicate window (a restarted planner) finds its notification in
	// the outbox and is not notified twice. Without an id (or with an
	// unreasonably long one): the sequence.
	id := streams.MsgID(kind, m.Stream, m.Seq)
	if env.ID != "" && len(env.ID) <= 256 && utf8.ValidString(env.ID) {
		id = streams.MsgID(kind, ev.OLTID, env.ID)
	}
	n := notification{ev: streams.Notification{
		ID: id, Kind: kind, OLTID: ev.OLTID,
		Severity: strings.ToUpper(ev.Level), Message: e.Message, Details: e.Details, OccurredAt: env.Time,
	}}
	if !levels[n.ev.Severity] {
		n.ev.Severity = streams.LevelWarning
	}
	return func(ctx context.Context, tx pgx.Tx) error {
		if ev.OLTID != "" && ev.Kind == streams.AuditOLTDisabled {
			if err := a.interrupt(ctx, tx, ev.OLTID, env.Time, "OLT_DISABLED: "+e.Message); err != nil {
				return err
			}
		}
		if _, err := a.enqueue(ctx, tx, n); err != nil {
			return err
		}
		return mark(ctx, tx)
	}, nil
}

// publishLoop publishes the outbox: each notification on its
// facho.notify.<kind>.<olt> subject with a Nats-Msg-Id a re-publish
// reproduces, then marks it published.
func (a *auditor) publishLoop(ctx context.Context) error {
	t := time.NewTicker(a.cfg.Notify.PublishEvery)
	defer t.Stop()
	for {
		if err := a.publishPending(ctx); err != nil && ctx.Err() == nil {
			a.deps.Log.Warn().Err(err).Msg("publish notifications")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// publishPending publishes up to 100 unpublished notifications, oldest
// first.
func (a *auditor) publishPending(ctx context.Context) error {
	rows, err := a.deps.DB.Query(ctx, `SELECT id, kind, subject, payload FROM notifications
		WHERE published_at IS NULL ORDER BY created_at, id LIMIT 100`)
	if err != nil {
		return fmt.Errorf("read notification outbox: %w", err)
	}
	type pending struct {
		id, kind, subject string
		payload           []byte
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pending, error) {
		var p pending
		return p, r.Scan(&p.id, &p.kind, &p.subject, &p.payload)
	})
	if err != nil {
		return fmt.Errorf("read notification outbox: %w", err)
	}
	for _, p := range ps {
		pctx, cancel := context.WithTimeout(ctx, a.cfg.Notify.Timeout)
		_, err := a.deps.JS.Publish(pctx, p.subject, p.payload, jetstream.WithMsgID("notify:"+p.id))
		cancel()
		if err != nil {
			return fmt.Errorf("publish notification %s: %w", p.id, err)
		}
		if _, err := a.deps.DB.Exec(ctx, `UPDATE notifications SET published_at = now() WHERE id = $1`, p.id); err != nil {
			return fmt.Errorf("mark notification %s published: %w", p.id, err)
		}
		a.m.notifications.WithLabelValues(p.kind).Inc()
		if err := a.markNotified(ctx, p.id); err != nil {
			return err
		}
	}
	return nil
}

// markNotified sets quota_violations.notified once its notification is
// published and every webhook delivery of it was delivered.
func (a *auditor) markNotified(ctx context.Context, id string) error {
	_, err := a.deps.DB.Exec(ctx, `UPDATE quota_violations v SET notified = true, notified_at = now()
		WHERE v.notification_id = $1 AND NOT v.notified
			AND EXISTS (SELECT 1 FROM notifications n WHERE n.id = $1 AND n.published_at IS NOT NULL)
			AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.notification_id = $1 AND d.status <> 'delivered')`, id)
	if err != nil {
		return fmt.Errorf("mark violation of notification %s notified: %w", id, err)
	}
	return nil
}

// deliverLoop sends due webhook deliveries.
func (a *auditor) deliverLoop(ctx context.Context) error {
	t := time.NewTicker(a.cfg.Notify.DeliverEvery)
	defer t.Stop()
	for {
		if err := a.deliverDue(ctx); err != nil && ctx.Err() == nil {
			a.deps.Log.Warn().Err(err).Msg("webhook deliveries")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

type delivery struct {
	id                   int64
	notificationID, kind string
	webhookID, url       string
	secretEnc            string
	payload              []byte
	attempts             int
}

// deliverDue claims up to 20 due deliveries of published notifications
// (locked for twice the request timeout, so another replica does not send
// them meanwhile) and sends each once.
func (a *auditor) deliverDue(ctx context.Context) error {
	lock := 2 * a.cfg.Notify.Timeout
	rows, err := a.deps.DB.Query(ctx, `WITH due AS (
			SELECT d.id FROM webhook_deliveries d
			JOIN notifications n ON n.id = d.notification_id
			JOIN webhooks w ON w.id = d.webhook_id
			WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.locked_until IS NULL OR d.locked_until < now())
				AND n.published_at IS NOT NULL AND w.enabled
			ORDER BY d.next_attempt_at LIMIT 20 FOR UPDATE OF d SKIP LOCKED)
		UPDATE webhook_deliveries d SET locked_until = now() + $1::interval
		FROM due, notifications n, webhooks w
		WHERE d.id = due.id AND n.id = d.notification_id AND w.id = d.webhook_id
		RETURNING d.id, d.notification_id, n.kind, w.id, w.url, w.secret_enc, n.payload, d.attempts`, lock.String())
	if err != nil {
		return fmt.Errorf("claim webhook deliveries: %w", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (delivery, error) {
		var d delivery
		return d, r.Scan(&d.id, &d.notificationID, &d.kind, &d.webhookID, &d.url, &d.secretEnc, &d.payload, &d.attempts)
	})
	if err != nil {
		return fmt.Errorf("claim webhook deliveries: %w", err)
	}
	for _, d := range ds {
		if ctx.Err() != nil {
			return nil
		}
		if err := a.deliver(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// deliver sends d once and records the attempt: delivered on a 2xx;
// otherwise pending again after the backoff, or failed after the maximum
// attempts.
func (a *auditor) deliver(ctx context.Context, d delivery) error {
	attempt := d.attempts + 1
	code, sendErr := a.send(ctx, d, attempt)
	log := a.deps.Log.With().Str("webhook_id", d.webhookID).Str("notification_id", d.notificationID).Int64("delivery_id", d.id).Int("attempt", attempt).Logger()
	if sendErr == nil {
		_, err := a.deps.DB.Exec(ctx, `UPDATE webhook_deliveries SET status = 'delivered', attempts = $2, last_error = '', last_status_code = $3,
			last_attempt_at = now(), delivered_at = now(), locked_until = NULL WHERE id = $1`, d.id, attempt, code)
		if err != nil {
			return fmt.Errorf("record delivery %d: %w", d.id, err)
		}
		a.m.deliveries.WithLabelValues(DeliveryDelivered).Inc()
		log.Info().Int("status_code", code).Msg("webhook delivered")
		return a.markNotified(ctx, d.notificationID)
	}
	if ctx.Err() != nil {
		// Shutting down: not the receiver's fault; the lock expires and
		// the attempt is made again.
		return nil
	}
	status, next := DeliveryPending, a.cfg.Notify.backoff(attempt)
	if attempt >= a.cfg.Notify.MaxAttempts {
		status = DeliveryFailed
	}
	var codePtr *int
	if code != 0 {
		codePtr = &code
	}
	msg := cut(sanitizeString(sendErr.Error()), 1000)
	_, err := a.deps.DB.Exec(ctx, `UPDATE webhook_deliveries SET status = $2, attempts = $3, last_error = $4, last_status_code = $5,
		last_attempt_at = now(), next_attempt_at = now() + $6::interval, locked_until = NULL WHERE id = $1`,
		d.id, status, attempt, msg, codePtr, next.String())
	if err != nil {
		return fmt.Errorf("record delivery %d: %w", d.id, err)
	}
	a.m.deliveries.WithLabelValues(status).Inc()
	ev := log.Warn()
	if status == DeliveryFailed {
		ev = log.Error()
	}
	ev.Str("error", msg).Dur("retry_in_ms", next).Str("status", status).Msg("webhook delivery failed")
	return nil
}

// send POSTs the notification to the webhook, signed with its secret.
func (a *auditor) send(ctx context.Context, d delivery, attempt int) (int, error) {
	if a.deps.Box == nil {
		return 0, errors.New("no secret key: cannot sign")
	}
	secretText, err := a.deps.Box.Open(d.secretEnc)
	if err != nil {
		return 0, errors.New("cannot open the webhook secret (wrong FACHO_SECRET_KEY?)")
	}
	rctx, cancel := context.WithTimeout(ctx, a.cfg.Notify.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, d.url, bytes.NewReader(d.payload))
	if err != nil {
		return 0, fmt.Errorf("webhook request: %w", err)
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "facho-auditor")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(secretText, ts, d.payload))
	req.Header.Set(HeaderEvent, d.kind)
	req.Header.Set(HeaderNotification, d.notificationID)
	req.Header.Set(HeaderDelivery, strconv.FormatInt(d.id, 10))
	req.Header.Set(HeaderAttempt, strconv.Itoa(attempt))
	resp, err := a.client.Do(req)
	if err != nil {
		// Without the URL, which may carry a token in its path: the
		// error is stored and logged.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return 0, fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("receiver answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}
