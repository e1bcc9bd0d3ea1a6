package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// GET /api/v1/olts and /api/v1/olts/{id} carry the OLT's availability from
// the olt_availability read model: null when never probed.
func TestOLTAvailabilityInTheAPI(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	f.must("POST", "/api/v1/brands", brandBody, http.StatusCreated)
	f.must("POST", "/api/v1/olts", oltBody, http.StatusCreated)
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	if _, err := f.db.Exec(ctx, `INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at, deleted, disabled_reason, disabled_at) VALUES
		('olt-a', 'A', '10.0.0.1', 161, 'huawei', true, $1, false, '', NULL),
		('olt-b', 'B', '10.0.0.2', 161, 'huawei', true, $1, false, '', NULL)`, now); err != nil {
		t.Fatal(err)
	}

	// Never probed: null.
	out := f.must("GET", "/api/v1/olts/olt-a", "", http.StatusOK)
	for _, k := range []string{"availability", "availability_since", "availability_error"} {
		if v, ok := out[k]; !ok || v != nil {
			t.Errorf("never probed: %s = %v (present %v), want null", k, v, ok)
		}
	}

	if _, err := f.db.Exec(ctx, `INSERT INTO olt_availability (olt_id, state, since, last_error, source, updated_at, stream_seq) VALUES
		('olt-a', 'unavailable', $1, 'request timeout (after 1 retries)', 'probe', $1, 3),
		('olt-b', 'available', $1, '', 'probe', $1, 4)`, now); err != nil {
		t.Fatal(err)
	}
	out = f.must("GET", "/api/v1/olts/olt-a", "", http.StatusOK)
	if out["availability"] != "unavailable" || out["availability_since"] != "2026-11-21T10:00:00Z" || out["availability_error"] != "request timeout (after 1 retries)" || out["id"] != "olt-a" {
		t.Errorf("olt-a %v", out)
	}
	out = f.must("GET", "/api/v1/olts", "", http.StatusOK)
	olts, _ := out["olts"].([]any)
	if len(olts) != 2 {
		t.Fatalf("olts %v", out)
	}
	a, b := olts[0].(map[string]any), olts[1].(map[string]any)
	if a["availability"] != "unavailable" || a["availability_error"] != "request timeout (after 1 retries)" {
		t.Errorf("olt-a in the list %v", a)
	}
	if b["availability"] != "available" || b["availability_since"] != "2026-11-21T10:00:00Z" || b["availability_error"] != nil {
		t.Errorf("olt-b in the list %v", b)
	}
}
