// Package auth holds the people of Facho's console and API: users with a
// role (admin, operator, viewer), argon2id password hashes, console
// sessions and per-user API tokens, all in Postgres (migration
// 005_users.sql), none of their secrets in plaintext: sessions and tokens
// are stored as their SHA-256, passwords as argon2id hashes.
//
// Roles are ordered: a viewer reads; an operator also runs work and
// enables or disables OLTs, jobs and assignments; an admin also changes
// configuration and manages users. A token's scope is its user's role.
package auth

import (
	"context"
	"fmt"
)

// Role of a user.
type Role string

// Roles, from the least to the most allowed.
const (
	Viewer   Role = "viewer"
	Operator Role = "operator"
	Admin    Role = "admin"
)

// Roles lists the roles, least allowed first.
func Roles() []Role { return []Role{Viewer, Operator, Admin} }

func (r Role) rank() int {
	switch r {
	case Viewer:
		return 1
	case Operator:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// Valid reports a known role.
func (r Role) Valid() bool { return r.rank() > 0 }

// Allows reports whether r may do what needs min.
func (r Role) Allows(min Role) bool { return r.rank() > 0 && r.rank() >= min.rank() }

// ParseRole reads a role name.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !r.Valid() {
		return "", fmt.Errorf("role %q: want admin, operator or viewer", s)
	}
	return r, nil
}

// Via says how a principal authenticated.
type Via string

// Ways to authenticate.
const (
	ViaSession     Via = "session"
	ViaToken       Via = "token"
	ViaStaticToken Via = "static-token" // FACHO_API_TOKENS: an admin for scripts
)

// Principal is who makes a request.
type Principal struct {
	UserID   int64  // 0 for a static token
	Username string // "token" for a static token
	Role     Role
	Via      Via
	// CSRF is the session's form token (sessions only).
	CSRF string
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p. The API trusts a principal found in
// the request context (the console calls the API in-process with the
// logged-in user's); no client can set one.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal of ctx.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok && p.Role.Valid()
}
