package api

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/configrules"
	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/streams"
)

// BrandAuto as an OLT's brand_id asks the API to identify its vendor
// profile from sysObjectID and sysDescr.
const BrandAuto = "auto"

// vendorProfileSummary is a profile in the list.
type vendorProfileSummary struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Vendor      string         `json:"vendor"`
	Description string         `json:"description,omitempty"`
	Verified    string         `json:"verified,omitempty"`
	Match       profiles.Match `json:"match"`
	IndexScheme string         `json:"index_scheme"`
	Fields      []string       `json:"fields"`
	Jobs        []string       `json:"jobs"`
	Source      string         `json:"source"`
	// Origin is "built-in" or "file" (FACHO_PROFILES_DIR); Error is why a
	// file of the folder was not loaded (it is listed, not dropped).
	Origin string `json:"origin"`
	Error  string `json:"error,omitempty"`
}

func summarizeProfile(p profiles.Profile) vendorProfileSummary {
	v := vendorProfileSummary{ID: p.ID, Name: p.Name, Vendor: p.Vendor, Description: p.Description, Verified: p.Verified,
		Match: p.Match, IndexScheme: p.IndexScheme, Source: p.Source, Origin: "file"}
	if p.Builtin() {
		v.Origin = "built-in"
	}
	seen := map[string]bool{}
	for _, c := range p.Columns {
		if !seen[c.Field] {
			seen[c.Field] = true
			v.Fields = append(v.Fields, c.Field)
		}
	}
	v.Jobs = profileJobIDs(p)
	return v
}

func (s *server) listVendorProfiles(w http.ResponseWriter, r *http.Request) *apiError {
	q := strings.ToLower(r.URL.Query().Get("q"))
	out := []vendorProfileSummary{}
	for _, p := range s.profiles.List() {
		if q != "" && !strings.Contains(strings.ToLower(p.ID+" "+p.Name+" "+p.Vendor), q) {
			continue
		}
		out = append(out, summarizeProfile(p))
	}
	for _, p := range s.profiles.Problems() {
		id := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(p.Source), ".yaml"), ".yml")
		if q != "" && !strings.Contains(strings.ToLower(id), q) {
			continue
		}
		out = append(out, vendorProfileSummary{ID: id, Name: "(not loaded)", Source: p.Source, Origin: "file", Error: p.Error,
			Fields: []string{}, Jobs: []string{}})
	}
	writeJSON(w, http.StatusOK, vendorProfileList{Count: len(out), Profiles: out})
	return nil
}

func (s *server) getVendorProfile(w http.ResponseWriter, r *http.Request) *apiError {
	p, ok := s.profiles.Get(r.PathValue("id"))
	if !ok {
		return notFound("no vendor profile %q", r.PathValue("id"))
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

// oltWithProfile is the answer to an OLT created with a profile.
type oltWithProfile struct {
	oltView
	Profile  string            `json:"profile"`
	Detected *profiles.SysInfo `json:"detected,omitempty"`
	// Created lists the brand, OIDs and jobs this call created (those
	// that existed are kept as they are); Assigned the jobs assigned.
	Created  []string `json:"created"`
	Assigned []string `json:"assigned"`
}

// createOLTWithProfile creates an OLT from a vendor profile (req.Profile,
// or the one its agent identifies as with brand_id "auto"): the profile's
// brand, OIDs and default jobs are published when absent, then the OLT,
// then the assignment of each default job: all events, in one call.
func (s *server) createOLTWithProfile(w http.ResponseWriter, r *http.Request, req oltRequest) *apiError {
	if req.BrandID != "" && req.BrandID != BrandAuto && req.Profile != "" && req.BrandID != req.Profile {
		return badField("brand_id", "brand_id %q and profile %q disagree: give one of them", req.BrandID, req.Profile)
	}
	// Everything but the brand is checked before any SNMP or publish.
	probe := req
	probe.BrandID = ""
	if _, err := s.oltEvent(r, req.ID, probe, nil); err != nil && err.Field != "brand_id" {
		return err
	}
	if req.Community == nil {
		return badField("community", "community is required")
	}
	if msg, aerr := s.lastMsg(r.Context(), streams.SubjectOLT(req.ID)); aerr != nil {
		return aerr
	} else if msg != nil && decodeAs[streams.OLTUpserted](msg) != nil {
		return conflict("OLT %s already exists", req.ID)
	}
	var detected *profiles.SysInfo
	var p profiles.Profile
	if req.Profile != "" {
		var ok bool
		if p, ok = s.profiles.Get(req.Profile); !ok {
			return badField("profile", "no vendor profile %q (GET /api/v1/vendor-profiles lists them)", req.Profile)
		}
	} else {
		port := 161
		if req.Port != nil {
			port = *req.Port
		}
		info, err := profiles.ReadSysInfo(r.Context(), req.IP, port, *req.Community, s.cfg.DetectTimeout)
		if err != nil {
			return &apiError{Status: http.StatusUnprocessableEntity, Field: "brand_id",
				Msg: fmt.Sprintf("brand_id auto: could not read sysObjectID and sysDescr: %v", err)}
		}
		detected = &info
		var ok bool
		if p, ok = s.profiles.Identify(info.SysObjectID, info.SysDescr); !ok {
			return &apiError{Status: http.StatusUnprocessableEntity, Field: "brand_id",
				Msg: fmt.Sprintf("brand_id auto: no vendor profile matches sysObjectID %q, sysDescr %q; give a profile or a brand_id", info.SysObjectID, info.SysDescr)}
		}
	}
	created, aerr := s.ensureProfile(r, p)
	if aerr != nil {
		return aerr
	}
	req.BrandID = p.ID
	ev, aerr := s.oltEvent(r, req.ID, req, nil)
	if aerr != nil {
		return aerr
	}
	if ok, aerr := createIfAbsent(s, r, streams.SubjectOLT(ev.ID), ev); aerr != nil {
		return aerr
	} else if !ok {
		return conflict("OLT %s already exists", ev.ID)
	}
	var assigned []string
	for _, jobID := range profileJobIDs(p) { // with the health job (health.go)
		a := streams.JobOLTAssigned{JobID: jobID, OLTID: ev.ID, Enabled: true}
		if aerr := s.publish(r, streams.SubjectAssignment(a.JobID, a.OLTID), a); aerr != nil {
			return aerr
		}
		assigned = append(assigned, a.JobID)
	}
	w.Header().Set("Location", "/api/v1/olts/"+ev.ID)
	writeJSON(w, http.StatusCreated, oltWithProfile{oltView: viewOLT(ev), Profile: p.ID, Detected: detected, Created: created, Assigned: assigned})
	return nil
}

// ensureProfile publishes the profile's brand, OIDs and jobs that do not
// exist yet and returns their ids; existing ones are left as they are.
func (s *server) ensureProfile(r *http.Request, p profiles.Profile) ([]string, *apiError) {
	created := []string{}
	idx := p.Index
	brand := streams.BrandUpserted{ID: p.ID, Name: p.Name, Description: p.Description, IndexScheme: p.IndexScheme, Index: &idx, Profile: p.ID, SNMP: p.SNMP}
	if ok, aerr := createIfAbsent(s, r, streams.SubjectBrand(brand.ID), brand); aerr != nil {
		return nil, aerr
	} else if ok {
		created = append(created, "brand "+brand.ID)
	}
	for _, c := range p.Columns {
		o := streams.OIDUpserted{ID: p.OIDID(c.ID), BrandID: p.ID, Name: c.Name, OID: c.OID, Field: c.Field, Decoder: c.Decoder, IndexSuffix: c.IndexSuffix, Index: c.Index}
		if ok, aerr := createIfAbsent(s, r, streams.SubjectOID(o.ID), o); aerr != nil {
			return nil, aerr
		} else if ok {
			created = append(created, "oid "+o.ID)
		}
	}
	for _, j := range p.Jobs {
		job := streams.JobUpserted{ID: p.JobID(j.ID), Name: j.Name, BrandID: p.ID, Kind: j.Kind, IntervalSeconds: j.IntervalSeconds,
			MaxRetries: j.MaxRetries, RetryDelaySeconds: 300, TimeoutSeconds: j.TimeoutSeconds, Priority: j.Priority, Enabled: true}
		if job.Priority == 0 {
			job.Priority = 40
			if j.Kind == streams.KindDiscovery {
				job.Priority = 90
			}
		}
		for _, c := range j.Columns {
			job.OIDIDs = append(job.OIDIDs, p.OIDID(c))
		}
		if ok, aerr := createIfAbsent(s, r, streams.SubjectJob(job.ID), job); aerr != nil {
			return nil, aerr
		} else if ok {
			created = append(created, "job "+job.ID)
		}
	}
	// The health section's OIDs and job (health.go).
	health, aerr := s.ensureHealth(r, p)
	if aerr != nil {
		return nil, aerr
	}
	return append(created, health...), nil
}

// createIfAbsent publishes ev on subject unless a live entity of its type
// is there, expecting the subject's last sequence to be the one looked at:
// false when it exists (or another request created it meanwhile).
func createIfAbsent[T streams.Event](s *server, r *http.Request, subject string, ev T) (bool, *apiError) {
	// A profile's events skip the forms' checks: check them as the
	// projector will, so a profile it would refuse fails here, named.
	if err := consumerRules(ev); err != nil {
		return false, &apiError{Status: http.StatusInternalServerError, Msg: fmt.Sprintf("%s: the profile produces an event the consumers refuse: %v", subject, err)}
	}
	msg, aerr := s.lastMsg(r.Context(), subject)
	if aerr != nil {
		return false, aerr
	}
	var seq uint64
	if msg != nil {
		if decodeAs[T](msg) != nil {
			return false, nil
		}
		seq = msg.Sequence
	}
	if aerr := s.publishID(r, msgID(r, subject), subject, ev, jetstream.WithExpectLastSequencePerSubject(seq)); aerr != nil {
		if aerr.Status == http.StatusConflict {
			return false, nil
		}
		return false, aerr
	}
	return true, nil
}

// consumerRules checks a config event with the rules the projector applies
// to it (configrules).
func consumerRules(ev any) error {
	switch e := ev.(type) {
	case streams.BrandUpserted:
		return configrules.Brand(e)
	case streams.OIDUpserted:
		return configrules.OIDEvent(e)
	case streams.JobUpserted:
		return configrules.Job(e)
	case streams.OLTUpserted:
		return configrules.OLT(e)
	}
	return nil
}
