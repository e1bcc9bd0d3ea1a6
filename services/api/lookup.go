package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// lastMsg returns the latest message on subject, nil when there is none.
func (s *server) lastMsg(ctx context.Context, subject string) (*jetstream.RawStreamMsg, *apiError) {
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
	return msg, nil
}

// decodeAs decodes msg as T, nil when it is another event type.
func decodeAs[T streams.Event](msg *jetstream.RawStreamMsg) *T {
	if msg == nil {
		return nil
	}
	var v T
	env, err := streams.DecodeEnvelope(msg.Data)
	if err != nil || env.Type != v.EventType() {
		return nil
	}
	if err := streams.DecodeData(env, &v); err != nil {
		return nil
	}
	return &v
}

// current returns the entity whose latest event on subject is of type T,
// nil when there is none or it was deleted (its latest event is another
// type). The config stream is the truth: the Postgres read model lags it by
// a few milliseconds, so a just-created brand would look missing there.
func current[T streams.Event](ctx context.Context, s *server, subject string) (*T, *apiError) {
	msg, err := s.lastMsg(ctx, subject)
	if err != nil {
		return nil, err
	}
	return decodeAs[T](msg), nil
}

// msgID is the Nats-Msg-Id of a request's event: from the client's
// Idempotency-Key when given, so a retried request inside the duplicate
// window is stored once.
func msgID(r *http.Request, subject string) string {
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		return uuid.NewSHA1(uuid.NameSpaceURL, []byte(streams.MsgID("api", key, r.Method, subject))).String()
	}
	return uuid.NewString()
}

// publish records a configuration event.
func (s *server) publish(r *http.Request, subject string, ev streams.Event, opts ...jetstream.PublishOpt) *apiError {
	return s.publishID(r, msgID(r, subject), subject, ev, opts...)
}

func (s *server) publishID(r *http.Request, id, subject string, ev streams.Event, opts ...jetstream.PublishOpt) *apiError {
	b, err := streams.EncodeWithID(id, s.cfg.Source, s.deps.Now(), ev)
	if err != nil {
		return &apiError{Status: http.StatusInternalServerError, Msg: "encode event"}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.PublishTimeout)
	defer cancel()
	if _, err := s.deps.JS.Publish(ctx, subject, b, append(opts, jetstream.WithMsgID(id))...); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			return conflict("changed by another request meanwhile; retry")
		}
		s.deps.Log.Warn().Err(err).Str("subject", subject).Msg("publish configuration event")
		return unavailable("configuration stream")
	}
	return nil
}

// createNew publishes ev on subject unless an entity of ev's type already
// lives there (409), atomically: the publish expects the subject's last
// sequence to be the one looked at. A retry of the same create (same
// Idempotency-Key) answers 201 again. It answers 201 with body and the new
// resource's location.
func createNew[T streams.Event](s *server, w http.ResponseWriter, r *http.Request, subject string, ev T, what, location string, body any) *apiError {
	msg, aerr := s.lastMsg(r.Context(), subject)
	if aerr != nil {
		return aerr
	}
	id := msgID(r, subject)
	var seq uint64
	if msg != nil {
		seq = msg.Sequence
		if decodeAs[T](msg) != nil {
			if r.Header.Get("Idempotency-Key") != "" && msg.Header.Get("Nats-Msg-Id") == id {
				w.Header().Set("Location", location)
				writeJSON(w, http.StatusCreated, body)
				return nil
			}
			return conflict("%s already exists", what)
		}
	}
	if err := s.publishID(r, id, subject, ev, jetstream.WithExpectLastSequencePerSubject(seq)); err != nil {
		if err.Status == http.StatusConflict {
			return conflict("%s already exists", what)
		}
		return err
	}
	w.Header().Set("Location", location)
	writeJSON(w, http.StatusCreated, body)
	return nil
}

// accepted publishes ev and answers 202 with body.
func (s *server) accepted(w http.ResponseWriter, r *http.Request, subject string, ev streams.Event, body any) *apiError {
	if err := s.publish(r, subject, ev); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, body)
	return nil
}

func newID() string { return uuid.NewString() }
