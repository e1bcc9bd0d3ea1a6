package api

import (
	"net/http"
	"strings"

	"github.com/facho-olt/facho/streams"
)

type jobRequest struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	BrandID           string   `json:"brand_id"`
	Kind              string   `json:"kind"`
	OIDIDs            []string `json:"oid_ids"`
	IntervalSeconds   int      `json:"interval_seconds"`
	MaxRetries        *int     `json:"max_retries"`
	RetryDelaySeconds *int     `json:"retry_delay_seconds"`
	TimeoutSeconds    int      `json:"timeout_seconds"`
	Priority          *int     `json:"priority"`
	Enabled           *bool    `json:"enabled"`
}

// Job defaults (seed 000: 3 retries, 120 s apart; seed 003: discovery
// priority 90, the others 40).
const (
	defaultMaxRetries        = 3
	defaultRetryDelaySeconds = 120
	priorityDiscovery        = 90
	priorityOther            = 40
	minIntervalSeconds       = 10
	maxIntervalSeconds       = 7 * 24 * 3600
)

func (s *server) jobEvent(r *http.Request, id string, req jobRequest) (streams.JobUpserted, *apiError) {
	ev := streams.JobUpserted{ID: id, Name: strings.TrimSpace(req.Name), BrandID: req.BrandID, Kind: req.Kind,
		IntervalSeconds: req.IntervalSeconds, MaxRetries: defaultMaxRetries, RetryDelaySeconds: defaultRetryDelaySeconds,
		TimeoutSeconds: req.TimeoutSeconds, Enabled: true}
	if err := checkName("name", req.Name); err != nil {
		return ev, err
	}
	if err := s.checkBrand(r, req.BrandID); err != nil {
		return ev, err
	}
	if !oneOf(req.Kind, Kinds) {
		return ev, badField("kind", "kind must be one of %s", strings.Join(Kinds, ", "))
	}
	if req.IntervalSeconds < minIntervalSeconds || req.IntervalSeconds > maxIntervalSeconds {
		return ev, badField("interval_seconds", "interval_seconds must be %d..%d", minIntervalSeconds, maxIntervalSeconds)
	}
	if req.MaxRetries != nil {
		if *req.MaxRetries < 0 || *req.MaxRetries > 10 {
			return ev, badField("max_retries", "max_retries must be 0..10")
		}
		ev.MaxRetries = *req.MaxRetries
	}
	if req.RetryDelaySeconds != nil {
		if *req.RetryDelaySeconds < 1 || *req.RetryDelaySeconds > 86400 {
			return ev, badField("retry_delay_seconds", "retry_delay_seconds must be 1..86400")
		}
		ev.RetryDelaySeconds = *req.RetryDelaySeconds
	}
	// 0 means the default of the kind (planner: discovery 300 s, get 60 s).
	if req.TimeoutSeconds < 0 || req.TimeoutSeconds > 3600 {
		return ev, badField("timeout_seconds", "timeout_seconds must be 0 (default of the kind) or 1..3600")
	}
	ev.Priority = priorityOther
	if req.Kind == streams.KindDiscovery {
		ev.Priority = priorityDiscovery
	}
	if req.Priority != nil {
		if *req.Priority < 0 || *req.Priority > 100 {
			return ev, badField("priority", "priority must be 0..100")
		}
		ev.Priority = *req.Priority
	}
	if req.Enabled != nil {
		ev.Enabled = *req.Enabled
	}
	if len(req.OIDIDs) == 0 {
		return ev, badField("oid_ids", "oid_ids needs at least one OID")
	}
	seen := map[string]bool{}
	for _, oid := range req.OIDIDs {
		if seen[oid] {
			continue
		}
		seen[oid] = true
		if !streams.ValidID(oid) {
			return ev, badField("oid_ids", "oid id %q is not a valid id", oid)
		}
		o, err := current[streams.OIDUpserted](r.Context(), s, streams.SubjectOID(oid))
		if err != nil {
			return ev, err
		}
		if o == nil {
			return ev, badField("oid_ids", "OID %q does not exist", oid)
		}
		if o.BrandID != req.BrandID {
			return ev, badField("oid_ids", "OID %q belongs to brand %q, not %q", oid, o.BrandID, req.BrandID)
		}
		ev.OIDIDs = append(ev.OIDIDs, oid)
	}
	return ev, nil
}

func (s *server) createJob(w http.ResponseWriter, r *http.Request) *apiError {
	var req jobRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	var aerr *apiError
	if req.ID, aerr = newOrCheckedID(req.ID); aerr != nil {
		return aerr
	}
	ev, err := s.jobEvent(r, req.ID, req)
	if err != nil {
		return err
	}
	return s.created(w, r, streams.SubjectJob(ev.ID), ev, "/api/v1/jobs/"+ev.ID, ev)
}

// existingJob reads the path id of a job that must exist.
func (s *server) existingJob(r *http.Request) (*streams.JobUpserted, *apiError) {
	id := r.PathValue("id")
	if !streams.ValidID(id) {
		return nil, notFound("no job %q", id)
	}
	job, err := current[streams.JobUpserted](r.Context(), s, streams.SubjectJob(id))
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, notFound("no job %q", id)
	}
	return job, nil
}

func (s *server) updateJob(w http.ResponseWriter, r *http.Request) *apiError {
	prev, err := s.existingJob(r)
	if err != nil {
		return err
	}
	var req jobRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	if req.ID != "" && req.ID != prev.ID {
		return badField("id", "id in the body differs from the path")
	}
	ev, err := s.jobEvent(r, prev.ID, req)
	if err != nil {
		return err
	}
	if err := s.publish(r, streams.SubjectJob(ev.ID), ev); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, ev)
	return nil
}

func (s *server) deleteJob(w http.ResponseWriter, r *http.Request) *apiError {
	job, err := s.existingJob(r)
	if err != nil {
		return err
	}
	if err := s.publish(r, streams.SubjectJob(job.ID), streams.JobDeleted{ID: job.ID}); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"id": job.ID, "deleted": true})
	return nil
}

type assignRequest struct {
	OLTID   string `json:"olt_id"`
	Enabled *bool  `json:"enabled"`
}

func (s *server) assign(w http.ResponseWriter, r *http.Request) *apiError {
	job, err := s.existingJob(r)
	if err != nil {
		return err
	}
	var req assignRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	if err := checkID("olt_id", req.OLTID); err != nil {
		return err
	}
	olt, err := current[streams.OLTUpserted](r.Context(), s, streams.SubjectOLT(req.OLTID))
	if err != nil {
		return err
	}
	if olt == nil {
		return badField("olt_id", "OLT %q does not exist", req.OLTID)
	}
	if olt.BrandID != job.BrandID {
		return badField("olt_id", "OLT %q is of brand %q, the job of brand %q", req.OLTID, olt.BrandID, job.BrandID)
	}
	ev := streams.JobOLTAssigned{JobID: job.ID, OLTID: req.OLTID, Enabled: true}
	if req.Enabled != nil {
		ev.Enabled = *req.Enabled
	}
	return s.created(w, r, streams.SubjectAssignment(ev.JobID, ev.OLTID), ev, "/api/v1/jobs/"+ev.JobID+"/olts/"+ev.OLTID, ev)
}

func (s *server) unassign(w http.ResponseWriter, r *http.Request) *apiError {
	jobID, oltID := r.PathValue("id"), r.PathValue("olt_id")
	if !streams.ValidID(jobID) || !streams.ValidID(oltID) {
		return notFound("no assignment of job %q to OLT %q", jobID, oltID)
	}
	a, err := current[streams.JobOLTAssigned](r.Context(), s, streams.SubjectAssignment(jobID, oltID))
	if err != nil {
		return err
	}
	if a == nil {
		return notFound("no assignment of job %q to OLT %q", jobID, oltID)
	}
	ev := streams.JobOLTUnassigned{JobID: jobID, OLTID: oltID}
	if err := s.publish(r, streams.SubjectAssignment(jobID, oltID), ev); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"job_id": jobID, "olt_id": oltID, "deleted": true})
	return nil
}
