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
