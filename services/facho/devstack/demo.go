package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/facho-olt/facho/services/oltsim"
)

// Client is a small client of Facho's API, used to configure the demo and
// by the end-to-end tests (they go through the API like a person would).
type Client struct {
	BaseURL string
	Token   string
	HTTP    *http.Client
}

// APIError is a non-2xx answer.
type APIError struct {
	Status int
	Body   string
}

func (e *APIError) Error() string { return fmt.Sprintf("api answered %d: %s", e.Status, e.Body) }

// Do sends body as JSON and decodes the answer into out (if not nil).
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &APIError{Status: resp.StatusCode, Body: string(b)}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// upsert creates a resource (POST collection) or, when its id exists
// (409: a restart of facho dev on the same data folder), replaces it (PUT
// item).
func (c *Client) upsert(ctx context.Context, collection, item string, body any) error {
	err := c.Do(ctx, http.MethodPost, collection, body, nil)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
		return c.Do(ctx, http.MethodPut, item, body, nil)
	}
	return err
}

// HuaweiOIDs are the ONU-table OIDs of a Huawei MA5600/MA5800 (see
// shared/OLT-OIDS.md) as API bodies.
func HuaweiOIDs(brandID string) []map[string]any {
	base := "1.3.6.1.4.1.2011.6.128.1.1.2"
	return []map[string]any{
		{"id": "hw-ont-serial", "brand_id": brandID, "name": "ONT serial (hwGponDeviceOntSn)", "oid": base + ".43.1.3", "field": "serial", "decoder": map[string]any{"kind": "hex_serial"}},
		{"id": "hw-ont-description", "brand_id": brandID, "name": "ONT description", "oid": base + ".43.1.9", "field": "description", "decoder": map[string]any{"kind": "string"}},
		{"id": "hw-ont-run-status", "brand_id": brandID, "name": "ONT run status", "oid": base + ".46.1.15", "field": "status", "decoder": map[string]any{"kind": "enum", "enum": map[string]string{"1": "ONLINE", "2": "OFFLINE"}}},
		{"id": "hw-ont-rx-power", "brand_id": brandID, "name": "ONT Rx power", "oid": base + ".51.1.4", "field": "rx_power", "decoder": map[string]any{"kind": "scaled", "scale": 0.01, "no_reading": 2147483647}},
	}
}

// DemoOptions shape the demo configuration.
type DemoOptions struct {
	Community       string
	IntervalSeconds int
	JobID           string
}

// ConfigureHuawei creates the Huawei brand, its ONU OIDs, one OLT per
// simulated OLT and a discovery job assigned to all of them, through the
// API. It returns the OLT ids (the simulator's OLT names).
func ConfigureHuawei(ctx context.Context, c *Client, olts []*oltsim.OLT, o DemoOptions) ([]string, error) {
	if o.JobID == "" {
		o.JobID = "huawei-onu-discovery"
	}
	if o.IntervalSeconds == 0 {
		o.IntervalSeconds = 60
	}
	if err := c.upsert(ctx, "/api/v1/brands", "/api/v1/brands/huawei", map[string]any{"id": "huawei", "name": "Huawei", "description": "MA5600T/MA5800 GPON", "index_scheme": "pon.onu"}); err != nil {
		return nil, fmt.Errorf("create brand: %w", err)
	}
	var oidIDs []string
	for _, body := range HuaweiOIDs("huawei") {
		if err := c.upsert(ctx, "/api/v1/oids", "/api/v1/oids/"+body["id"].(string), body); err != nil {
			return nil, fmt.Errorf("create oid %s: %w", body["id"], err)
		}
		oidIDs = append(oidIDs, body["id"].(string))
	}
	var ids []string
	for _, olt := range olts {
		addr := olt.Addr()
		body := map[string]any{"id": olt.Name(), "name": olt.Name(), "ip": addr.IP.String(), "port": addr.Port, "community": o.Community, "brand_id": "huawei", "enabled": true, "description": "simulated Huawei MA5800"}
		if err := c.upsert(ctx, "/api/v1/olts", "/api/v1/olts/"+olt.Name(), body); err != nil {
			return nil, fmt.Errorf("create olt %s: %w", olt.Name(), err)
		}
		ids = append(ids, olt.Name())
	}
	job := map[string]any{"id": o.JobID, "name": "ONU discovery", "brand_id": "huawei", "kind": "discovery", "oid_ids": oidIDs, "interval_seconds": o.IntervalSeconds, "max_retries": 3, "retry_delay_seconds": 120, "priority": 90, "enabled": true}
	if err := c.upsert(ctx, "/api/v1/jobs", "/api/v1/jobs/"+o.JobID, job); err != nil {
		return nil, fmt.Errorf("create job: %w", err)
	}
	for _, id := range ids {
		if err := c.upsert(ctx, "/api/v1/jobs/"+o.JobID+"/olts", "/api/v1/jobs/"+o.JobID+"/olts/"+id, map[string]any{"olt_id": id, "enabled": true}); err != nil {
			return nil, fmt.Errorf("assign job to %s: %w", id, err)
		}
	}
	return ids, nil
}
