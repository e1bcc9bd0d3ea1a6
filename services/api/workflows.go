package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/facho-olt/facho/streams"
)

// Workflows (seed 004): on one OLT, a master node (a job assigned to the
// OLT) and its chained jobs run as one composite node under one lease.

type workflowRequest struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	OLTID         string   `json:"olt_id"`
	MasterJobID   string   `json:"master_job_id"`
	ChainJobIDs   []string `json:"chain_job_ids"`
	StopOnFailure bool     `json:"stop_on_failure"`
	Enabled       *bool    `json:"enabled"`
}

const maxChain = 20

func (s *server) workflowEvent(r *http.Request, id string, req workflowRequest) (streams.WorkflowUpserted, *apiError) {
	ev := streams.WorkflowUpserted{ID: id, Name: strings.TrimSpace(req.Name), OLTID: req.OLTID, MasterJobID: req.MasterJobID,
		StopOnFailure: req.StopOnFailure, Enabled: true}
	if err := checkName("name", req.Name); err != nil {
		return ev, err
	}
	if err := checkID("olt_id", req.OLTID); err != nil {
		return ev, err
	}
	olt, aerr := current[streams.OLTUpserted](r.Context(), s, streams.SubjectOLT(req.OLTID))
	if aerr != nil {
		return ev, aerr
	}
	if olt == nil {
		return ev, badField("olt_id", "OLT %q does not exist", req.OLTID)
	}
	job := func(field, id string) *apiError {
		if err := checkID(field, id); err != nil {
			return err
		}
		j, aerr := current[streams.JobUpserted](r.Context(), s, streams.SubjectJob(id))
		if aerr != nil {
			return aerr
		}
		if j == nil {
			return badField(field, "job %q does not exist", id)
		}
		if j.BrandID != olt.BrandID {
			return badField(field, "job %q is of brand %q, the OLT of brand %q", id, j.BrandID, olt.BrandID)
		}
		return nil
	}
	if err := job("master_job_id", req.MasterJobID); err != nil {
		return ev, err
	}
	if len(req.ChainJobIDs) == 0 || len(req.ChainJobIDs) > maxChain {
		return ev, badField("chain_job_ids", "chain_job_ids needs 1..%d jobs", maxChain)
	}
	seen := map[string]bool{req.MasterJobID: true}
	for _, id := range req.ChainJobIDs {
		if seen[id] {
			return ev, badField("chain_job_ids", "job %q is twice in the workflow (the master counts)", id)
		}
		seen[id] = true
		if err := job("chain_job_ids", id); err != nil {
			return ev, err
		}
		ev.ChainJobIDs = append(ev.ChainJobIDs, id)
	}
	if req.Enabled != nil {
		ev.Enabled = *req.Enabled
	}
	return ev, nil
}

func (s *server) createWorkflow(w http.ResponseWriter, r *http.Request) *apiError {
	var req workflowRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	var aerr *apiError
	if req.ID, aerr = newOrCheckedID(req.ID); aerr != nil {
		return aerr
	}
	ev, err := s.workflowEvent(r, req.ID, req)
	if err != nil {
		return err
	}
	return createNew(s, w, r, streams.SubjectWorkflow(ev.ID), ev, "workflow "+ev.ID, "/api/v1/workflows/"+ev.ID, ev)
}

func (s *server) existingWorkflow(r *http.Request) (*streams.WorkflowUpserted, *apiError) {
	id := r.PathValue("id")
	if !streams.ValidID(id) {
		return nil, notFound("no workflow %q", id)
	}
	wf, err := current[streams.WorkflowUpserted](r.Context(), s, streams.SubjectWorkflow(id))
	if err != nil {
		return nil, err
	}
	if wf == nil {
		return nil, notFound("no workflow %q", id)
	}
	return wf, nil
}

func (s *server) updateWorkflow(w http.ResponseWriter, r *http.Request) *apiError {
	prev, err := s.existingWorkflow(r)
	if err != nil {
		return err
	}
	var req workflowRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	if req.ID != "" && req.ID != prev.ID {
		return badField("id", "id in the body differs from the path")
	}
	ev, err := s.workflowEvent(r, prev.ID, req)
	if err != nil {
		return err
	}
	if err := s.publish(r, streams.SubjectWorkflow(ev.ID), ev); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, ev)
	return nil
}

func (s *server) deleteWorkflow(w http.ResponseWriter, r *http.Request) *apiError {
	wf, err := s.existingWorkflow(r)
	if err != nil {
		return err
	}
	if err := s.publish(r, streams.SubjectWorkflow(wf.ID), streams.WorkflowDeleted{ID: wf.ID}); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, deleted{ID: wf.ID, Deleted: true})
	return nil
}

// workflowRow is a workflow of the read model.
type workflowRow struct {
	streams.WorkflowUpserted
	UpdatedAt time.Time `json:"updated_at"`
}

// listWorkflows lists the workflows of the read model (q, sort, limit,
// offset), optionally of one OLT or only enabled/disabled ones.
func (s *server) listWorkflows(w http.ResponseWriter, r *http.Request) *apiError {
	olt, aerr := idParam(r, "olt_id")
	if aerr != nil {
		return aerr
	}
	enabled, aerr := boolParam(r, "enabled")
	if aerr != nil {
		return aerr
	}
	spec := listSpec{From: "workflows", Cols: "id, name, olt_id, master_job_id, chain_job_ids, stop_on_failure, enabled, updated_at",
		Search:      []string{"id", "name", "olt_id", "master_job_id"},
		Sorts:       map[string]string{"id": "id", "name": "name", "olt_id": "olt_id", "master_job_id": "master_job_id", "enabled": "enabled", "updated_at": "updated_at"},
		DefaultSort: "olt_id, name", TieBreak: "id", Where: []string{"NOT deleted"}}
	if olt != "" {
		spec.filter("olt_id = $?", olt)
	}
	if enabled != nil {
		spec.filter("enabled = $?", *enabled)
	}
	out, pi, aerr := listPage[workflowRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("workflows", out, len(out)))
	return nil
}

// getWorkflow serves GET /api/v1/workflows/{id} from the configuration
// stream.
func (s *server) getWorkflow(w http.ResponseWriter, r *http.Request) *apiError {
	wf, err := s.existingWorkflow(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wf)
	return nil
}

// enableWorkflow serves POST /api/v1/workflows/{id}/enable and /disable.
func (s *server) enableWorkflow(w http.ResponseWriter, r *http.Request) *apiError {
	wf, err := s.existingWorkflow(r)
	if err != nil {
		return err
	}
	ev := *wf
	ev.Enabled = strings.HasSuffix(r.URL.Path, "/enable")
	return s.accepted(w, r, streams.SubjectWorkflow(ev.ID), ev, ev)
}
