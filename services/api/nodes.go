package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// The schedule of nodes (a job on an OLT) as the planner persists it in
// the KV bucket streams.BucketSchedule: next_run_at, last_run_at,
// last_status, state and the execution in flight.

// listOLTNodes serves GET /api/v1/olts/{id}/nodes: every node of the OLT,
// ordered by job id.
func (s *server) listOLTNodes(w http.ResponseWriter, r *http.Request) *apiError {
	id, _, aerr := s.existingOLT(r)
	if aerr != nil {
		return aerr
	}
	ctx, cancel := s.query(r)
	defer cancel()
	nodes, err := s.nodesOf(ctx, id)
	if err != nil {
		s.deps.Log.Warn().Err(err).Msg("read schedule")
		return unavailable("schedule")
	}
	writeJSON(w, http.StatusOK, nodeList{OLTID: id, Count: len(nodes), Nodes: nodes})
	return nil
}

// getNode serves GET /api/v1/nodes/{node_id}.
func (s *server) getNode(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("node_id")
	job, olt, ok := strings.Cut(id, ".")
	if !ok || !streams.ValidID(job) || !streams.ValidID(olt) {
		return notFound("no node %q (a node id is <job_id>.<olt_id>)", id)
	}
	ctx, cancel := s.query(r)
	defer cancel()
	ns, found, err := s.node(ctx, id)
	if err != nil {
		s.deps.Log.Warn().Err(err).Msg("read schedule")
		return unavailable("schedule")
	}
	if !found {
		return notFound("no node %q", id)
	}
	writeJSON(w, http.StatusOK, ns)
	return nil
}

func (s *server) node(ctx context.Context, key string) (streams.NodeSchedule, bool, error) {
	var ns streams.NodeSchedule
	e, err := s.schedule.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ns, false, nil
	}
	if err != nil {
		return ns, false, err
	}
	if err := json.Unmarshal(e.Value(), &ns); err != nil {
		return ns, false, err
	}
	return ns, true, nil
}

func (s *server) nodesOf(ctx context.Context, olt string) ([]streams.NodeSchedule, error) {
	lister, err := s.schedule.ListKeysFiltered(ctx, "*."+olt)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return []streams.NodeSchedule{}, nil
	}
	if err != nil {
		return nil, err
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]streams.NodeSchedule, 0, len(keys))
	for _, k := range keys {
		ns, ok, err := s.node(ctx, k)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, ns)
		}
	}
	return out, nil
}
