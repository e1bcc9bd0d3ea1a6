package servicemain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/buildinfo"
	"github.com/facho-olt/facho/pkg/natsembed"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/streams"
)

var errTest = errors.New("test failure")

// logSink keeps the JSON log and hands out the telemetry address once the
// server listens.
type logSink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	bad   []string // lines that are not JSON with a service key
	addrs chan string
}

func newLogSink() *logSink { return &logSink{addrs: make(chan string, 1)} }

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var line struct {
		Message string `json:"message"`
		Addr    string `json:"addr"`
		Service string `json:"service"`
	}
	if err := json.Unmarshal(p, &line); err != nil || line.Service != "x" {
		l.bad = append(l.bad, string(p))
	}
	if line.Message == "telemetry listening" {
		l.addrs <- line.Addr
	}
	return l.buf.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logSink) badLines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bad
}

func startNATS(t *testing.T) string {
	t.Helper()
	srv, err := natsembed.Start(natsembed.Config{Port: -1, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv.URL()
}

// healthz returns the status and the checks of /healthz.
func healthz(t *testing.T, addr string) (int, map[string]string) {
	t.Helper()
	res, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	defer res.Body.Close()
	var body struct {
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("decode /healthz: %v", err)
	}
	return res.StatusCode, body.Checks
}

// runBinary runs b in the background and returns its log and its result.
func runBinary(ctx context.Context, b Binary, args []string, env map[string]string) (*logSink, <-chan error) {
	sink := newLogSink()
	done := make(chan error, 1)
	go func() {
		done <- b.Run(ctx, append([]string{"facho-x"}, args...), envMap(env), sink, io.Discard)
	}()
	return sink, done
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
		return nil
	}
}

// The service runs until ctx ends, beside a telemetry server that answers
// /healthz; both stop when ctx ends and Run returns nil.
func TestRunUntilCancelled(t *testing.T) {
	natsURL := startNATS(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	provisioned := make(chan error, 1)
	b := Binary{
		Name: "x",
		Service: func(ctx context.Context, d Deps) error {
			var err error
			for _, sc := range streams.StreamConfigs(streams.Options{}.WithDefaults()) {
				if _, serr := d.JS.Stream(ctx, sc.Name); serr != nil {
					err = errors.Join(err, fmt.Errorf("stream %s: %w", sc.Name, serr))
				}
			}
			provisioned <- err
			<-ctx.Done()
			return nil
		},
	}
	sink, done := runBinary(ctx, b, []string{"-http-addr", "127.0.0.1:0"}, map[string]string{EnvNATSURL: natsURL})
	if err := <-provisioned; err != nil {
		t.Fatalf("streams not provisioned: %v", err)
	}
	var addr string
	select {
	case addr = <-sink.addrs:
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	}
	status, checks := healthz(t, addr)
	if status != http.StatusOK || checks["nats"] != "ok" || checks["jetstream"] != "ok" || len(checks) != 2 {
		t.Fatalf("/healthz = %d %v, want 200 with nats and jetstream ok", status, checks)
	}
	// The build is logged at start and exposed as facho_build_info.
	build := buildinfo.Get()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	wantGauge := `facho_build_info{build_date="` + build.Date + `",commit="` + build.Commit + `",go_version="` + build.GoVersion + `",service="x",version="` + build.Version + `"} 1`
	if !strings.Contains(string(metrics), wantGauge) {
		t.Errorf("/metrics has no %s", wantGauge)
	}
	if !strings.Contains(sink.String(), `"version":"`+build.Version+`"`) || !strings.Contains(sink.String(), `"message":"starting"`) {
		t.Errorf("the start is not logged with the version:\n%s", sink)
	}
	cancel()
	if err := wait(t, done); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("telemetry server still listening after Run returned")
	}
	if bad := sink.badLines(); len(bad) > 0 {
		t.Errorf("log lines that are not JSON of service x: %q", bad)
	}
}

func TestRunEnds(t *testing.T) {
	natsURL := startNATS(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name     string
		httpAddr string
		natsURL  string
		service  func(ctx context.Context, d Deps) error
		wantErr  string // empty: Run returns nil
	}{
		{
			name:     "the service is done: the telemetry server stops too",
			httpAddr: "127.0.0.1:0",
			natsURL:  natsURL,
			service:  func(context.Context, Deps) error { return nil },
		},
		{
			name:     "the service fails",
			httpAddr: "127.0.0.1:0",
			natsURL:  natsURL,
			service:  func(context.Context, Deps) error { return errTest },
			wantErr:  "run x: " + errTest.Error(),
		},
		{
			name:     "the telemetry server fails: the service is stopped",
			httpAddr: busy.Addr().String(),
			natsURL:  natsURL,
			service: func(ctx context.Context, _ Deps) error {
				<-ctx.Done()
				return nil
			},
			wantErr: "listen " + busy.Addr().String(),
		},
		{
			name:    "no telemetry server",
			natsURL: natsURL,
			service: func(context.Context, Deps) error { return nil },
		},
		{
			name:    "nats does not answer",
			natsURL: "nats://127.0.0.1:1",
			service: func(context.Context, Deps) error {
				return errors.New("the service ran without nats")
			},
			wantErr: "connect to nats",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Binary{Name: "x", Service: tc.service}
			_, done := runBinary(context.Background(), b, []string{"-http-addr", tc.httpAddr}, map[string]string{EnvNATSURL: tc.natsURL})
			err := wait(t, done)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Run: %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}

// With a database, the migrations are applied before the service starts,
// it gets the pool, and /healthz checks postgres too.
func TestRunWithDatabase(t *testing.T) {
	natsURL := startNATS(t)
	for _, tc := range []struct {
		name     string
		database Database
		args     []string
	}{
		{name: "required database", database: RequireDatabase},
		// The URL answers: no private cluster is started in the data dir.
		{name: "database or private cluster", database: DatabaseOrPrivateCluster, args: []string{"-pg-data-dir", t.TempDir()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbURL := pgtest.EmptyURL(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			migrated := make(chan error, 1)
			b := Binary{
				Name:     "x",
				Database: tc.database,
				Service: func(ctx context.Context, d Deps) error {
					var version int
					migrated <- d.DB.QueryRow(ctx, "SELECT version FROM schema_version").Scan(&version)
					<-ctx.Done()
					return nil
				},
			}
			args := append([]string{"-http-addr", "127.0.0.1:0"}, tc.args...)
			sink, done := runBinary(ctx, b, args, map[string]string{EnvNATSURL: natsURL, EnvDatabaseURL: dbURL})
			var addr string
			select {
			case addr = <-sink.addrs:
			case err := <-done:
				t.Fatalf("Run returned early: %v", err)
			}
			if err := <-migrated; err != nil {
				t.Fatalf("migrations not applied: %v", err)
			}
			status, checks := healthz(t, addr)
			if status != http.StatusOK || checks["nats"] != "ok" || checks["postgres"] != "ok" {
				t.Fatalf("/healthz = %d %v, want 200 with nats and postgres ok", status, checks)
			}
			cancel()
			if err := wait(t, done); err != nil {
				t.Fatalf("Run after cancel: %v\nlog:\n%s", err, sink)
			}
		})
	}
}

// /healthz is anonymous: when the database goes away it says "database
// unavailable", never the driver's error (user, database, host, port),
// which goes to the log instead.
func TestHealthzHidesDatabaseDetail(t *testing.T) {
	natsURL := startNATS(t)
	dbURL := pgtest.EmptyURL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := Binary{Name: "x", Database: RequireDatabase, Service: func(ctx context.Context, d Deps) error {
		<-ctx.Done()
		return nil
	}}
	sink, done := runBinary(ctx, b, []string{"-http-addr", "127.0.0.1:0"}, map[string]string{EnvNATSURL: natsURL, EnvDatabaseURL: dbURL})
	var addr string
	select {
	case addr = <-sink.addrs:
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	}
	if status, checks := healthz(t, addr); status != http.StatusOK || checks["postgres"] != "ok" {
		t.Fatalf("/healthz = %d %v before the drop, want 200", status, checks)
	}
	admin, err := pgx.Connect(ctx, pgtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.Exec(ctx, "DROP DATABASE "+dbName+" WITH (FORCE)")
	_ = admin.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// The first probe meets the killed idle connection, the second the
	// missing database, whose error names it.
	for probe := 1; probe <= 2; probe++ {
		res, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(raw), `"postgres":"database unavailable"`) {
			t.Errorf("probe %d: /healthz = %d %s, want 503 with postgres: database unavailable", probe, res.StatusCode, raw)
		}
		for _, leak := range []string{dbName, "user=", "127.0.0.1", u.Port(), "SQLSTATE"} {
			if strings.Contains(string(raw), leak) {
				t.Errorf("probe %d: /healthz shows %q: %s", probe, leak, raw)
			}
		}
	}
	if log := sink.String(); !strings.Contains(log, "health check fails") || !strings.Contains(log, dbName) {
		t.Errorf("the detail is not logged:\n%s", log)
	}
	cancel()
	if err := wait(t, done); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}
