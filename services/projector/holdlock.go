package projector

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// advisoryLockKey is the Postgres advisory lock key of a name.
func advisoryLockKey(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return int64(h.Sum64() >> 1)
}

// holdLock runs fn while holding the session advisory lock key on a
// connection of its own (fn gets it; what fn runs there runs under the
// lock): a projector that does not get the lock stands by, calling
// standby once and trying again every poll, until ctx ends. The lock is
// released when fn returns; a connection that cannot release it is closed,
// which ends the lock with its session, so a pooled connection never keeps
// it.
func holdLock(ctx context.Context, db *pgxpool.Pool, key int64, what string, poll time.Duration, standby func(), fn func(conn *pgxpool.Conn) error) error {
	conn, err := db.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire %s lock connection: %w", what, err)
	}
	defer conn.Release()
	waiting := false
	for {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil {
			return fmt.Errorf("take %s lock: %w", what, err)
		}
		if got {
			break
		}
		if !waiting {
			standby()
			waiting = true
		}
		if !sleepCtx(ctx, poll) {
			return ctx.Err()
		}
	}
	defer unlockAdvisory(ctx, conn, `SELECT pg_advisory_unlock($1)`, key)
	return fn(conn)
}

// unlockAdvisory releases a session advisory lock with unlock (the
// exclusive or the shared form), even after ctx ended; a connection that
// cannot release it is closed, which ends the lock with its session, so a
// pooled connection never keeps it.
func unlockAdvisory(ctx context.Context, conn *pgxpool.Conn, unlock string, key int64) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if _, err := conn.Exec(uctx, unlock, key); err != nil {
		conn.Conn().Close(uctx) //nolint:errcheck // the lock ends with the session
	}
}
