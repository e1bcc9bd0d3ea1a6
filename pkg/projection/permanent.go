package projection

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/facho-olt/facho/streams"
)

// Permanent reports whether err is one no retry can fix: the data does not
// fit the schema (SQLSTATE class 22 data exception, 23 integrity constraint
// violation), or pgx could not encode a value into its column type (e.g.
// an integer out of range), which it reports before sending anything.
// Anything else (connection lost, table missing, deadlock) may pass later.
func Permanent(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && len(pgErr.Code) == 5 {
		class := pgErr.Code[:2]
		return class == "22" || class == "23"
	}
	return strings.Contains(err.Error(), "failed to encode args")
}

// AsMalformed wraps a Permanent error as streams.ErrMalformed, so a
// jsrouter handler dead-letters the message instead of blocking its
// consumer forever; other errors are returned as they are.
func AsMalformed(err error) error {
	if Permanent(err) && !errors.Is(err, streams.ErrMalformed) {
		return fmt.Errorf("%w: %w", streams.ErrMalformed, err)
	}
	return err
}
