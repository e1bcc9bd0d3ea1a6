//go:build !unix

package pgtest

import (
	"context"
	"os"
)

// Off unix there is no private cluster (pgboot needs unix), so no users
// to count.
func joinUsers(context.Context, string) (*os.File, error) { return nil, nil }

func lastUser(*os.File) bool { return false }
