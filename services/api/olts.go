package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/configrules"
	"github.com/facho-olt/facho/streams"
)

type oltRequest struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	IP          string  `json:"ip"`
	Port        *int    `json:"port"`
	Community   *string `json:"community"`
	BrandID     string  `json:"brand_id"`
	Enabled     *bool   `json:"enabled"`
	Description string  `json:"description"`
	// SNMP overrides the brand's tuning for this OLT.
	SNMP streams.SNMPTuning `json:"snmp"`
	// Profile (create only) names a vendor profile: its brand, OIDs and
	// default jobs are created if absent and the jobs assigned to the OLT.
	// BrandID "auto" picks the profile from the OLT's sysObjectID and
	// sysDescr (one SNMP GET).
	Profile string `json:"profile,omitempty"`
}

// oltView is an OLT as the API shows it: never with its community.
type oltView struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	IP          string             `json:"ip"`
	Port        int                `json:"port"`
	BrandID     string             `json:"brand_id"`
	Enabled     bool               `json:"enabled"`
	Description string             `json:"description"`
	SNMP        streams.SNMPTuning `json:"snmp"`
	// DisabledReason and DisabledAt: the planner disabled the OLT after
	// consecutive failed executions (olt.auto_disabled; re-enabling clears
	// them). Only the read model's list carries them.
	DisabledReason string     `json:"disabled_reason,omitempty"`
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
}

func viewOLT(o streams.OLTUpserted) oltView {
	return oltView{ID: o.ID, Name: o.Name, IP: o.IP, Port: o.Port, BrandID: o.BrandID, Enabled: o.Enabled, Description: o.Description, SNMP: o.SNMP}
}

// oltEvent validates req into an OLT event. The community is sealed here,
// before anything else sees it; on an update without one, the sealed
// community of prev is kept (clients never get it back to resend it).
func (s *server) oltEvent(r *http.Request, id string, req oltRequest, prev *streams.OLTUpserted) (streams.OLTUpserted, *apiError) {
	ev := streams.OLTUpserted{ID: id, Name: strings.TrimSpace(req.Name), IP: req.IP, Port: 161, BrandID: req.BrandID, Enabled: true, Description: req.Description}
	if err := checkName("name", req.Name); err != nil {
		return ev, err
	}
	if err := checkIP("ip", req.IP); err != nil {
		return ev, err
	}
	if err := checkDescription("description", req.Description); err != nil {
		return ev, err
	}
	if err := req.SNMP.Validate(); err != nil {
		return ev, badField("snmp", "snmp: %s", err.Error())
	}
	ev.SNMP = req.SNMP
	if req.Port != nil {
		if err := fieldErr(configrules.Port("port", *req.Port)); err != nil {
			return ev, err
		}
		ev.Port = *req.Port
	}
	switch {
	case req.Community != nil:
		c := *req.Community
		if c == "" || len(c) > 255 || strings.ContainsAny(c, "\x00\r\n") {
			return ev, badField("community", "community must be 1..255 bytes without control characters")
		}
		sealed, err := s.deps.Box.Seal(c)
		if err != nil {
			return ev, &apiError{Status: http.StatusInternalServerError, Msg: "seal community"}
		}
		ev.CommunityEnc = sealed
	case prev != nil:
		ev.CommunityEnc = prev.CommunityEnc
	default:
		return ev, badField("community", "community is required")
	}
	if err := s.checkBrand(r, req.BrandID); err != nil {
		return ev, err
	}
	if req.Enabled != nil {
		ev.Enabled = *req.Enabled
	}
	return ev, nil
}

func (s *server) createOLT(w http.ResponseWriter, r *http.Request) *apiError {
	var req oltRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	var aerr *apiError
	if req.ID, aerr = newOrCheckedID(req.ID); aerr != nil {
		return aerr
	}
	if req.Profile != "" || req.BrandID == BrandAuto {
		return s.createOLTWithProfile(w, r, req)
	}
	ev, err := s.oltEvent(r, req.ID, req, nil)
	if err != nil {
		return err
	}
	return createNew(s, w, r, streams.SubjectOLT(ev.ID), ev, "OLT "+ev.ID, "/api/v1/olts/"+ev.ID, viewOLT(ev))
}

// existingOLT reads the path id of an OLT that must exist.
func (s *server) existingOLT(r *http.Request) (string, *streams.OLTUpserted, *apiError) {
	id := r.PathValue("id")
	if !streams.ValidID(id) {
		return id, nil, notFound("no OLT %q", id)
	}
	prev, err := current[streams.OLTUpserted](r.Context(), s, streams.SubjectOLT(id))
	if err != nil {
		return id, nil, err
	}
	if prev == nil {
		return id, nil, notFound("no OLT %q", id)
	}
	return id, prev, nil
}

func (s *server) updateOLT(w http.ResponseWriter, r *http.Request) *apiError {
	id, prev, err := s.existingOLT(r)
	if err != nil {
		return err
	}
	enabled := prev.Enabled
	port := prev.Port
	req, err := decodeUpdate(s, r, oltRequest{ID: prev.ID, Name: prev.Name, IP: prev.IP, Port: &port, BrandID: prev.BrandID,
		Enabled: &enabled, Description: prev.Description, SNMP: prev.SNMP})
	if err != nil {
		return err
	}
	if err := sameID(req.ID, id); err != nil {
		return err
	}
	if req.Profile != "" {
		return badField("profile", "profile applies when an OLT is created; change brand_id instead")
	}
	ev, err := s.oltEvent(r, id, req, prev)
	if err != nil {
		return err
	}
	if err := s.publish(r, streams.SubjectOLT(id), ev); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, viewOLT(ev))
	return nil
}

func (s *server) deleteOLT(w http.ResponseWriter, r *http.Request) *apiError {
	id, _, err := s.existingOLT(r)
	if err != nil {
		return err
	}
	if err := s.publish(r, streams.SubjectOLT(id), streams.OLTDeleted{ID: id}); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, deleted{ID: id, Deleted: true})
	return nil
}

// oltDetail is GET /api/v1/olts/{id}: the OLT and its availability.
type oltDetail struct {
	oltView
	// Availability is available, unreachable or unavailable (null when
	// the OLT was never probed); AvailabilitySince when it began;
	// AvailabilityError the last unanswered request's error (null when
	// available).
	Availability      *string    `json:"availability"`
	AvailabilitySince *time.Time `json:"availability_since"`
	AvailabilityError *string    `json:"availability_error"`
}

// availabilityOf reads the OLT's availability from the read model (all
// nil when it was never probed).
func (s *server) availabilityOf(r *http.Request, id string) (state *string, since *time.Time, errText *string, aerr *apiError) {
	ctx, cancel := s.query(r)
	defer cancel()
	var st, e string
	var at time.Time
	err := s.deps.DB.QueryRow(ctx, `SELECT state, since, last_error FROM olt_availability WHERE olt_id = $1`, id).Scan(&st, &at, &e)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, s.readModelDown(err)
	}
	if e != "" {
		errText = &e
	}
	return &st, &at, errText, nil
}

func (s *server) getOLT(w http.ResponseWriter, r *http.Request) *apiError {
	id, o, err := s.existingOLT(r)
	if err != nil {
		return err
	}
	v := oltDetail{oltView: viewOLT(*o)}
	if v.Availability, v.AvailabilitySince, v.AvailabilityError, err = s.availabilityOf(r, id); err != nil {
		return err
	}
	// Disabled by the planner after consecutive failures, until the OLT's
	// next change (enabling it resets).
	dis, err := s.autoDisabled(r.Context(), id)
	if err != nil {
		return err
	}
	if dis != nil {
		at := dis.DisabledAt
		v.Enabled, v.DisabledReason, v.DisabledAt = false, dis.Reason, &at
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// enableOLT serves POST .../enable and .../disable: the OLT as it is with
// enabled set (an operator's action).
func (s *server) enableOLT(w http.ResponseWriter, r *http.Request) *apiError {
	id, prev, err := s.existingOLT(r)
	if err != nil {
		return err
	}
	ev := *prev
	ev.Enabled = strings.HasSuffix(r.URL.Path, "/enable")
	return s.accepted(w, r, streams.SubjectOLT(id), ev, viewOLT(ev))
}
