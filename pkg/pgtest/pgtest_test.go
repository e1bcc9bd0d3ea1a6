package pgtest

import (
	"context"
	"testing"
)

func TestNewHasSchema(t *testing.T) {
	pool := New(t)
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM checkpoints").Scan(&n); err != nil {
		t.Fatalf("checkpoints table: %v", err)
	}
	var version int
	if err := pool.QueryRow(context.Background(), "SELECT version FROM schema_version").Scan(&version); err != nil || version < 1 {
		t.Fatalf("schema_version = %d, %v", version, err)
	}
}

func TestDatabasesAreIsolated(t *testing.T) {
	a, b := New(t), New(t)
	ctx := context.Background()
	if _, err := a.Exec(ctx, "INSERT INTO checkpoints (consumer, last_seq) VALUES ('x', 7)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM checkpoints").Scan(&n); err != nil || n != 0 {
		t.Fatalf("second database sees %d rows (%v)", n, err)
	}
}

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/db1?sslmode=disable"},
		{"postgresql://u:p@h/x", "postgresql://u:p@h/db1"},
		{"host=h user=u dbname=x", "host=h user=u dbname=x dbname=db1"},
	} {
		got, err := withDatabase(tc.in, "db1")
		if err != nil || got != tc.want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
