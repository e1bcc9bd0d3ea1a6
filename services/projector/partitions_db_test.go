package projector

import (
	"context"
	"testing"

	"github.com/facho-olt/facho/pkg/pgtest"
)

// Advisory locks belong to a database, but pg_locks lists the whole
// server's: a projector must not take another Facho's projectors (another
// database on the same server) for replicas of its own. One of a single
// partition runs there; here 2 partitions join.
func TestOtherDatabasesProjectorsAreNotReplicas(t *testing.T) {
	ctx := context.Background()
	there, here := pgtest.New(t), pgtest.New(t)
	lock, err := there.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	for _, key := range []int64{varbindLockKey, regimeKey(1)} {
		if _, err := lock.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := here.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	joined, err := tryJoin(ctx, conn, 2, otherRegimes(2))
	if err != nil {
		t.Fatal(err)
	}
	if !joined {
		t.Fatal("2 partitions here stand by for a 1-partition projector of another database")
	}
	// Replicas of the same count are counted here only.
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_lock_shared($1)`, regimeKey(2)); err != nil {
		t.Fatal(err)
	}
	var replicas int
	if err := here.QueryRow(ctx, heldAdvisory, []int64{regimeKey(2)}).Scan(&replicas); err != nil {
		t.Fatal(err)
	}
	if replicas != 1 {
		t.Fatalf("%d replicas of 2 partitions counted here, want 1 (this one)", replicas)
	}
}
