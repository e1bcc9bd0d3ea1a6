package api

import (
	"net/http"
	"strings"

	"github.com/facho-olt/facho/pkg/configrules"
	"github.com/facho-olt/facho/streams"
)

type brandRequest struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	IndexScheme string `json:"index_scheme"`
	// SNMP is how the brand's OLTs want to be read (zero fields: the
	// poller's defaults).
	SNMP streams.SNMPTuning `json:"snmp"`
}

// brandEvent validates req into a brand event; prev (an update) keeps the
// fields this request does not carry.
func brandEvent(id string, req brandRequest, prev *streams.BrandUpserted) (streams.BrandUpserted, *apiError) {
	var ev streams.BrandUpserted
	if prev != nil {
		ev = *prev
	}
	ev.ID, ev.Name, ev.Description, ev.IndexScheme, ev.SNMP = id, strings.TrimSpace(req.Name), req.Description, req.IndexScheme, req.SNMP
	if err := checkName("name", req.Name); err != nil {
		return ev, err
	}
	if err := checkDescription("description", req.Description); err != nil {
		return ev, err
	}
	switch {
	case prev != nil && prev.Index != nil && req.IndexScheme == prev.IndexScheme:
		// A brand made from a vendor profile keeps its index definition.
	case !oneOf(req.IndexScheme, IndexSchemes):
		return ev, badField("index_scheme", "index_scheme must be one of %s", strings.Join(IndexSchemes, ", "))
	default:
		ev.Index = nil // a built-in scheme replaces a profile's definition
	}
	if err := req.SNMP.Validate(); err != nil {
		return ev, badField("snmp", "snmp: %s", err.Error())
	}
	return ev, nil
}

func (s *server) createBrand(w http.ResponseWriter, r *http.Request) *apiError {
	var req brandRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	var aerr *apiError
	if req.ID, aerr = newOrCheckedID(req.ID); aerr != nil {
		return aerr
	}
	ev, aerr := brandEvent(req.ID, req, nil)
	if aerr != nil {
		return aerr
	}
	return createNew(s, w, r, streams.SubjectBrand(ev.ID), ev, "brand "+ev.ID, "/api/v1/brands/"+ev.ID, ev)
}

// existing reads the path id of an entity of type T that must exist.
func existing[T streams.Event](s *server, r *http.Request, what string, subject func(string) string) (*T, *apiError) {
	id := r.PathValue("id")
	if !streams.ValidID(id) {
		return nil, notFound("no %s %q", what, id)
	}
	v, err := current[T](r.Context(), s, subject(id))
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, notFound("no %s %q", what, id)
	}
	return v, nil
}

// decodeUpdate reads the body of a PUT (the whole resource) or a PATCH
// (the fields to change, over base: the current resource as a request).
func decodeUpdate[R any](s *server, r *http.Request, base R) (R, *apiError) {
	var req R
	if r.Method == http.MethodPatch {
		req = base
	}
	err := decodeStrict(r, s.cfg.MaxBodyBytes, &req)
	return req, err
}

func sameID(bodyID, pathID string) *apiError {
	if bodyID != "" && bodyID != pathID {
		return badField("id", "id in the body differs from the path")
	}
	return nil
}

func (s *server) getBrand(w http.ResponseWriter, r *http.Request) *apiError {
	b, err := existing[streams.BrandUpserted](s, r, "brand", streams.SubjectBrand)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

func (s *server) updateBrand(w http.ResponseWriter, r *http.Request) *apiError {
	prev, err := existing[streams.BrandUpserted](s, r, "brand", streams.SubjectBrand)
	if err != nil {
		return err
	}
	req, err := decodeUpdate(s, r, brandRequest{ID: prev.ID, Name: prev.Name, Description: prev.Description, IndexScheme: prev.IndexScheme, SNMP: prev.SNMP})
	if err != nil {
		return err
	}
	if err := sameID(req.ID, prev.ID); err != nil {
		return err
	}
	ev, err := brandEvent(prev.ID, req, prev)
	if err != nil {
		return err
	}
	return s.accepted(w, r, streams.SubjectBrand(ev.ID), ev, ev)
}

// inUse answers 409 when the read-model query finds a row.
func (s *server) inUse(r *http.Request, msg, sql string, args ...any) *apiError {
	ctx, cancel := s.query(r)
	defer cancel()
	var used bool
	if err := s.deps.DB.QueryRow(ctx, "SELECT EXISTS ("+sql+")", args...).Scan(&used); err != nil {
		return s.readModelDown(err)
	}
	if used {
		return conflict("%s", msg)
	}
	return nil
}

func (s *server) deleteBrand(w http.ResponseWriter, r *http.Request) *apiError {
	b, err := existing[streams.BrandUpserted](s, r, "brand", streams.SubjectBrand)
	if err != nil {
		return err
	}
	if err := s.inUse(r, "brand "+b.ID+" is used by OIDs, OLTs or jobs: delete or move them first",
		`SELECT 1 FROM oids WHERE brand_id = $1 UNION ALL SELECT 1 FROM olts WHERE brand_id = $1 AND NOT deleted
		 UNION ALL SELECT 1 FROM snmp_jobs WHERE brand_id = $1 AND NOT deleted`, b.ID); err != nil {
		return err
	}
	return s.accepted(w, r, streams.SubjectBrand(b.ID), streams.BrandDeleted{ID: b.ID}, deleted{ID: b.ID, Deleted: true})
}

type oidRequest struct {
	ID      string          `json:"id"`
	BrandID string          `json:"brand_id"`
	Name    string          `json:"name"`
	OID     string          `json:"oid"`
	Field   string          `json:"field"`
	Decoder streams.Decoder `json:"decoder"`
	// IndexSuffix: arcs a get appends to an ONU's row index (ZTE's
	// optical table: "1").
	IndexSuffix string `json:"index_suffix"`
}

func (s *server) oidEvent(r *http.Request, id string, req oidRequest) (streams.OIDUpserted, *apiError) {
	ev := streams.OIDUpserted{ID: id, BrandID: req.BrandID, Name: strings.TrimSpace(req.Name),
		OID: strings.TrimPrefix(req.OID, "."), Field: req.Field, Decoder: req.Decoder, IndexSuffix: req.IndexSuffix}
	if err := s.checkBrand(r, req.BrandID); err != nil {
		return ev, err
	}
	if err := streams.ValidIndexSuffix(req.IndexSuffix); err != nil {
		return ev, badField("index_suffix", "%s", err.Error())
	}
	if err := checkName("name", req.Name); err != nil {
		return ev, err
	}
	if err := checkOID("oid", req.OID); err != nil {
		return ev, err
	}
	if err := fieldErr(configrules.OIDField("field", req.Field)); err != nil {
		return ev, err
	}
	if err := checkDecoder("decoder", req.Decoder); err != nil {
		return ev, err
	}
	return ev, nil
}

func (s *server) createOID(w http.ResponseWriter, r *http.Request) *apiError {
	var req oidRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	var aerr *apiError
	if req.ID, aerr = newOrCheckedID(req.ID); aerr != nil {
		return aerr
	}
	ev, aerr := s.oidEvent(r, req.ID, req)
	if aerr != nil {
		return aerr
	}
	return createNew(s, w, r, streams.SubjectOID(ev.ID), ev, "OID "+ev.ID, "/api/v1/oids/"+ev.ID, ev)
}

func (s *server) getOID(w http.ResponseWriter, r *http.Request) *apiError {
	o, err := existing[streams.OIDUpserted](s, r, "OID", streams.SubjectOID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

func (s *server) updateOID(w http.ResponseWriter, r *http.Request) *apiError {
	prev, err := existing[streams.OIDUpserted](s, r, "OID", streams.SubjectOID)
	if err != nil {
		return err
	}
	req, err := decodeUpdate(s, r, oidRequest{ID: prev.ID, BrandID: prev.BrandID, Name: prev.Name, OID: prev.OID, Field: prev.Field, Decoder: prev.Decoder, IndexSuffix: prev.IndexSuffix})
	if err != nil {
		return err
	}
	if err := sameID(req.ID, prev.ID); err != nil {
		return err
	}
	ev, err := s.oidEvent(r, prev.ID, req)
	if err != nil {
		return err
	}
	return s.accepted(w, r, streams.SubjectOID(ev.ID), ev, ev)
}

func (s *server) deleteOID(w http.ResponseWriter, r *http.Request) *apiError {
	o, err := existing[streams.OIDUpserted](s, r, "OID", streams.SubjectOID)
	if err != nil {
		return err
	}
	if err := s.inUse(r, "OID "+o.ID+" is used by a job: remove it from the job first",
		`SELECT 1 FROM snmp_jobs WHERE $1 = ANY(oid_ids) AND NOT deleted`, o.ID); err != nil {
		return err
	}
	return s.accepted(w, r, streams.SubjectOID(o.ID), streams.OIDDeleted{ID: o.ID}, deleted{ID: o.ID, Deleted: true})
}

// checkBrand requires an existing brand id in field brand_id.
func (s *server) checkBrand(r *http.Request, id string) *apiError {
	if id == "" {
		return badField("brand_id", "brand_id is required")
	}
	if err := checkID("brand_id", id); err != nil {
		return err
	}
	b, err := current[streams.BrandUpserted](r.Context(), s, streams.SubjectBrand(id))
	if err != nil {
		return err
	}
	if b == nil {
		return badField("brand_id", "brand %q does not exist", id)
	}
	return nil
}
