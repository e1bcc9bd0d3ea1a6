package api

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/facho-olt/facho/streams"
)

// Webhooks are the API's own table, like the users: operational settings
// the auditor reads to deliver notifications, not pipeline configuration
// (no event, no projection). The secret is sealed with pkg/secret before
// it is stored and never shown again; the auditor opens it to sign.

type webhookRequest struct {
	ID  string  `json:"id"`
	URL *string `json:"url"`
	// Secret signs the deliveries (HMAC-SHA256); 16..256 bytes. When
	// absent on create, one is generated and shown once in the answer.
	Secret *string `json:"secret"`
	// Events are the notification kinds it receives: quota_violation,
	// olt_disabled, repeated_failures, olt_enabled.
	Events  []string `json:"events"`
	Enabled *bool    `json:"enabled"`
}

type webhookView struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Enabled   bool      `json:"enabled"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

const webhookCols = `id, url, events, enabled, created_at, updated_at`

func checkWebhookURL(v string) *apiError {
	u, err := url.Parse(v)
	switch {
	case v == "" || len(v) > 2000 || err != nil:
		return badField("url", "url must be an absolute http or https URL of at most 2000 characters")
	case u.Scheme != "http" && u.Scheme != "https":
		return badField("url", "url must use http or https")
	case u.Host == "" || u.Hostname() == "":
		return badField("url", "url must name a host")
	case u.User != nil:
		// It would be stored and logged in plaintext: the secret signs.
		return badField("url", "url must not carry credentials; the secret signs the deliveries")
	case strings.ContainsAny(v, " \t\r\n\x00"):
		return badField("url", "url must not contain spaces or control characters")
	}
	return nil
}

func checkWebhookEvents(events []string) ([]string, *apiError) {
	if len(events) == 0 {
		return nil, badField("events", "events must list at least one of %s", strings.Join(streams.WebhookKinds(), ", "))
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range events {
		if !oneOf(e, streams.WebhookKinds()) {
			return nil, badField("events", "events: %q is not one of %s", e, strings.Join(streams.WebhookKinds(), ", "))
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	sort.Strings(out)
	return out, nil
}

// sealWebhookSecret checks and seals the secret.
func (s *server) sealWebhookSecret(secretText string) (string, *apiError) {
	if len(secretText) < 16 || len(secretText) > 256 || strings.ContainsAny(secretText, "\x00\r\n") {
		return "", badField("secret", "secret must be 16..256 bytes without control characters")
	}
	sealed, err := s.deps.Box.Seal(secretText)
	if err != nil {
		return "", &apiError{Status: http.StatusInternalServerError, Msg: "seal secret"}
	}
	return sealed, nil
}

func (s *server) createWebhook(w http.ResponseWriter, r *http.Request) *apiError {
	var req webhookRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	var aerr *apiError
	if req.ID, aerr = newOrCheckedID(req.ID); aerr != nil {
		return aerr
	}
	if req.URL == nil {
		return badField("url", "url is required")
	}
	if aerr := checkWebhookURL(*req.URL); aerr != nil {
		return aerr
	}
	events, aerr := checkWebhookEvents(req.Events)
	if aerr != nil {
		return aerr
	}
	generated := ""
	if req.Secret == nil {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return &apiError{Status: http.StatusInternalServerError, Msg: "generate secret"}
		}
		generated = hex.EncodeToString(b)
		req.Secret = &generated
	}
	sealed, aerr := s.sealWebhookSecret(*req.Secret)
	if aerr != nil {
		return aerr
	}
	enabled := req.Enabled == nil || *req.Enabled
	ctx, cancel := s.query(r)
	defer cancel()
	rows, err := s.deps.DB.Query(ctx, `INSERT INTO webhooks (id, url, secret_enc, events, enabled) VALUES ($1, $2, $3, $4, $5)
		RETURNING `+webhookCols, req.ID, *req.URL, sealed, events, enabled)
	if err != nil {
		return s.readModelDown(err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[webhookView])
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return conflict("webhook %q already exists", req.ID)
	}
	if err != nil {
		return s.readModelDown(err)
	}
	w.Header().Set("Location", "/api/v1/webhooks/"+v.ID)
	// A generated secret is shown this once.
	writeJSON(w, http.StatusCreated, webhookCreated{Webhook: v, Secret: generated})
	return nil
}

func (s *server) webhookID(r *http.Request) (string, *apiError) {
	id := r.PathValue("id")
	if !streams.ValidID(id) {
		return "", notFound("no webhook %q", id)
	}
	return id, nil
}

func (s *server) listWebhooks(w http.ResponseWriter, r *http.Request) *apiError {
	spec := listSpec{From: "webhooks", Cols: webhookCols, Search: []string{"id", "url"},
		Sorts:       map[string]string{"id": "id", "url": "url", "created_at": "created_at"},
		DefaultSort: "id", TieBreak: "id"}
	enabled, aerr := boolParam(r, "enabled")
	if aerr != nil {
		return aerr
	}
	if enabled != nil {
		spec.filter("enabled = $?", *enabled)
	}
	out, pi, aerr := listPage[webhookView](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("webhooks", out, len(out)))
	return nil
}

func (s *server) getWebhook(w http.ResponseWriter, r *http.Request) *apiError {
	id, aerr := s.webhookID(r)
	if aerr != nil {
		return aerr
	}
	rows, aerr := listRows[webhookView](s, r, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1`, id)
	if aerr != nil {
		return aerr
	}
	if len(rows) == 0 {
		return notFound("no webhook %q", id)
	}
	writeJSON(w, http.StatusOK, rows[0])
	return nil
}

// updateWebhook changes the fields given (PUT and PATCH alike): the
// secret is kept when absent.
func (s *server) updateWebhook(w http.ResponseWriter, r *http.Request) *apiError {
	id, aerr := s.webhookID(r)
	if aerr != nil {
		return aerr
	}
	var req webhookRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	if req.ID != "" && req.ID != id {
		return badField("id", "id in the body differs from the path")
	}
	var urlArg, sealedArg *string
	var eventsArg []string
	if req.URL != nil {
		if aerr := checkWebhookURL(*req.URL); aerr != nil {
			return aerr
		}
		urlArg = req.URL
	}
	if req.Events != nil {
		if eventsArg, aerr = checkWebhookEvents(req.Events); aerr != nil {
			return aerr
		}
	}
	if req.Secret != nil {
		sealed, aerr := s.sealWebhookSecret(*req.Secret)
		if aerr != nil {
			return aerr
		}
		sealedArg = &sealed
	}
	rows, aerr := listRows[webhookView](s, r, `UPDATE webhooks SET url = coalesce($2, url), secret_enc = coalesce($3, secret_enc),
			events = coalesce($4, events), enabled = coalesce($5, enabled), updated_at = now()
		WHERE id = $1 RETURNING `+webhookCols, id, urlArg, sealedArg, eventsArg, req.Enabled)
	if aerr != nil {
		return aerr
	}
	if len(rows) == 0 {
		return notFound("no webhook %q", id)
	}
	writeJSON(w, http.StatusOK, rows[0])
	return nil
}

// deleteWebhook removes a webhook and its delivery records.
func (s *server) deleteWebhook(w http.ResponseWriter, r *http.Request) *apiError {
	id, aerr := s.webhookID(r)
	if aerr != nil {
		return aerr
	}
	ctx, cancel := s.query(r)
	defer cancel()
	tag, err := s.deps.DB.Exec(ctx, `DELETE FROM webhooks WHERE id = $1`, id)
	if err != nil {
		return s.readModelDown(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("no webhook %q", id)
	}
	writeJSON(w, http.StatusOK, deleted{ID: id, Deleted: true})
	return nil
}

type deliveryRow struct {
	ID               int64      `json:"id"`
	NotificationID   string     `json:"notification_id"`
	Kind             string     `json:"kind"`
	OLTID            string     `json:"olt_id"`
	Status           string     `json:"status"`
	Attempts         int        `json:"attempts"`
	LastError        string     `json:"last_error"`
	LastStatusCode   *int       `json:"last_status_code"`
	NextAttemptAt    time.Time  `json:"next_attempt_at"`
	CreatedAt        time.Time  `json:"created_at"`
	LastAttemptAt    *time.Time `json:"last_attempt_at"`
	DeliveredAt      *time.Time `json:"delivered_at"`
	NotificationTime time.Time  `json:"notification_time"`
}

// listDeliveries lists a webhook's deliveries, newest first: status
// (pending, delivered, failed), attempts, last error.
func (s *server) listDeliveries(w http.ResponseWriter, r *http.Request) *apiError {
	id, aerr := s.webhookID(r)
	if aerr != nil {
		return aerr
	}
	spec := listSpec{From: "webhook_deliveries d JOIN notifications n ON n.id = d.notification_id",
		Cols: `d.id, d.notification_id, n.kind, n.olt_id, d.status, d.attempts, d.last_error, d.last_status_code, d.next_attempt_at,
			d.created_at, d.last_attempt_at, d.delivered_at, n.created_at`,
		Sorts:       map[string]string{"created_at": "d.created_at", "status": "d.status", "attempts": "d.attempts"},
		DefaultSort: "d.created_at DESC", TieBreak: "d.id DESC"}
	spec.filter("d.webhook_id = $?", id)
	switch st := r.URL.Query().Get("status"); st {
	case "":
	case "pending", "delivered", "failed":
		spec.filter("d.status = $?", st)
	default:
		return badField("status", "status must be pending, delivered or failed")
	}
	out, pi, aerr := listPage[deliveryRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("deliveries", out, len(out)))
	return nil
}
