package projection_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/projection"
)

func TestApply(t *testing.T) {
	pool := pgtest.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE seen (seq bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	insert := func(seq uint64) func(context.Context, pgx.Tx) error {
		return func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO seen VALUES ($1)`, int64(seq))
			return err
		}
	}
	boom := errors.New("boom")
	steps := []struct {
		name    string
		seq     uint64
		fn      func(context.Context, pgx.Tx) error
		applied bool
		wantErr bool
		ckpt    uint64
	}{
		{"first", 1, insert(1), true, false, 1},
		{"redelivered", 1, insert(1), false, false, 1},
		{"next", 2, insert(2), true, false, 2},
		{"gap is fine", 5, insert(5), true, false, 5},
		{"older", 3, insert(3), false, false, 5},
		{"failing fn rolls back", 6, func(ctx context.Context, tx pgx.Tx) error {
			if err := insert(6)(ctx, tx); err != nil {
				return err
			}
			return boom
		}, false, true, 5},
		{"retry after failure", 6, insert(6), true, false, 6},
	}
	for _, s := range steps {
		applied, err := projection.Apply(ctx, pool, "c1", s.seq, s.fn)
		if (err != nil) != s.wantErr || applied != s.applied {
			t.Fatalf("%s: Apply = %v, %v; want applied=%v err=%v", s.name, applied, err, s.applied, s.wantErr)
		}
		if s.wantErr && !errors.Is(err, boom) {
			t.Fatalf("%s: error %v does not wrap fn's error", s.name, err)
		}
		ckpt, err := projection.Checkpoint(ctx, pool, "c1")
		if err != nil || ckpt != s.ckpt {
			t.Fatalf("%s: checkpoint = %d, %v; want %d", s.name, ckpt, err, s.ckpt)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM seen`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("seen rows = %d, %v; want 4 (1,2,5,6)", n, err)
	}
	if c, err := projection.Checkpoint(ctx, pool, "other"); err != nil || c != 0 {
		t.Fatalf("unknown consumer checkpoint = %d, %v", c, err)
	}
	if err := projection.Reset(ctx, pool, "c1", 0); err != nil {
		t.Fatal(err)
	}
	if c, _ := projection.Checkpoint(ctx, pool, "c1"); c != 0 {
		t.Fatalf("after reset checkpoint = %d", c)
	}
}

// Replicas racing on the same sequences apply each exactly once.
func TestApplyConcurrent(t *testing.T) {
	pool := pgtest.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE hits (seq bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	var g errgroup.Group
	for range 4 {
		g.Go(func() error {
			for seq := uint64(1); seq <= 30; seq++ {
				_, err := projection.Apply(ctx, pool, "race", seq, func(ctx context.Context, tx pgx.Tx) error {
					_, err := tx.Exec(ctx, `INSERT INTO hits VALUES ($1)`, int64(seq))
					return err
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM hits`).Scan(&n); err != nil || n != 30 {
		t.Fatalf("hits = %d, %v; want 30", n, err)
	}
}
