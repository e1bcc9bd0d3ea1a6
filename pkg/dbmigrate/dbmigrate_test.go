package dbmigrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/dbmigrate"
	"github.com/facho-olt/facho/pkg/pgtest"
)

// Several services starting at once must apply each migration once: tern's
// advisory lock serialises them.
func TestConcurrentApply(t *testing.T) {
	url := pgtest.EmptyURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var g errgroup.Group
	for range 6 {
		g.Go(func() error { return dbmigrate.ApplyURL(ctx, url, zerolog.Nop()) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	latest, err := dbmigrate.Latest()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var version int
	if err := conn.QueryRow(ctx, "SELECT version FROM "+dbmigrate.VersionTable).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != latest {
		t.Fatalf("version %d, want %d", version, latest)
	}
	// Applying again is a no-op.
	if err := dbmigrate.ApplyURL(ctx, url, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
}

// onu_walk_seen's arrays are written on every projector transaction: they
// must not go through pglz (migration 013), but lz4 or no compression.
func TestWalkSeenArraysSkipPGLZ(t *testing.T) {
	url := pgtest.EmptyURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dbmigrate.ApplyURL(ctx, url, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT attname, attcompression::text, attstorage::text FROM pg_attribute
		WHERE attrelid = 'onu_walk_seen'::regclass AND attname IN ('pon_index', 'onu_id', 'rx_read') ORDER BY attname`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var name, compression, storage string
		if err := rows.Scan(&name, &compression, &storage); err != nil {
			t.Fatal(err)
		}
		n++
		if compression != "l" && storage != "e" {
			t.Errorf("onu_walk_seen.%s: compression %q, storage %q; want lz4 (l) or external (e)", name, compression, storage)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("%d array columns found, want 3", n)
	}
}
