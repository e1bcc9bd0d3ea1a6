// Package dbmigrate applies Facho's SQL migrations (module migrations,
// sql/*.sql) with tern. Every service calls Apply at start-up; tern holds a
// Postgres advisory lock while it reads and advances the version, so
// services starting together apply each migration exactly once.
package dbmigrate

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/migrations"
)

// VersionTable is where tern records the applied migration version.
const VersionTable = "schema_version"

// Apply migrates the database behind pool to the latest version.
func Apply(ctx context.Context, pool *pgxpool.Pool, log zerolog.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: acquire connection: %w", err)
	}
	defer conn.Release()
	return ApplyConn(ctx, conn.Conn(), log)
}

// ApplyURL connects to url, migrates and disconnects.
func ApplyURL(ctx context.Context, url string, log zerolog.Logger) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return ApplyConn(ctx, conn, log)
}

// ApplyConn migrates the database of conn to the latest version.
func ApplyConn(ctx context.Context, conn *pgx.Conn, log zerolog.Logger) error {
	sqlFS, err := fs.Sub(migrations.FS, "sql")
	if err != nil {
		return fmt.Errorf("migrate: open embedded migrations: %w", err)
	}
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return fmt.Errorf("migrate: prepare %s: %w", VersionTable, err)
	}
	if err := m.LoadMigrations(sqlFS); err != nil {
		return fmt.Errorf("migrate: load migrations: %w", err)
	}
	m.OnStart = func(seq int32, name, direction, _ string) {
		log.Info().Int32("version", seq).Str("migration", name).Str("direction", direction).Msg("applying migration")
	}
	before, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrate: read current version: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate from version %d: %w", before, err)
	}
	after, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrate: read version after migrating: %w", err)
	}
	log.Debug().Int32("from", before).Int32("to", after).Msg("database schema up to date")
	return nil
}

// Latest returns the number of migrations embedded, i.e. the version Apply
// reaches.
func Latest() (int, error) {
	sqlFS, err := fs.Sub(migrations.FS, "sql")
	if err != nil {
		return 0, fmt.Errorf("open embedded migrations: %w", err)
	}
	paths, err := migrate.FindMigrations(sqlFS)
	if err != nil {
		return 0, fmt.Errorf("find migrations: %w", err)
	}
	return len(paths), nil
}
