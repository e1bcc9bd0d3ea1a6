package devstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"github.com/facho-olt/facho/services/oltsim"
)

// DemoProfile is the vendor profile `facho dev` configures its simulated
// Huawei OLTs from.
const DemoProfile = "huawei-ma5800"

// ProfileDemo is what ConfigureProfile set up.
type ProfileDemo struct {
	OLTs []string // OLT ids, the simulator's OLT names
	Jobs []string // the profile's default jobs, every IntervalSeconds
	// Existing is true when every OLT existed already (a restart on the
	// same data folder): they were left as they are.
	Existing bool
}

// ConfigureProfile configures the simulated OLTs as an operator adds real
// ones: one POST /api/v1/olts with "profile" per OLT, which creates the
// profile's brand, OIDs and default jobs (with their decoders and port
// names: 0/1/3:5, not raw indexes) and assigns the jobs. The profile's
// jobs then run every o.IntervalSeconds, the demo's pace rather than the
// profile's production one. An OLT that exists (a restart on the same data
// folder) is left as it is.
func ConfigureProfile(ctx context.Context, c *Client, olts []*oltsim.OLT, profile string, o DemoOptions) (ProfileDemo, error) {
	if o.IntervalSeconds == 0 {
		o.IntervalSeconds = 60
	}
	out := ProfileDemo{Existing: len(olts) > 0}
	jobs := map[string]bool{}
	for _, olt := range olts {
		addr := olt.Addr()
		body := map[string]any{"id": olt.Name(), "name": olt.Name(), "ip": addr.IP.String(), "port": addr.Port,
			"community": o.Community, "profile": profile, "description": "simulated " + profile}
		var answer struct {
			Assigned []string `json:"assigned"`
		}
		err := c.Do(ctx, http.MethodPost, "/api/v1/olts", body, &answer)
		var apiErr *APIError
		switch {
		case errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict:
		case err != nil:
			return ProfileDemo{}, fmt.Errorf("create olt %s from profile %s: %w", olt.Name(), profile, err)
		default:
			out.Existing = false
			for _, j := range answer.Assigned {
				jobs[j] = true
			}
		}
		out.OLTs = append(out.OLTs, olt.Name())
	}
	if len(jobs) == 0 {
		// Every OLT existed: the profile's jobs are those of its brand.
		var list struct {
			Jobs []struct {
				ID string `json:"id"`
			} `json:"jobs"`
		}
		if err := c.Do(ctx, http.MethodGet, "/api/v1/jobs?brand_id="+url.QueryEscape(profile)+"&limit=100", nil, &list); err != nil {
			return ProfileDemo{}, fmt.Errorf("list the jobs of %s: %w", profile, err)
		}
		for _, j := range list.Jobs {
			jobs[j.ID] = true
		}
	}
	for id := range jobs {
		if err := c.Do(ctx, http.MethodPatch, "/api/v1/jobs/"+url.PathEscape(id), map[string]any{"interval_seconds": o.IntervalSeconds}, nil); err != nil {
			return ProfileDemo{}, fmt.Errorf("set the interval of job %s: %w", id, err)
		}
		out.Jobs = append(out.Jobs, id)
	}
	sort.Strings(out.Jobs)
	return out, nil
}
