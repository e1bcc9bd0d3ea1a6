// Package console is Facho's operators' console: server-rendered HTML
// (html/template) served by the API process at /, with its assets
// embedded (no JS build step, no CDN). It is a thin client of the JSON
// API: every page reads through the API's handlers and every form or
// batch action submits to them in-process with the logged-in user as the
// principal, so validation, roles and events are the API's, one place.
// Forms show the API's 400 at the field it names. Pages whose data moves
// (an OLT's ONUs, nodes and executions, the logs, the pollers and the
// queue) refresh themselves from a server-sent events stream (GET
// /events).
//
// Routes returns the pages with the role each needs; package api mounts
// them behind its session authentication (anonymous: the login page) and
// CSRF checks.
package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/services/api/auth"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Deps are the console's collaborators.
type Deps struct {
	// API is the API's handler: the console calls it in-process.
	API   http.Handler
	Users *auth.Store
	// DB serves the live-update fingerprints of GET /events.
	DB  *pgxpool.Pool
	Log zerolog.Logger
	// SessionCookie is the session cookie's name.
	SessionCookie string
	// LiveInterval is how often /events looks for changes (default 1 s).
	LiveInterval time.Duration
	// Throttle limits failed logins per client IP and username; nil: no
	// limit.
	Throttle *auth.Throttle
}

// Route is a console page: its pattern, the role it needs and whether it
// needs no login at all.
type Route struct {
	Pattern string
	Role    auth.Role
	Public  bool
	Summary string
	Handler http.Handler
}

// Console renders the pages.
type Console struct {
	d     Deps
	pages map[string]*template.Template
	lists map[string]listDef
	forms map[string]formDef
}

// New parses the templates.
func New(d Deps) (*Console, error) {
	if d.API == nil || d.Users == nil {
		return nil, errors.New("console: API handler and user store are required")
	}
	if d.LiveInterval <= 0 {
		d.LiveInterval = time.Second
	}
	c := &Console{d: d, pages: map[string]*template.Template{}, lists: listDefs(), forms: formDefs()}
	funcs := template.FuncMap{
		"field":   field,
		"str":     str,
		"has":     func(role auth.Role, need string) bool { return role.Allows(auth.Role(need)) },
		"query":   withQuery,
		"add":     func(a, b int) int { return a + b },
		"ago":     ago,
		"rx":      rxText,
		"rxClass": rxClass,
		"badge":   badgeClass,
		"json":    prettyJSON,
		"anyList": anySlice,
		"num":     num,
		"pct": func(v any) string {
			f, _ := v.(float64)
			return strconv.FormatFloat(f, 'f', 1, 64)
		},
		"split": strings.Split,
		"contains": func(list []string, v string) bool {
			for _, x := range list {
				if x == v {
					return true
				}
			}
			return false
		},
	}
	names, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, "/layout.html") {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", n, err)
		}
		c.pages[strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")] = t
	}
	return c, nil
}

// Routes lists the console's pages.
func (c *Console) Routes() []Route {
	static, _ := fs.Sub(assets, "static")
	rs := []Route{
		{Pattern: "GET /login", Public: true, Summary: "Login page", Handler: http.HandlerFunc(c.loginPage)},
		{Pattern: "POST /login", Public: true, Summary: "Log in", Handler: http.HandlerFunc(c.login)},
		{Pattern: "GET /static/", Public: true, Summary: "Embedded assets", Handler: http.StripPrefix("/static/", http.FileServerFS(static))},
		{Pattern: "POST /logout", Role: auth.Viewer, Summary: "Log out", Handler: http.HandlerFunc(c.logout)},
		{Pattern: "GET /{$}", Role: auth.Viewer, Summary: "Home: the OLTs", Handler: http.RedirectHandler("/olts", http.StatusSeeOther)},
		{Pattern: "/", Role: auth.Viewer, Summary: "Unknown page: 404", Handler: http.HandlerFunc(c.notFound)},
		{Pattern: "GET /olts/{id}", Role: auth.Viewer, Summary: "An OLT: its ONUs, assignments and executions", Handler: http.HandlerFunc(c.oltPage)},
		{Pattern: "GET /olts/{id}/onus/{pon_index}/{onu_id}", Role: auth.Viewer, Summary: "An ONU: its state and its history as charts and a table of changes", Handler: http.HandlerFunc(c.onuPage)},
		{Pattern: "POST /olts/{id}/run", Role: auth.Operator, Summary: "Run a job on the OLT now", Handler: http.HandlerFunc(c.runNow)},
		{Pattern: "GET /executions/{id}", Role: auth.Viewer, Summary: "An execution with its attempts", Handler: http.HandlerFunc(c.executionPage)},
		{Pattern: "GET /logs", Role: auth.Viewer, Summary: "Coordinator logs", Handler: http.HandlerFunc(c.logsPage)},
		{Pattern: "GET /events", Role: auth.Viewer, Summary: "Live updates (server-sent events)", Handler: http.HandlerFunc(c.events)},
		{Pattern: "GET /tokens", Role: auth.Viewer, Summary: "My API tokens", Handler: http.HandlerFunc(c.tokensPage)},
		{Pattern: "POST /tokens", Role: auth.Viewer, Summary: "Create an API token", Handler: http.HandlerFunc(c.createToken)},
		{Pattern: "POST /tokens/{id}/revoke", Role: auth.Viewer, Summary: "Revoke an API token", Handler: http.HandlerFunc(c.revokeToken)},
	}
	rs = append(rs,
		Route{Pattern: "GET /violations/{id}", Role: auth.Viewer, Summary: "A quota violation with its JSON report", Handler: http.HandlerFunc(c.violationPage)},
		Route{Pattern: "GET /pollers", Role: auth.Viewer, Summary: "Pollers: busy %, current node, saturation, queue", Handler: http.HandlerFunc(c.pollersPage)},
		Route{Pattern: "GET /queue", Role: auth.Viewer, Summary: "The planner's queue: size, overload, next nodes, delays per class and per OLT", Handler: http.HandlerFunc(c.queuePage)},
		Route{Pattern: "GET /vendor-profiles/{id}", Role: auth.Viewer, Summary: "A vendor profile: match rules, columns, tuning, default jobs", Handler: http.HandlerFunc(c.vendorProfilePage)},
		// Alerts for people (alerts.go).
		Route{Pattern: "GET /alerts", Role: auth.Viewer, Summary: "Alerts: active first, the most severe first; filters by OLT, PON, rule, severity, state; acknowledge, silence", Handler: http.HandlerFunc(c.alertsPage)},
		Route{Pattern: "POST /alerts/{id}/ack", Role: auth.Operator, Summary: "Acknowledge an alert", Handler: http.HandlerFunc(c.ackAlert)},
		Route{Pattern: "GET /silences", Role: auth.Viewer, Summary: "Silences of alerts, with the form that creates one", Handler: http.HandlerFunc(c.silencesPage)},
		Route{Pattern: "POST /silences", Role: auth.Operator, Summary: "Create a silence", Handler: http.HandlerFunc(c.createSilence)},
		Route{Pattern: "POST /silences/{id}/delete", Role: auth.Operator, Summary: "Delete a silence", Handler: http.HandlerFunc(c.deleteSilence)},
	)
	for _, name := range []string{"brands", "oids", "olts", "jobs", "assignments", "workflows", "vendor-profiles", "users", "quotas", "violations", "onus"} {
		l := c.lists[name]
		role := auth.Viewer
		if name == "users" {
			role = auth.Admin
		}
		rs = append(rs, Route{Pattern: "GET /" + name, Role: role, Summary: "List of " + name, Handler: c.listHandler(name)})
		if len(l.Actions) > 0 {
			// The API checks each action's role; an operator may enable
			// or disable, only an admin delete.
			rs = append(rs, Route{Pattern: "POST /" + name + "/batch", Role: auth.Operator, Summary: "Batch action on " + name, Handler: c.batchHandler(name)})
		}
		if _, ok := c.forms[name]; ok {
			rs = append(rs,
				Route{Pattern: "GET /" + name + "/new", Role: auth.Admin, Summary: "Form: new " + l.Singular, Handler: c.formHandler(name, false)},
				Route{Pattern: "POST /" + name + "/new", Role: auth.Admin, Summary: "Create a " + l.Singular, Handler: c.formHandler(name, false)},
			)
			if c.forms[name].Editable {
				rs = append(rs,
					Route{Pattern: "GET /" + name + "/{id}/edit", Role: auth.Admin, Summary: "Form: edit a " + l.Singular, Handler: c.formHandler(name, true)},
					Route{Pattern: "POST /" + name + "/{id}/edit", Role: auth.Admin, Summary: "Save a " + l.Singular, Handler: c.formHandler(name, true)},
				)
			}
		}
	}
	return rs
}

// view is what every page template gets.
type view struct {
	Title  string
	Nav    string
	User   auth.Principal
	CSRF   string
	Msg    string
	Err    string
	Live   string // the /events topic the page follows ("" none)
	Query  url.Values
	Path   string
	Data   any
	Errors map[string]string
	Values map[string]string
	// Outages are the firing PON and OLT incidents (the banner of every
	// page).
	Outages []map[string]any
}

func (c *Console) newView(r *http.Request, title, nav string) *view {
	p, _ := auth.FromContext(r.Context())
	v := &view{Title: title, Nav: nav, User: p, CSRF: p.CSRF, Msg: r.URL.Query().Get("msg"), Err: r.URL.Query().Get("err"),
		Query: r.URL.Query(), Path: r.URL.Path, Errors: map[string]string{}, Values: map[string]string{}}
	if p.Role.Valid() {
		v.Outages = c.outages(r)
	}
	return v
}

func (c *Console) render(w http.ResponseWriter, status int, page string, v *view) {
	t, ok := c.pages[page]
	if !ok {
		http.Error(w, "no page "+page, http.StatusInternalServerError)
		return
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout.html", v); err != nil {
		c.d.Log.Warn().Err(err).Str("page", page).Msg("render page")
		http.Error(w, "page failed to render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	v := c.newView(r, "Not found", "")
	v.Data = r.URL.Path
	c.render(w, http.StatusNotFound, "notfound", v)
}

// apiResult is an in-process API answer.
type apiResult struct {
	Status int
	Body   map[string]any
}

// errMsg is the API's error message and the field it names.
func (a apiResult) errMsg() (string, string) {
	msg, _ := a.Body["error"].(string)
	f, _ := a.Body["field"].(string)
	if msg == "" {
		msg = http.StatusText(a.Status)
	}
	return msg, f
}

func (a apiResult) ok() bool { return a.Status/100 == 2 }

// call runs an API request in-process as the request's principal.
func (c *Console) call(ctx context.Context, method, path string, body any) apiResult {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return apiResult{Status: http.StatusInternalServerError, Body: map[string]any{"error": "encode request"}}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return apiResult{Status: http.StatusInternalServerError, Body: map[string]any{"error": "bad request path"}}
	}
	req.Header.Set("Content-Type", "application/json")
	rec := &recorder{header: http.Header{}}
	c.d.API.ServeHTTP(rec, req)
	out := apiResult{Status: rec.status, Body: map[string]any{}}
	if out.Status == 0 {
		out.Status = http.StatusOK
	}
	_ = json.Unmarshal(rec.body.Bytes(), &out.Body)
	return out
}

// recorder is a minimal in-memory http.ResponseWriter.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// redirect answers 303 to path with a message (msg) or an error (err).
func redirect(w http.ResponseWriter, r *http.Request, path, key, msg string) {
	if msg != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + key + "=" + url.QueryEscape(msg)
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// safeNext keeps a post-login destination on this site.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	v := c.newView(r, "Log in", "")
	v.Values["next"] = safeNext(r.URL.Query().Get("next"))
	c.render(w, http.StatusOK, "login", v)
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	username, password := strings.TrimSpace(r.PostFormValue("username")), r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	th := c.d.Throttle
	ip := ""
	if th != nil {
		ip = th.ClientIP(r)
		// Counted before the check, so parallel attempts cannot all pass;
		// a success clears the counts.
		if wait, ok := th.BeginLogin(ip, username); !ok {
			th.Count(auth.FailedLogin, auth.ReasonRateLimited)
			secs := int(math.Ceil(wait.Seconds()))
			c.d.Log.Debug().Str("user", username).Str("client_ip", ip).Int("retry_after_s", secs).Msg("login refused: rate limited")
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			v := c.newView(r, "Log in", "")
			v.Values["username"], v.Values["next"] = username, next
			v.Errors["password"] = fmt.Sprintf("Too many failed logins from this address or for this user: try again in %s.", waitText(secs))
			c.render(w, http.StatusTooManyRequests, "login", v)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	u, err := c.d.Users.CheckLogin(ctx, username, password)
	if err != nil {
		if !errors.Is(err, auth.ErrBadCredentials) {
			c.d.Log.Warn().Err(err).Msg("login")
			if th != nil {
				th.LoginNotChecked(ip, username)
			}
		} else if th != nil {
			th.Count(auth.FailedLogin, auth.ReasonBadCredentials)
			if wait := th.LoginWait(ip, username); wait > 0 {
				c.d.Log.Warn().Str("user", username).Str("client_ip", ip).Int("max_failures", th.Config().LoginMaxFailures).
					Int("retry_after_s", int(math.Ceil(wait.Seconds()))).Msg("login blocked: too many failures")
			}
		}
		c.d.Log.Info().Str("user", username).Str("client_ip", ip).Msg("login refused")
		v := c.newView(r, "Log in", "")
		v.Values["username"], v.Values["next"] = username, next
		v.Errors["password"] = "Unknown user or wrong password."
		c.render(w, http.StatusUnauthorized, "login", v)
		return
	}
	if th != nil {
		th.LoginSucceeded(ip, username)
	}
	sid, err := c.d.Users.NewSession(ctx, u.ID)
	if err != nil {
		c.d.Log.Warn().Err(err).Msg("new session")
		http.Error(w, "could not start a session, retry", http.StatusServiceUnavailable)
		return
	}
	c.d.Log.Info().Str("user", u.Username).Str("client_ip", ip).Msg("logged in")
	http.SetCookie(w, &http.Cookie{Name: c.d.SessionCookie, Value: sid, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteLaxMode, MaxAge: int(auth.SessionTTL / time.Second)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// waitText says secs in whole minutes, or seconds under one.
func waitText(secs int) string {
	if secs < 60 {
		return fmt.Sprintf("%d s", secs)
	}
	return fmt.Sprintf("%d min", (secs+59)/60)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(c.d.SessionCookie); err == nil {
		if err := c.d.Users.EndSession(r.Context(), ck.Value); err != nil {
			c.d.Log.Warn().Err(err).Msg("logout")
		}
	}
	http.SetCookie(w, &http.Cookie{Name: c.d.SessionCookie, Value: "", Path: "/", HttpOnly: true, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
