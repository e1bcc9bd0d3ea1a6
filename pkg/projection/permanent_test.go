package projection_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"numeric out of range", &pgconn.PgError{Code: "22003"}, true},
		{"NUL in text, wrapped", fmt.Errorf("upsert brand: %w", &pgconn.PgError{Code: "22021"}), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, true},
		{"check violation", &pgconn.PgError{Code: "23514"}, true},
		{"undefined table", &pgconn.PgError{Code: "42P01"}, false},
		{"connection failure", &pgconn.PgError{Code: "08006"}, false},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"short code", &pgconn.PgError{Code: "22"}, false},
		{"pgx cannot encode", errors.New("failed to encode args[3]: unable to encode 1099511627776 into binary format for int4"), true},
		{"network", errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := projection.Permanent(tc.err); got != tc.want {
				t.Fatalf("Permanent(%v) = %v, want %v", tc.err, got, tc.want)
			}
			got := projection.AsMalformed(tc.err)
			if errors.Is(got, streams.ErrMalformed) != tc.want {
				t.Fatalf("AsMalformed(%v) = %v; malformed want %v", tc.err, got, tc.want)
			}
			if tc.err != nil && !errors.Is(got, tc.err) {
				t.Fatalf("AsMalformed(%v) = %v lost the cause", tc.err, got)
			}
		})
	}
}
