package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/facho-olt/facho/pkg/configrules"
	"github.com/facho-olt/facho/streams"
)

type jobRequest struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	BrandID           string   `json:"brand_id"`
	Kind              string   `json:"kind"`
	OIDIDs            []string `json:"oid_ids"`
	IntervalSeconds   int      `json:"interval_seconds"`
	MaxRetries        *int     `json:"max_retries" jsonschema:"description=retries of a failed execution: absent or 0 takes the default of the job's queue class (planner: discovery 3 and polling 2 by default); 1..10 that many; -1 none"`
	RetryDelaySeconds *int     `json:"retry_delay_seconds"`
	TimeoutSeconds    int      `json:"timeout_seconds"`
	Priority          *int     `json:"priority"`
	Enabled           *bool    `json:"enabled"`
}

// Job defaults (seed 000: retries 120 s apart; seed 003: discovery
// priority 90, the others 40). An unset max_retries is published as 0: the
// planner gives the job its queue class's retries (seed 001: discovery 3,
// polling 2; planner -class-*-max-retries).
const (
	defaultRetryDelaySeconds = 120
	priorityDiscovery        = 90
	priorityOther            = 40
)

func (s *server) jobEvent(r *http.Request, id string, req jobRequest) (streams.JobUpserted, *apiError) {
	ev := streams.JobUpserted{ID: id, Name: strings.TrimSpace(req.Name), BrandID: req.BrandID, Kind: req.Kind,
		IntervalSeconds: req.IntervalSeconds, RetryDelaySeconds: defaultRetryDelaySeconds,
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
	if err := fieldErr(configrules.IntervalSeconds("interval_seconds", req.IntervalSeconds)); err != nil {
		return ev, err
	}
	if req.MaxRetries != nil {
		if err := fieldErr(configrules.MaxRetries("max_retries", *req.MaxRetries)); err != nil {
			return ev, err
		}
		ev.MaxRetries = *req.MaxRetries
	}
	if req.RetryDelaySeconds != nil {
		if *req.RetryDelaySeconds < 1 || *req.RetryDelaySeconds > configrules.MaxRetryDelaySeconds {
			return ev, badField("retry_delay_seconds", "retry_delay_seconds must be 1..86400")
		}
		ev.RetryDelaySeconds = *req.RetryDelaySeconds
	}
	// 0 means the default of the kind (planner: discovery 300 s, get 60 s).
	if err := fieldErr(configrules.TimeoutSeconds("timeout_seconds", req.TimeoutSeconds)); err != nil {
		return ev, err
	}
	ev.Priority = priorityOther
	if req.Kind == streams.KindDiscovery {
		ev.Priority = priorityDiscovery
	}
	if req.Priority != nil {
		if err := fieldErr(configrules.Priority("priority", *req.Priority)); err != nil {
			return ev, err
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
	return createNew(s, w, r, streams.SubjectJob(ev.ID), ev, "job "+ev.ID, "/api/v1/jobs/"+ev.ID, ev)
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
	mr, rd, pr, en := prev.MaxRetries, prev.RetryDelaySeconds, prev.Priority, prev.Enabled
	req, err := decodeUpdate(s, r, jobRequest{ID: prev.ID, Name: prev.Name, BrandID: prev.BrandID, Kind: prev.Kind, OIDIDs: prev.OIDIDs,
		IntervalSeconds: prev.IntervalSeconds, MaxRetries: &mr, RetryDelaySeconds: &rd, TimeoutSeconds: prev.TimeoutSeconds, Priority: &pr, Enabled: &en})
	if err != nil {
		return err
	}
	if err := sameID(req.ID, prev.ID); err != nil {
		return err
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
	writeJSON(w, http.StatusAccepted, deleted{ID: job.ID, Deleted: true})
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
	return createNew(s, w, r, streams.SubjectAssignment(ev.JobID, ev.OLTID), ev, "assignment of job "+ev.JobID+" to OLT "+ev.OLTID,
		"/api/v1/jobs/"+ev.JobID+"/olts/"+ev.OLTID, ev)
}

// existingAssignment reads the path's job and OLT ids of an assignment
// that must exist (404 for an unknown job too).
func (s *server) existingAssignment(r *http.Request) (*streams.JobOLTAssigned, *apiError) {
	if _, err := s.existingJob(r); err != nil {
		return nil, err
	}
	jobID, oltID := r.PathValue("id"), r.PathValue("olt_id")
	if !streams.ValidID(oltID) {
		return nil, notFound("no assignment of job %q to OLT %q", jobID, oltID)
	}
	a, err := current[streams.JobOLTAssigned](r.Context(), s, streams.SubjectAssignment(jobID, oltID))
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, notFound("no assignment of job %q to OLT %q", jobID, oltID)
	}
	return a, nil
}

func (s *server) unassign(w http.ResponseWriter, r *http.Request) *apiError {
	a, err := s.existingAssignment(r)
	if err != nil {
		return err
	}
	jobID, oltID := a.JobID, a.OLTID
	ev := streams.JobOLTUnassigned{JobID: jobID, OLTID: oltID}
	if err := s.publish(r, streams.SubjectAssignment(jobID, oltID), ev); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, assignmentDeleted{JobID: jobID, OLTID: oltID, Deleted: true})
	return nil
}

func (s *server) getJob(w http.ResponseWriter, r *http.Request) *apiError {
	job, err := s.existingJob(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, job)
	return nil
}

// enableJob serves POST .../enable and .../disable (an operator's action).
func (s *server) enableJob(w http.ResponseWriter, r *http.Request) *apiError {
	job, err := s.existingJob(r)
	if err != nil {
		return err
	}
	ev := *job
	ev.Enabled = strings.HasSuffix(r.URL.Path, "/enable")
	return s.accepted(w, r, streams.SubjectJob(ev.ID), ev, ev)
}

func (s *server) getAssignment(w http.ResponseWriter, r *http.Request) *apiError {
	a, err := s.existingAssignment(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// updateAssignment serves PUT and PATCH: only enabled can change.
func (s *server) updateAssignment(w http.ResponseWriter, r *http.Request) *apiError {
	a, err := s.existingAssignment(r)
	if err != nil {
		return err
	}
	en := a.Enabled
	req, err := decodeUpdate(s, r, assignRequest{OLTID: a.OLTID, Enabled: &en})
	if err != nil {
		return err
	}
	if req.OLTID != "" && req.OLTID != a.OLTID {
		return badField("olt_id", "olt_id in the body differs from the path")
	}
	ev := *a
	if req.Enabled != nil {
		ev.Enabled = *req.Enabled
	}
	return s.accepted(w, r, streams.SubjectAssignment(ev.JobID, ev.OLTID), ev, ev)
}

// enableAssignment serves POST .../enable and .../disable.
func (s *server) enableAssignment(w http.ResponseWriter, r *http.Request) *apiError {
	a, err := s.existingAssignment(r)
	if err != nil {
		return err
	}
	ev := *a
	ev.Enabled = strings.HasSuffix(r.URL.Path, "/enable")
	return s.accepted(w, r, streams.SubjectAssignment(ev.JobID, ev.OLTID), ev, ev)
}

type assignmentRow struct {
	JobID     string     `json:"job_id"`
	JobName   string     `json:"job_name"`
	OLTID     string     `json:"olt_id"`
	OLTName   string     `json:"olt_name"`
	Enabled   bool       `json:"enabled"`
	LastRunAt *time.Time `json:"last_run_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// lastRunAt is an assignment's last run: when the latest run of the job on
// the OLT that ran (succeeded or failed) ended, from the executions read
// model (index executions_job_last_run), so it is as current as the
// executions and rebuilt with them.
const lastRunAt = `(SELECT max(e.finished_at) FROM executions e
	WHERE e.olt_id = a.olt_id AND e.job_id = a.job_id AND e.status IN ('SUCCESS', 'FAILED') AND e.finished_at IS NOT NULL)`

func (s *server) assignmentList(w http.ResponseWriter, r *http.Request, spec listSpec) *apiError {
	enabled, aerr := boolParam(r, "enabled")
	if aerr != nil {
		return aerr
	}
	spec.From = `snmp_job_olts a LEFT JOIN snmp_jobs j ON j.id = a.job_id LEFT JOIN olts o ON o.id = a.olt_id`
	spec.Cols = `a.job_id, coalesce(j.name, ''), a.olt_id, coalesce(o.name, ''), a.enabled, ` + lastRunAt + `, a.updated_at`
	spec.Search = []string{"a.job_id", "a.olt_id", "j.name", "o.name"}
	spec.Sorts = map[string]string{"job_id": "a.job_id", "olt_id": "a.olt_id", "job_name": "j.name", "olt_name": "o.name",
		"enabled": "a.enabled", "last_run_at": lastRunAt, "updated_at": "a.updated_at"}
	spec.DefaultSort, spec.TieBreak = "a.job_id, a.olt_id", "a.job_id, a.olt_id"
	spec.Where = append(spec.Where, "NOT a.deleted")
	if enabled != nil {
		spec.filter("a.enabled = $?", *enabled)
	}
	out, pi, aerr := listPage[assignmentRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("assignments", out, len(out)))
	return nil
}

// listJobAssignments lists the OLTs of a job (404 for an unknown job).
func (s *server) listJobAssignments(w http.ResponseWriter, r *http.Request) *apiError {
	job, err := s.existingJob(r)
	if err != nil {
		return err
	}
	var spec listSpec
	spec.filter("a.job_id = $?", job.ID)
	return s.assignmentList(w, r, spec)
}

// listAssignments lists every assignment, optionally of one job or OLT.
func (s *server) listAssignments(w http.ResponseWriter, r *http.Request) *apiError {
	var spec listSpec
	for _, name := range []string{"job_id", "olt_id"} {
		v, aerr := idParam(r, name)
		if aerr != nil {
			return aerr
		}
		if v != "" {
			spec.filter("a."+name+" = $?", v)
		}
	}
	return s.assignmentList(w, r, spec)
}
