package servicemain

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/pkg/secret"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParse(t *testing.T) {
	leaseTTLFlag := func(fs *flag.FlagSet, _ *Env, c *Common) {
		fs.DurationVar(&c.Streams.LeaseTTL, "lease-ttl", c.Streams.LeaseTTL, "")
	}
	for _, tc := range []struct {
		name    string
		binary  Binary
		args    []string
		env     map[string]string
		want    func(Common) bool
		wantErr bool
	}{
		{
			name:   "defaults",
			binary: Binary{Name: "x", HTTPAddr: "127.0.0.1:9101"},
			want: func(c Common) bool {
				return c.NATSURL == DefaultNATSURL && c.HTTPAddr == "127.0.0.1:9101" && c.LogLevel == "info" && !c.CheckConfig
			},
		},
		{
			name:   "environment fallbacks",
			binary: Binary{Name: "x", HTTPAddr: "127.0.0.1:9101", Database: DatabaseOrPrivateCluster},
			env: map[string]string{EnvNATSURL: "nats://n:4222", EnvHTTPAddr: ":1", EnvLogLevel: "debug",
				EnvDatabaseURL: "postgres://u@h/db", EnvPGDataDir: "/tmp/pg", "FACHO_LEASE_TTL": "5s"},
			want: func(c Common) bool {
				return c.NATSURL == "nats://n:4222" && c.HTTPAddr == ":1" && c.LogLevel == "debug" &&
					c.DatabaseURL == "postgres://u@h/db" && c.PGDataDir == "/tmp/pg" && c.Streams.LeaseTTL == 5*time.Second
			},
		},
		{
			name:   "flags beat the environment",
			binary: Binary{Name: "x", Database: RequireDatabase},
			args:   []string{"-nats-url", "nats://f:1", "-http-addr", "", "-log-level", "warn", "-database-url", "postgres://f/db", "-check-config"},
			env:    map[string]string{EnvNATSURL: "nats://n:4222", EnvHTTPAddr: ":1", EnvLogLevel: "debug", EnvDatabaseURL: "postgres://u@h/db"},
			want: func(c Common) bool {
				return c.NATSURL == "nats://f:1" && c.HTTPAddr == "" && c.LogLevel == "warn" && c.DatabaseURL == "postgres://f/db" && c.CheckConfig
			},
		},
		{
			name:   "a binary's flag overrides a stream option from the environment",
			binary: Binary{Name: "x", Flags: leaseTTLFlag},
			args:   []string{"-lease-ttl", "7s"},
			env:    map[string]string{"FACHO_LEASE_TTL": "5s", "FACHO_POLLER_ACK_WAIT": "9s"},
			want: func(c Common) bool {
				return c.Streams.LeaseTTL == 7*time.Second && c.Streams.PollerAckWait == 9*time.Second
			},
		},
		{
			name:    "no database flag without a database",
			binary:  Binary{Name: "x"},
			args:    []string{"-database-url", "postgres://u@h/db"},
			wantErr: true,
		},
		{
			name:    "no data dir flag when the database is required",
			binary:  Binary{Name: "x", Database: RequireDatabase},
			args:    []string{"-pg-data-dir", "/tmp/pg"},
			wantErr: true,
		},
		{
			name:    "unknown flag",
			binary:  Binary{Name: "x"},
			args:    []string{"-nope"},
			wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := tc.binary.parse(append([]string{"facho-x"}, tc.args...), envMap(tc.env), io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parse: err = %v, want error %v", err, tc.wantErr)
			}
			if tc.want != nil && !tc.want(c) {
				t.Fatalf("parse: got %+v", c)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	env := newEnv(envMap(map[string]string{"S": "v", "I": "3", "BADI": "three", "D": "2s", "BADD": "soon"}))
	if got := env.String("S", "d"); got != "v" {
		t.Errorf("String(S) = %q", got)
	}
	if got := env.String("UNSET", "d"); got != "d" {
		t.Errorf("String(UNSET) = %q", got)
	}
	if got := env.Int("I", 1); got != 3 {
		t.Errorf("Int(I) = %d", got)
	}
	if got := env.Int("UNSET", 1); got != 1 {
		t.Errorf("Int(UNSET) = %d", got)
	}
	if got := env.Duration("D", time.Second); got != 2*time.Second {
		t.Errorf("Duration(D) = %s", got)
	}
	if len(env.errs) != 0 {
		t.Fatalf("errors before any malformed value: %v", env.errs)
	}
	if got := env.Int("BADI", 1); got != 1 {
		t.Errorf("Int(BADI) = %d, want the default", got)
	}
	if got := env.Duration("BADD", time.Second); got != time.Second {
		t.Errorf("Duration(BADD) = %s, want the default", got)
	}
	if len(env.errs) != 2 {
		t.Fatalf("errors = %v, want one per malformed value", env.errs)
	}
}

// -check-config validates without connecting: the servers named here do
// not exist, and the service must not run.
func TestCheckConfig(t *testing.T) {
	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	const password = "s3cr3t-pw"
	unreachable := map[string]string{EnvNATSURL: "nats://127.0.0.1:1", EnvDatabaseURL: "postgres://u:" + password + "@127.0.0.1:1/db"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range unreachable {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	envInt := func(fs *flag.FlagSet, env *Env, _ *Common) {
		fs.Int("workers", env.Int("FACHO_X_WORKERS", 4), "")
	}
	for _, tc := range []struct {
		name    string
		binary  Binary
		args    []string
		env     map[string]string
		wantErr []string // substrings of the error; none means ok
	}{
		{name: "no database", binary: Binary{Name: "x"}, env: unreachable},
		{name: "database url", binary: Binary{Name: "x", Database: RequireDatabase}, env: unreachable},
		{name: "data dir instead of url", binary: Binary{Name: "x", Database: DatabaseOrPrivateCluster}, args: []string{"-database-url", "", "-pg-data-dir", "/tmp/pg"}, env: unreachable},
		{name: "secret key", binary: Binary{Name: "x", SecretKey: true}, env: with(map[string]string{secret.EnvKey: key})},
		{name: "stream options from the environment", binary: Binary{Name: "x"}, env: with(map[string]string{"FACHO_STREAM_STORAGE": "memory"})},
		{
			name:    "database required",
			binary:  Binary{Name: "x", Database: RequireDatabase},
			args:    []string{"-database-url", ""},
			wantErr: []string{"DATABASE_URL is required"},
		},
		{
			name:    "database or data dir required",
			binary:  Binary{Name: "x", Database: DatabaseOrPrivateCluster},
			args:    []string{"-database-url", ""},
			wantErr: []string{"DATABASE_URL or FACHO_PG_DATA_DIR is required"},
		},
		{
			name:    "database url that does not parse is not echoed",
			binary:  Binary{Name: "x", Database: RequireDatabase},
			args:    []string{"-database-url", "postgres://u:" + password + "@h:notaport/db"},
			wantErr: []string{"DATABASE_URL does not parse"},
		},
		{name: "bad log level", binary: Binary{Name: "x"}, args: []string{"-log-level", "loud"}, env: unreachable, wantErr: []string{"log level"}},
		{name: "empty nats url", binary: Binary{Name: "x"}, args: []string{"-nats-url", ""}, wantErr: []string{"nats url is empty"}},
		{name: "bad stream option", binary: Binary{Name: "x"}, env: with(map[string]string{"FACHO_LEASE_TTL": "soon"}), wantErr: []string{"FACHO_LEASE_TTL"}},
		{
			name:    "stream option overridden out of range",
			binary:  Binary{Name: "x", Flags: func(fs *flag.FlagSet, _ *Env, c *Common) { fs.IntVar(&c.Streams.Replicas, "replicas", 0, "") }},
			args:    []string{"-replicas", "9"},
			env:     unreachable,
			wantErr: []string{"replicas 9"},
		},
		{name: "malformed env fallback of a binary's flag", binary: Binary{Name: "x", Flags: envInt}, env: with(map[string]string{"FACHO_X_WORKERS": "many"}), wantErr: []string{"FACHO_X_WORKERS"}},
		{name: "no secret key", binary: Binary{Name: "x", SecretKey: true}, env: unreachable, wantErr: []string{secret.EnvKey}},
		{name: "bad secret key", binary: Binary{Name: "x", SecretKey: true}, env: with(map[string]string{secret.EnvKey: "public"}), wantErr: []string{"secret key"}},
		{
			name:    "the binary's check",
			binary:  Binary{Name: "x", Check: func() error { return errTest }},
			env:     unreachable,
			wantErr: []string{errTest.Error()},
		},
		{
			name:    "every problem at once",
			binary:  Binary{Name: "x", Database: RequireDatabase, Check: func() error { return errTest }},
			args:    []string{"-log-level", "loud", "-database-url", ""},
			wantErr: []string{"log level", "DATABASE_URL is required", errTest.Error()},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.binary
			b.Service = func(context.Context, Deps) error {
				t.Error("the service ran under -check-config")
				return nil
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{"facho-x", "-check-config"}, tc.args...)
			err := b.Run(context.Background(), args, envMap(tc.env), &stdout, &stderr)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if stdout.String() != "configuration ok\n" {
					t.Fatalf("stdout %q, want configuration ok", stdout.String())
				}
				return
			}
			if err == nil {
				t.Fatalf("Run: no error, want %q", tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			for _, secretText := range []string{password, key} {
				if strings.Contains(err.Error(), secretText) {
					t.Errorf("error %q leaks a secret", err)
				}
			}
			if strings.Contains(stdout.String(), "configuration ok") {
				t.Errorf("stdout %q on a bad configuration", stdout.String())
			}
		})
	}
}

// testConfig follows the services' Config convention.
type testConfig struct{ Workers int }

func (c testConfig) WithDefaults() testConfig {
	if c.Workers == 0 {
		c.Workers = 4
	}
	return c
}

func (c testConfig) Validate() error {
	if c.Workers > 10 {
		return errTest
	}
	return nil
}

func TestCheckConfigHelper(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     testConfig
		want    testConfig
		wantErr error
	}{
		{name: "defaults applied in place", cfg: testConfig{}, want: testConfig{Workers: 4}},
		{name: "set fields kept", cfg: testConfig{Workers: 2}, want: testConfig{Workers: 2}},
		{name: "invalid", cfg: testConfig{Workers: 11}, want: testConfig{Workers: 11}, wantErr: errTest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if err := CheckConfig(&cfg)(); !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if cfg != tc.want {
				t.Fatalf("cfg = %+v, want %+v", cfg, tc.want)
			}
		})
	}
}
