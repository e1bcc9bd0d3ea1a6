package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// getQueue serves GET /api/v1/pollers/queue/ (seed 004, Zabbix's queue):
// the active planner's report of the nodes waiting for their OLT, rewritten
// every planner tick. 503 when no planner is active (the report expires
// with the leader bucket's TTL).
func (s *server) getQueue(w http.ResponseWriter, r *http.Request) *apiError {
	ctx, cancel := s.query(r)
	defer cancel()
	e, err := s.leader.Get(ctx, streams.QueueKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return unavailable("queue report (no active planner)")
	}
	if err != nil {
		s.deps.Log.Warn().Err(err).Msg("read queue report")
		return unavailable("queue report")
	}
	var rep streams.QueueReport
	if err := json.Unmarshal(e.Value(), &rep); err != nil {
		s.deps.Log.Warn().Err(err).Msg("decode queue report")
		return unavailable("queue report")
	}
	writeJSON(w, http.StatusOK, queueAnswer{rep, max(s.deps.Now().Sub(rep.GeneratedAt), 0).Seconds()})
	return nil
}
