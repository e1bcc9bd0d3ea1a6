package api

import (
	"net/http"
	"net/url"

	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/services/api/console"
)

// registerConsole mounts the console's pages: public ones as they are, the
// others behind the session (anonymous: redirected to the login page) and
// the role each needs (403 page otherwise). Unsafe methods need the
// session's CSRF token (the forms' hidden field "csrf").
func (s *server) registerConsole(mux *recordingMux) error {
	c, err := console.New(console.Deps{API: mux, Users: s.users, DB: s.deps.DB, Log: s.deps.Log, SessionCookie: SessionCookie, Throttle: s.throttle})
	if err != nil {
		return err
	}
	for _, rt := range c.Routes() {
		if rt.Public {
			s.roles[rt.Pattern] = ""
			mux.Handle(rt.Pattern, s.instrument(rt.Handler))
			continue
		}
		s.roles[rt.Pattern] = rt.Role
		mux.Handle(rt.Pattern, s.instrument(s.consoleAuth(rt.Role, rt.Handler)))
	}
	return nil
}

// consoleAuth requires a console session with role.
func (s *server) consoleAuth(role auth.Role, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, status := s.sessionPrincipal(r)
		switch status {
		case http.StatusOK:
		case http.StatusUnauthorized:
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "not logged in", http.StatusUnauthorized)
			return
		case http.StatusForbidden:
			http.Error(w, "missing or wrong CSRF token: reload the page and retry", http.StatusForbidden)
			return
		default:
			http.Error(w, "user database unavailable, retry later", http.StatusServiceUnavailable)
			return
		}
		if !p.Role.Allows(role) {
			http.Error(w, "this page needs the "+string(role)+" role; you are "+string(p.Role), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}
