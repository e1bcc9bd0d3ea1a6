package devstack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/facho-olt/facho/services/api/auth"
)

// FirstAdminName is the username of the first admin facho dev creates.
const FirstAdminName = "admin"

// EnsureFirstAdmin creates the user admin with a random password when the
// database has no user yet, and returns its name and password (to be shown
// once); with users already there it returns empty strings.
func EnsureFirstAdmin(ctx context.Context, store *auth.Store) (string, string, error) {
	n, err := store.CountUsers(ctx)
	if err != nil {
		return "", "", fmt.Errorf("first admin: %w", err)
	}
	if n > 0 {
		return "", "", nil
	}
	b := make([]byte, 15)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("first admin password: %w", err)
	}
	pw := base64.RawURLEncoding.EncodeToString(b)
	if _, err := store.CreateUser(ctx, FirstAdminName, auth.Admin, pw); err != nil {
		return "", "", fmt.Errorf("first admin: %w", err)
	}
	return FirstAdminName, pw, nil
}
