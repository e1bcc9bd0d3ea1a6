// Package migrations holds Facho's SQL migrations, applied in file-name
// order at start-up by pkg/dbmigrate.
package migrations

import "embed"

// FS holds sql/*.sql.
//
//go:embed sql/*.sql
var FS embed.FS
