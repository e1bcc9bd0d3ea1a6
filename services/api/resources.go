package api

import (
	"net/http"
	"strings"

	"github.com/facho-olt/facho/streams"
)

type brandRequest struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	IndexScheme string `json:"index_scheme"`
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
	if err := checkName("name", req.Name); err != nil {
		return err
	}
	if err := checkDescription("description", req.Description); err != nil {
		return err
	}
	if !oneOf(req.IndexScheme, IndexSchemes) {
		return badField("index_scheme", "index_scheme must be one of %s", strings.Join(IndexSchemes, ", "))
	}
	ev := streams.BrandUpserted{ID: req.ID, Name: strings.TrimSpace(req.Name), Description: req.Description, IndexScheme: req.IndexScheme}
	return s.created(w, r, streams.SubjectBrand(ev.ID), ev, "/api/v1/brands/"+ev.ID, ev)
}

type oidRequest struct {
	ID      string          `json:"id"`
	BrandID string          `json:"brand_id"`
	Name    string          `json:"name"`
	OID     string          `json:"oid"`
	Field   string          `json:"field"`
	Decoder streams.Decoder `json:"decoder"`
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
	if err := s.checkBrand(r, req.BrandID); err != nil {
		return err
	}
	if err := checkName("name", req.Name); err != nil {
		return err
	}
	if err := checkOID("oid", req.OID); err != nil {
		return err
	}
	if !oneOf(req.Field, Fields) {
		return badField("field", "field must be one of %s", strings.Join(Fields, ", "))
	}
	if err := checkDecoder("decoder", req.Decoder); err != nil {
		return err
	}
	ev := streams.OIDUpserted{ID: req.ID, BrandID: req.BrandID, Name: strings.TrimSpace(req.Name),
		OID: strings.TrimPrefix(req.OID, "."), Field: req.Field, Decoder: req.Decoder}
	return s.created(w, r, streams.SubjectOID(ev.ID), ev, "/api/v1/oids/"+ev.ID, ev)
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
