package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/facho-olt/facho/services/api/auth"
)

// Users and tokens are the API's own tables (package auth), written here
// directly: they are not pipeline configuration and no service consumes
// them.

type userRequest struct {
	Username string  `json:"username"`
	Role     string  `json:"role"`
	Password *string `json:"password"`
	Disabled *bool   `json:"disabled"`
}

type tokenRequest struct {
	Name string `json:"name"`
}

func principal(r *http.Request) auth.Principal {
	p, _ := auth.FromContext(r.Context())
	return p
}

func (s *server) me(w http.ResponseWriter, r *http.Request) *apiError {
	p := principal(r)
	writeJSON(w, http.StatusOK, whoAmI{UserID: p.UserID, Username: p.Username, Role: p.Role, Via: p.Via})
	return nil
}

// authError maps a store error to the client's.
func (s *server) authError(err error, what string) *apiError {
	switch {
	case errors.Is(err, auth.ErrNotFound):
		return notFound("no %s", what)
	case errors.Is(err, auth.ErrExists):
		return conflict("%s already exists", what)
	case errors.Is(err, auth.ErrBadUsername):
		return badField("username", "%s", err.Error())
	case errors.Is(err, auth.ErrWeakPassword):
		return badField("password", "%s", err.Error())
	}
	s.deps.Log.Warn().Err(err).Msg("user database")
	return unavailable("user database")
}

func (s *server) listUsers(w http.ResponseWriter, r *http.Request) *apiError {
	ctx, cancel := s.query(r)
	defer cancel()
	users, err := s.users.Users(ctx)
	if err != nil {
		return s.authError(err, "users")
	}
	writeJSON(w, http.StatusOK, userList{Count: len(users), Total: len(users), Users: users})
	return nil
}

func (s *server) createUser(w http.ResponseWriter, r *http.Request) *apiError {
	var req userRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	if err := auth.CheckUsername(req.Username); err != nil {
		return badField("username", "%s", err.Error())
	}
	role, err := auth.ParseRole(req.Role)
	if err != nil {
		return badField("role", "%s", err.Error())
	}
	if req.Password == nil || len(*req.Password) < auth.MinPasswordLen {
		return badField("password", "%s", auth.ErrWeakPassword.Error())
	}
	ctx, cancel := s.query(r)
	defer cancel()
	u, err := s.users.CreateUser(ctx, req.Username, role, *req.Password)
	if err != nil {
		return s.authError(err, "user "+req.Username)
	}
	if req.Disabled != nil && *req.Disabled {
		if u, err = s.users.UpdateUser(ctx, u.ID, auth.UserChange{Disabled: req.Disabled}); err != nil {
			return s.authError(err, "user")
		}
	}
	s.deps.Log.Info().Str("user", u.Username).Str("role", string(u.Role)).Str("by", principal(r).Username).Msg("user created")
	w.Header().Set("Location", "/api/v1/users/"+strconv.FormatInt(u.ID, 10))
	writeJSON(w, http.StatusCreated, u)
	return nil
}

func pathUserID(r *http.Request) (int64, *apiError) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, notFound("no user %q", r.PathValue("id"))
	}
	return id, nil
}

func (s *server) getUser(w http.ResponseWriter, r *http.Request) *apiError {
	id, aerr := pathUserID(r)
	if aerr != nil {
		return aerr
	}
	ctx, cancel := s.query(r)
	defer cancel()
	u, err := s.users.UserByID(ctx, id)
	if err != nil {
		return s.authError(err, "user "+r.PathValue("id"))
	}
	writeJSON(w, http.StatusOK, u)
	return nil
}

func (s *server) updateUser(w http.ResponseWriter, r *http.Request) *apiError {
	id, aerr := pathUserID(r)
	if aerr != nil {
		return aerr
	}
	var req userRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	ctx, cancel := s.query(r)
	defer cancel()
	prev, err := s.users.UserByID(ctx, id)
	if err != nil {
		return s.authError(err, "user "+r.PathValue("id"))
	}
	if req.Username != "" && req.Username != prev.Username {
		return badField("username", "a username cannot change")
	}
	var c auth.UserChange
	if req.Role != "" {
		role, err := auth.ParseRole(req.Role)
		if err != nil {
			return badField("role", "%s", err.Error())
		}
		c.Role = &role
	}
	if req.Password != nil {
		if len(*req.Password) < auth.MinPasswordLen {
			return badField("password", "%s", auth.ErrWeakPassword.Error())
		}
		c.Password = req.Password
	}
	c.Disabled = req.Disabled
	if id == principal(r).UserID && ((c.Role != nil && *c.Role != auth.Admin) || (c.Disabled != nil && *c.Disabled)) {
		return badField("role", "you cannot demote or disable yourself")
	}
	u, err := s.users.UpdateUser(ctx, id, c)
	if err != nil {
		return s.authError(err, "user")
	}
	writeJSON(w, http.StatusOK, u)
	return nil
}

func (s *server) deleteUser(w http.ResponseWriter, r *http.Request) *apiError {
	id, aerr := pathUserID(r)
	if aerr != nil {
		return aerr
	}
	if id == principal(r).UserID {
		return conflict("you cannot delete yourself")
	}
	ctx, cancel := s.query(r)
	defer cancel()
	if err := s.users.DeleteUser(ctx, id); err != nil {
		return s.authError(err, "user "+r.PathValue("id"))
	}
	writeJSON(w, http.StatusAccepted, userDeleted{ID: id, Deleted: true})
	return nil
}

// tokenOwner is whose tokens a principal sees: their own; an admin's view
// is everyone's (0). A static token has no user and no tokens of its own.
func tokenOwner(p auth.Principal) int64 {
	if p.Role == auth.Admin {
		return 0
	}
	return p.UserID
}

func (s *server) listTokens(w http.ResponseWriter, r *http.Request) *apiError {
	ctx, cancel := s.query(r)
	defer cancel()
	toks, err := s.users.Tokens(ctx, tokenOwner(principal(r)))
	if err != nil {
		return s.authError(err, "tokens")
	}
	writeJSON(w, http.StatusOK, tokenList{Count: len(toks), Total: len(toks), Tokens: toks})
	return nil
}

func (s *server) createToken(w http.ResponseWriter, r *http.Request) *apiError {
	p := principal(r)
	if p.UserID == 0 {
		return badField("", "a static token (FACHO_API_TOKENS) has no user to own a token: log in as a user")
	}
	var req tokenRequest
	if err := decodeStrict(r, s.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	if p := textProblem(req.Name, 100, false); p != "" || req.Name == "" {
		return badField("name", "name must be 1..100 characters without control characters")
	}
	ctx, cancel := s.query(r)
	defer cancel()
	secret, t, err := s.users.CreateToken(ctx, p.UserID, req.Name)
	if err != nil {
		return s.authError(err, "user")
	}
	s.deps.Log.Info().Str("user", p.Username).Str("token_id", t.ID).Msg("api token created")
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, tokenCreated{Token: t, Secret: secret})
	return nil
}

func (s *server) revokeToken(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("id")
	ctx, cancel := s.query(r)
	defer cancel()
	if err := s.users.RevokeToken(ctx, tokenOwner(principal(r)), id); err != nil {
		return s.authError(err, "token "+id)
	}
	writeJSON(w, http.StatusAccepted, revoked{ID: id, Revoked: true})
	return nil
}
