package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// current returns the entity whose latest event on subject is of type T,
// nil when there is none or it was deleted (its latest event is another
// type). The config stream is the truth: the Postgres read model lags it by
// a few milliseconds, so a just-created brand would look missing there.
func current[T streams.Event](ctx context.Context, s *server, subject string) (*T, *apiError) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.PublishTimeout)
	defer cancel()
	msg, err := s.config.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		s.deps.Log.Warn().Err(err).Str("subject", subject).Msg("look up configuration")
		return nil, unavailable("configuration stream")
	}
	var v T
	env, err := streams.DecodeEnvelope(msg.Data)
	if err != nil || env.Type != v.EventType() {
		return nil, nil
	}
	if err := streams.DecodeData(env, &v); err != nil {
		return nil, nil
	}
	return &v, nil
}

// publish records a configuration event. The Nats-Msg-Id comes from the
// client's Idempotency-Key when given, so a retried request inside the
// duplicate window is stored once.
func (s *server) publish(r *http.Request, subject string, ev streams.Event) *apiError {
	id := uuid.NewString()
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		id = uuid.NewSHA1(uuid.NameSpaceURL, []byte(streams.MsgID("api", key, r.Method, subject))).String()
	}
	b, err := streams.EncodeWithID(id, s.cfg.Source, s.deps.Now(), ev)
	if err != nil {
		return &apiError{Status: http.StatusInternalServerError, Msg: "encode event"}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.PublishTimeout)
	defer cancel()
	if _, err := s.deps.JS.Publish(ctx, subject, b, jetstream.WithMsgID(id)); err != nil {
		s.deps.Log.Warn().Err(err).Str("subject", subject).Msg("publish configuration event")
		return unavailable("configuration stream")
	}
	return nil
}

// newID is the id of a resource created without one.
// created publishes ev on subject and answers 201 with body and the new
// resource's location.
func (s *server) created(w http.ResponseWriter, r *http.Request, subject string, ev streams.Event, location string, body any) *apiError {
	if err := s.publish(r, subject, ev); err != nil {
		return err
	}
	w.Header().Set("Location", location)
	writeJSON(w, http.StatusCreated, body)
	return nil
}

func newID() string { return uuid.NewString() }
