package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/api"
	"github.com/facho-olt/facho/streams"
)

// The profiles of FACHO_PROFILES_DIR are listed with their origin, and a
// file that does not validate is listed with its error, not dropped.
func TestVendorProfilesFolderListedWithErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("acme.yaml", `id: acme
name: ACME
index_scheme: s
index: {parts: [{name: pon, type: int}, {name: onu, type: int}], pon_index: pon, onu_id: onu}
columns: [{id: sn, name: sn, oid: 1.3.6.1.4.1.9.1, field: serial, decoder: {kind: string}}]
jobs: [{id: d, name: d, kind: discovery, columns: [sn], interval_seconds: 60}]
`)
	write("broken.yaml", `id: broken
name: Broken
index_scheme: s
index: {parts: [{name: pon, type: int}, {name: sn, type: string}], pon_index: pon, onu_id: hash(sn)}
columns: [{id: sn, name: sn, oid: 1.3.6.1.4.1.9.1, field: serial, decoder: {kind: string}}]
jobs: [{id: g, name: g, kind: get, columns: [sn], interval_seconds: 60}]
`)
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	k, _ := secret.NewKey()
	key, _ := secret.ParseKey(k)
	box, err := secret.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.NewHandler(context.Background(), api.Config{Tokens: []string{token}, ProfilesDir: dir},
		api.Deps{JS: env.JS, DB: pgtest.New(t), Box: box, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatalf("a bad profile file stops the API: %v", err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	f := &fixture{t: t, srv: srv}
	out := f.must("GET", "/api/v1/vendor-profiles", "", http.StatusOK)
	byID := map[string]map[string]any{}
	for _, p := range out["profiles"].([]any) {
		m := p.(map[string]any)
		byID[m["id"].(string)] = m
	}
	if p := byID["acme"]; p == nil || p["origin"] != "file" || p["source"] != filepath.Join(dir, "acme.yaml") || p["error"] != nil {
		t.Errorf("folder profile: %v", p)
	}
	if p := byID["huawei-ma5800"]; p == nil || p["origin"] != "built-in" {
		t.Errorf("built-in profile: %v", p)
	}
	if p := byID["broken"]; p == nil || p["origin"] != "file" || !strings.Contains(p["error"].(string), `job "g": a get reads each ONU`) {
		t.Errorf("broken file: %v", p)
	}
	f.must("GET", "/api/v1/vendor-profiles/broken", "", http.StatusNotFound)
}
