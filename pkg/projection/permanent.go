package projection

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

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

// Unavailable reports whether err says the database as a whole cannot be
// used now, whatever the message: connection lost or refused (class 08),
// out of resources (53), shutting down or not accepting connections (57,
// except 57014 query_canceled, which a slow message can cause), system
// error (58), a missing database, schema, table, column or privilege (3D,
// 3F, 42: the schema and the code disagree), a read-only transaction
// (25006: a failover to a standby). No message would pass, so none
// should count toward a delivery bound.
func Unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return false
	}
	switch pgErr.Code[:2] {
	case "08", "53", "58", "3D", "3F", "42":
		return true
	case "57":
		return pgErr.Code != "57014"
	}
	return pgErr.Code == "25006"
}

// Health is the jsrouter.Config.Health of projections on pool: the
// database is unavailable when cause says so (Unavailable) or when it does
// not answer a ping; otherwise the failure was the message's own.
func Health(pool *pgxpool.Pool) func(ctx context.Context, cause error) error {
	return func(ctx context.Context, cause error) error {
		if Unavailable(cause) {
			return fmt.Errorf("database unusable: %w", cause)
		}
		if err := pool.Ping(ctx); err != nil {
			return fmt.Errorf("database ping: %w", err)
		}
		return nil
	}
}
