package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// runNode serves POST /api/v1/pollers/nodes/{node_id}/run/ (seed 004): a
// manual run, dispatched by the planner ahead of the OLT's queue without
// moving the node's schedule. 202 with the execution id; 404 for an
// unknown node; 409 when the OLT (or the node) is disabled. An
// Idempotency-Key makes a retried request the same run.
func (s *server) runNode(w http.ResponseWriter, r *http.Request) *apiError {
	nodeID := r.PathValue("node_id")
	job, olt, ok := strings.Cut(nodeID, ".")
	if !ok || !streams.ValidID(job) || !streams.ValidID(olt) {
		return notFound("no node %q (a node id is <job_id>.<olt_id>)", nodeID)
	}
	ctx, cancel := s.query(r)
	defer cancel()
	ns, found, err := s.node(ctx, nodeID)
	if err != nil {
		s.deps.Log.Warn().Err(err).Msg("read schedule")
		return unavailable("schedule")
	}
	if !found {
		return notFound("no node %q", nodeID)
	}
	o, aerr := current[streams.OLTUpserted](r.Context(), s, streams.SubjectOLT(olt))
	if aerr != nil {
		return aerr
	}
	switch {
	case o == nil:
		return notFound("no OLT %q", olt)
	case !o.Enabled:
		return &apiError{Status: http.StatusConflict, Msg: "OLT " + olt + " is disabled"}
	}
	if dis, aerr := s.autoDisabled(r.Context(), olt); aerr != nil {
		return aerr
	} else if dis != nil {
		return &apiError{Status: http.StatusConflict, Msg: "OLT " + olt + " is disabled: " + dis.Reason}
	}
	switch {
	case !ns.Enabled:
		return &apiError{Status: http.StatusConflict, Msg: "node " + nodeID + " is disabled: " + ns.DisabledReason}
	}
	id := uuid.NewString()
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		id = uuid.NewSHA1(uuid.NameSpaceURL, []byte(streams.MsgID("api", key, r.Method, nodeID))).String()
	}
	now := s.deps.Now().UTC()
	req := streams.NodeRunRequested{ExecutionID: id, NodeID: nodeID, JobID: job, OLTID: olt, RequestedAt: now}
	b, err := streams.EncodeWithID(id, s.cfg.Source, now, req)
	if err != nil {
		return &apiError{Status: http.StatusInternalServerError, Msg: "encode event"}
	}
	pctx, pcancel := context.WithTimeout(r.Context(), s.cfg.PublishTimeout)
	defer pcancel()
	if _, err := s.deps.JS.Publish(pctx, streams.SubjectManualRun(olt), b, jetstream.WithMsgID(streams.MsgID("manual-request", id))); err != nil {
		s.deps.Log.Warn().Err(err).Msg("publish manual run")
		return unavailable("schedule stream")
	}
	writeJSON(w, http.StatusAccepted, runAccepted{ExecutionID: id, NodeID: nodeID, JobID: job, OLTID: olt, RequestedAt: now})
	return nil
}

// autoDisabled returns the planner's auto-disable of an OLT when it is
// newer than the OLT's configuration; nil otherwise.
func (s *server) autoDisabled(ctx context.Context, olt string) (*streams.OLTAutoDisabled, *apiError) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.PublishTimeout)
	defer cancel()
	dis, err := s.config.GetLastMsgForSubject(ctx, streams.SubjectOLTDisabled(olt))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable("configuration stream")
	}
	cfg, err := s.config.GetLastMsgForSubject(ctx, streams.SubjectOLT(olt))
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, unavailable("configuration stream")
	}
	if cfg != nil && cfg.Sequence > dis.Sequence {
		return nil, nil // re-enabled (or changed) since
	}
	_, ev, err := streams.Decode[streams.OLTAutoDisabled](dis.Data)
	if err != nil {
		return nil, nil
	}
	return &ev, nil
}
