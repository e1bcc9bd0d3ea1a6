package alerter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/streams"
)

// kickDeliveries wakes the delivery loop.
func (a *alerter) kickDeliveries() {
	select {
	case a.dwake <- struct{}{}:
	default:
	}
}

func (a *alerter) deliverWake() chan struct{} { return a.dwake }

// deliverLoop sends the due deliveries of published alert events: each
// receiver gets each event once (a delivery row per receiver and event,
// marked delivered after its 2xx), in outbox order.
func (a *alerter) deliverLoop(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if err := a.deliverDue(ctx); err != nil && ctx.Err() == nil {
			a.deps.Log.Warn().Err(err).Msg("alert deliveries")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-a.dwake:
		}
	}
}

type delivery struct {
	msgID, receiver, state string
	payload                []byte
	attempts               int
	url, secretEnc         string
}

func (a *alerter) deliverDue(ctx context.Context) error {
	rows, err := a.deps.DB.Query(ctx, `SELECT d.msg_id, d.receiver, o.state, o.payload, d.attempts, coalesce(w.url, ''), coalesce(w.secret_enc, '')
		FROM alerter_deliveries d JOIN alerter_outbox o ON o.msg_id = d.msg_id
		LEFT JOIN webhooks w ON d.receiver = 'webhook:' || w.id
		WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND o.published_at IS NOT NULL
		ORDER BY o.seq LIMIT 200`)
	if err != nil {
		return fmt.Errorf("read alert deliveries: %w", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (delivery, error) {
		var d delivery
		return d, r.Scan(&d.msgID, &d.receiver, &d.state, &d.payload, &d.attempts, &d.url, &d.secretEnc)
	})
	if err != nil {
		return fmt.Errorf("read alert deliveries: %w", err)
	}
	// Alertmanager takes a batch at once.
	var am []delivery
	for _, d := range ds {
		if d.receiver == receiverAlertmanager {
			am = append(am, d)
			continue
		}
		err := a.sendWebhook(ctx, d)
		a.record(ctx, d, err)
	}
	if len(am) > 0 {
		var alerts []streams.Alert
		for _, d := range am {
			env, err := streams.DecodeEnvelope(d.payload)
			var al streams.Alert
			if err == nil {
				err = json.Unmarshal(env.Data, &al)
			}
			if err != nil {
				a.record(ctx, d, fmt.Errorf("%w: %v", errPermanent, err))
				continue
			}
			alerts = append(alerts, al)
		}
		err := a.postAlertmanager(ctx, alerts)
		for _, d := range am {
			a.record(ctx, d, err)
		}
	}
	return nil
}

var errPermanent = errors.New("permanent")

// record marks a delivery delivered, or schedules its retry (failed after
// MaxAttempts).
func (a *alerter) record(ctx context.Context, d delivery, err error) {
	kind := d.receiver
	if i := strings.IndexByte(kind, ':'); i >= 0 {
		kind = kind[:i]
	}
	if err == nil {
		a.m.deliveries.WithLabelValues(kind, "delivered").Inc()
		if _, err := a.deps.DB.Exec(ctx, `UPDATE alerter_deliveries SET status = 'delivered', attempts = attempts + 1, last_error = '', delivered_at = now()
			WHERE msg_id = $1 AND receiver = $2`, d.msgID, d.receiver); err != nil {
			a.deps.Log.Warn().Err(err).Str("msg_id", d.msgID).Msg("mark delivery")
		}
		return
	}
	attempts := d.attempts + 1
	status := "pending"
	if attempts >= a.cfg.MaxAttempts || errors.Is(err, errPermanent) {
		status = "failed"
	}
	wait := a.cfg.Backoff << min(attempts-1, 20)
	if wait > a.cfg.MaxBackoff || wait <= 0 {
		wait = a.cfg.MaxBackoff
	}
	a.m.deliveries.WithLabelValues(kind, status).Inc()
	msg := bounded(err.Error(), 512)
	a.deps.Log.Warn().Str("receiver", kind).Str("msg_id", d.msgID).Int("attempt", attempts).Str("status", status).Int64("retry_in_ms", wait.Milliseconds()).Str("error", msg).Msg("alert delivery failed")
	if _, err := a.deps.DB.Exec(ctx, `UPDATE alerter_deliveries SET status = $3, attempts = $4, last_error = $5, next_attempt_at = now() + $6::interval
		WHERE msg_id = $1 AND receiver = $2`, d.msgID, d.receiver, status, attempts, msg, strconv.FormatInt(wait.Milliseconds(), 10)+" milliseconds"); err != nil {
		a.deps.Log.Warn().Err(err).Str("msg_id", d.msgID).Msg("mark delivery")
	}
}

// sendWebhook posts the alert event envelope to a webhook, signed as the
// auditor signs notifications (X-Facho-Signature over
// "<timestamp>.<body>"); X-Facho-Notification is alert:<id>:<state>, the
// same on every retry: receivers deduplicate on it.
func (a *alerter) sendWebhook(ctx context.Context, d delivery) error {
	if d.url == "" {
		return fmt.Errorf("%w: webhook deleted", errPermanent)
	}
	if a.deps.Box == nil {
		return errors.New("no secret key: cannot open the webhook secret")
	}
	sec, err := a.deps.Box.Open(d.secretEnc)
	if err != nil {
		return errors.New("cannot open the webhook secret (wrong FACHO_SECRET_KEY?)")
	}
	ts := a.deps.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(d.payload))
	if err != nil {
		return fmt.Errorf("%w: webhook request: %v", errPermanent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(auditor.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(auditor.HeaderSignature, auditor.Sign(sec, ts, d.payload))
	req.Header.Set(auditor.HeaderEvent, "alert."+d.state)
	req.Header.Set(auditor.HeaderNotification, d.msgID)
	req.Header.Set(auditor.HeaderAttempt, strconv.Itoa(d.attempts+1))
	return do(a.deps.Client, req)
}

func do(c *http.Client, req *http.Request) error {
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("post %s: %w", redactURL(req.URL.String()), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post %s: status %d: %s", redactURL(req.URL.String()), resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// amAlert is one alert of Alertmanager's v2 API.
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       *time.Time        `json:"endsAt,omitempty"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// toAM is an alert as Alertmanager takes it: labels alertname (the rule),
// severity, olt_id, olt_name, pon, onu_id, serial, description,
// incident_id (empty ones left out), annotation summary.
func toAM(al streams.Alert) amAlert {
	l := map[string]string{"alertname": al.Rule, "severity": al.Severity}
	set := func(k, v string) {
		if v != "" {
			l[k] = v
		}
	}
	set("olt_id", al.OLTID)
	set("olt_name", al.OLTName)
	set("pon", al.Pon)
	if al.ONUID != nil {
		set("onu_id", strconv.FormatInt(*al.ONUID, 10))
	}
	set("serial", al.Serial)
	set("description", al.Description)
	set("incident_id", al.IncidentID)
	for k, v := range al.Labels {
		if _, ok := l[k]; !ok {
			set(k, v)
		}
	}
	ann := map[string]string{"summary": al.Summary, "alert_id": al.ID}
	if al.Cause != "" {
		ann["cause"] = al.Cause
	}
	if al.Value != nil {
		ann["value"] = strconv.FormatFloat(*al.Value, 'f', -1, 64) + " " + al.Unit
	}
	return amAlert{Labels: l, Annotations: ann, StartsAt: al.StartsAt, EndsAt: al.EndsAt}
}

// postAlertmanager posts alerts to every configured Alertmanager (all
// must take them: each instance of a cluster is told, as Prometheus does).
func (a *alerter) postAlertmanager(ctx context.Context, alerts []streams.Alert) error {
	if len(alerts) == 0 {
		return nil
	}
	body := make([]amAlert, len(alerts))
	for i, al := range alerts {
		body[i] = toAM(al)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode alerts: %w", err)
	}
	var errs []error
	for _, u := range a.cfg.AlertmanagerURLs {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u+"/api/v2/alerts", bytes.NewReader(b))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		req.Header.Set("Content-Type", "application/json")
		if err := do(a.deps.Client, req); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// resendLoop re-sends every firing, notified, unacknowledged alert to
// Alertmanager every ResendInterval: it resolves an alert it stops
// hearing about.
func (a *alerter) resendLoop(ctx context.Context) error {
	t := time.NewTicker(a.cfg.ResendInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		a.mu.Lock()
		var alerts []streams.Alert
		for _, key := range sortedKeys(a.eng.active) {
			act := a.eng.active[key]
			if act.Notify && !act.Pending && !act.Acked {
				alerts = append(alerts, act.A)
			}
		}
		a.mu.Unlock()
		for len(alerts) > 0 {
			n := min(len(alerts), 500)
			if err := a.postAlertmanager(ctx, alerts[:n]); err != nil && ctx.Err() == nil {
				a.deps.Log.Warn().Str("error", err.Error()).Msg("alertmanager re-send")
				break
			}
			alerts = alerts[n:]
		}
	}
}
