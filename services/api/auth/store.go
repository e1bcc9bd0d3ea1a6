package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Errors of the store.
var (
	ErrBadCredentials = errors.New("unknown user or wrong password")
	ErrNotFound       = errors.New("not found")
	ErrExists         = errors.New("already exists")
	ErrBadUsername    = errors.New("username must be 1-64 characters of a-z 0-9 . _ - starting with a letter or digit")
)

// TokenPrefix starts every per-user API token.
const TokenPrefix = "facho_"

// SessionTTL is how long a console session lives.
const SessionTTL = 12 * time.Hour

var usernameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// User is a person of the console.
type User struct {
	ID        int64     `json:"id"`
	Username  string    `json:"username"`
	Role      Role      `json:"role"`
	Disabled  bool      `json:"disabled"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Token describes an API token (never its secret).
type Token struct {
	ID         string     `json:"id"`
	UserID     int64      `json:"user_id"`
	Username   string     `json:"username"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// Store keeps users, sessions and tokens in Postgres.
type Store struct {
	DB *pgxpool.Pool
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// CheckUsername validates a username.
func CheckUsername(name string) error {
	if !usernameRE.MatchString(name) {
		return ErrBadUsername
	}
	return nil
}

func isUnique(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// CreateUser adds a user; ErrExists when the username is taken.
func (s *Store) CreateUser(ctx context.Context, username string, role Role, password string) (User, error) {
	var u User
	if err := CheckUsername(username); err != nil {
		return u, err
	}
	if !role.Valid() {
		return u, fmt.Errorf("role %q: want admin, operator or viewer", role)
	}
	hash, err := HashPassword(password)
	if err != nil {
		return u, err
	}
	err = s.DB.QueryRow(ctx, `INSERT INTO users (username, role, password_hash) VALUES ($1, $2, $3)
		RETURNING id, username, role, disabled, created_at, updated_at`, username, string(role), hash).
		Scan(&u.ID, &u.Username, &u.Role, &u.Disabled, &u.CreatedAt, &u.UpdatedAt)
	if isUnique(err) {
		return u, ErrExists
	}
	if err != nil {
		return u, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// CountUsers counts the users.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

const userCols = `id, username, role, disabled, created_at, updated_at`

// Users lists the users by name.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	rows, err := s.DB.Query(ctx, `SELECT `+userCols+` FROM users ORDER BY username`)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[User])
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	if out == nil {
		out = []User{}
	}
	return out, nil
}

// UserByID reads one user.
func (s *Store) UserByID(ctx context.Context, id int64) (User, error) {
	rows, err := s.DB.Query(ctx, `SELECT `+userCols+` FROM users WHERE id = $1`, id)
	if err != nil {
		return User{}, fmt.Errorf("read user: %w", err)
	}
	u, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[User])
	if errors.Is(err, pgx.ErrNoRows) {
		return u, ErrNotFound
	}
	if err != nil {
		return u, fmt.Errorf("read user: %w", err)
	}
	return u, nil
}

// UserChange is a partial update of a user (nil: unchanged).
type UserChange struct {
	Role     *Role
	Disabled *bool
	Password *string
}

// UpdateUser changes a user. Disabling a user or changing their password
// ends their sessions.
func (s *Store) UpdateUser(ctx context.Context, id int64, c UserChange) (User, error) {
	if c.Role != nil && !c.Role.Valid() {
		return User{}, fmt.Errorf("role %q: want admin, operator or viewer", *c.Role)
	}
	var hash *string
	if c.Password != nil {
		h, err := HashPassword(*c.Password)
		if err != nil {
			return User{}, err
		}
		hash = &h
	}
	var role *string
	if c.Role != nil {
		r := string(*c.Role)
		role = &r
	}
	tx, err := s.DB.Begin(ctx)
	if err != nil {
		return User{}, fmt.Errorf("update user: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	tag, err := tx.Exec(ctx, `UPDATE users SET role = coalesce($2, role), disabled = coalesce($3, disabled),
		password_hash = coalesce($4, password_hash), updated_at = now() WHERE id = $1`, id, role, c.Disabled, hash)
	if err != nil {
		return User{}, fmt.Errorf("update user: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return User{}, ErrNotFound
	}
	if (c.Disabled != nil && *c.Disabled) || c.Password != nil {
		if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1`, id); err != nil {
			return User{}, fmt.Errorf("end sessions: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return User{}, fmt.Errorf("update user: %w", err)
	}
	return s.UserByID(ctx, id)
}

// DeleteUser removes a user with their sessions and tokens.
func (s *Store) DeleteUser(ctx context.Context, id int64) error {
	tag, err := s.DB.Exec(ctx, `DELETE FROM users WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete user: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// CheckLogin verifies a username and password of an enabled user.
func (s *Store) CheckLogin(ctx context.Context, username, password string) (User, error) {
	var u User
	var hash string
	err := s.DB.QueryRow(ctx, `SELECT `+userCols+`, password_hash FROM users WHERE username = $1`, username).
		Scan(&u.ID, &u.Username, &u.Role, &u.Disabled, &u.CreatedAt, &u.UpdatedAt, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		// Same work as a real check, so timing does not tell which
		// usernames exist.
		_, _ = CheckPassword(dummyHash, password)
		return u, ErrBadCredentials
	}
	if err != nil {
		return u, fmt.Errorf("read user: %w", err)
	}
	ok, err := CheckPassword(hash, password)
	if err != nil || !ok || u.Disabled {
		return User{}, ErrBadCredentials
	}
	return u, nil
}

// dummyHash is the hash of a random password of no user.
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$3Lw5yqr0Pk1mGdbY0mIqQx1mD4BbyXkzZ7mVb8hGQfE"

func randomToken(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func digest(s string) []byte {
	d := sha256.Sum256([]byte(s))
	return d[:]
}

// NewSession starts a session of user and returns its cookie value (shown
// once; stored as its SHA-256).
func (s *Store) NewSession(ctx context.Context, userID int64) (string, error) {
	id, err := randomToken(32)
	if err != nil {
		return "", err
	}
	csrf, err := randomToken(24)
	if err != nil {
		return "", err
	}
	if _, err := s.DB.Exec(ctx, `INSERT INTO sessions (id_hash, user_id, csrf, expires_at) VALUES ($1, $2, $3, $4)`,
		digest(id), userID, csrf, s.now().Add(SessionTTL)); err != nil {
		return "", fmt.Errorf("new session: %w", err)
	}
	// Sessions past their end are dropped on the way.
	_, _ = s.DB.Exec(ctx, `DELETE FROM sessions WHERE expires_at < $1`, s.now())
	return id, nil
}

// Session returns the principal of a live session of an enabled user.
func (s *Store) Session(ctx context.Context, id string) (Principal, error) {
	var p Principal
	if id == "" || len(id) > 128 {
		return p, ErrNotFound
	}
	err := s.DB.QueryRow(ctx, `SELECT u.id, u.username, u.role, s.csrf FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.id_hash = $1 AND s.expires_at > $2 AND NOT u.disabled`, digest(id), s.now()).
		Scan(&p.UserID, &p.Username, &p.Role, &p.CSRF)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("read session: %w", err)
	}
	p.Via = ViaSession
	return p, nil
}

// EndSession deletes a session (logout).
func (s *Store) EndSession(ctx context.Context, id string) error {
	if _, err := s.DB.Exec(ctx, `DELETE FROM sessions WHERE id_hash = $1`, digest(id)); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// CreateToken makes an API token for a user and returns its secret, shown
// once (stored as its SHA-256).
func (s *Store) CreateToken(ctx context.Context, userID int64, name string) (string, Token, error) {
	var t Token
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return "", t, errors.New("token name must be 1..100 characters")
	}
	sec, err := randomToken(32)
	if err != nil {
		return "", t, err
	}
	secret := TokenPrefix + sec
	id, err := randomToken(9)
	if err != nil {
		return "", t, err
	}
	err = s.DB.QueryRow(ctx, `INSERT INTO api_tokens (id, user_id, name, token_hash, prefix)
		SELECT $1, $2, $3, $4, $5 FROM users WHERE id = $2
		RETURNING id, user_id, (SELECT username FROM users WHERE id = $2), name, prefix, created_at, last_used_at, revoked_at`,
		id, userID, name, digest(secret), secret[:len(TokenPrefix)+4]).
		Scan(&t.ID, &t.UserID, &t.Username, &t.Name, &t.Prefix, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", t, ErrNotFound
	}
	if err != nil {
		return "", t, fmt.Errorf("create token: %w", err)
	}
	return secret, t, nil
}

// Tokens lists the tokens of a user (userID 0: everyone's).
func (s *Store) Tokens(ctx context.Context, userID int64) ([]Token, error) {
	rows, err := s.DB.Query(ctx, `SELECT t.id, t.user_id, u.username, t.name, t.prefix, t.created_at, t.last_used_at, t.revoked_at
		FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE ($1 = 0 OR t.user_id = $1) ORDER BY t.created_at DESC, t.id`, userID)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Token])
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	if out == nil {
		out = []Token{}
	}
	return out, nil
}

// RevokeToken revokes a token of userID (0: anyone's, for admins).
func (s *Store) RevokeToken(ctx context.Context, userID int64, id string) error {
	tag, err := s.DB.Exec(ctx, `UPDATE api_tokens SET revoked_at = $3 WHERE id = $1 AND ($2 = 0 OR user_id = $2) AND revoked_at IS NULL`,
		id, userID, s.now())
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// TokenPrincipal returns the principal of a live API token.
func (s *Store) TokenPrincipal(ctx context.Context, secret string) (Principal, error) {
	var p Principal
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) > 128 {
		return p, ErrNotFound
	}
	var id string
	err := s.DB.QueryRow(ctx, `SELECT t.id, u.id, u.username, u.role FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND NOT u.disabled`, digest(secret)).
		Scan(&id, &p.UserID, &p.Username, &p.Role)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("read token: %w", err)
	}
	// At most one write a minute per token.
	_, _ = s.DB.Exec(ctx, `UPDATE api_tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2 - interval '1 minute')`, id, s.now())
	p.Via = ViaToken
	return p, nil
}
