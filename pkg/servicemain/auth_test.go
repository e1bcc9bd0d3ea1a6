package servicemain

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/natsembed"
	"github.com/facho-olt/facho/streams"
)

// A service connects with its own identity: it does its own work, a
// forged publish is refused and logged (without the seed), and it checks
// the streams instead of provisioning them.
func TestRunWithIdentity(t *testing.T) {
	env := jstest.Start(t, streams.Options{}, jstest.WithAuth())
	seedFile := natsauth.SeedFile(env.KeysDir, natsauth.Poller)
	seed, err := os.ReadFile(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct{ own, forged error }
	results := make(chan result, 1)
	b := Binary{Name: natsauth.Poller, Service: func(ctx context.Context, d Deps) error {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, own := d.JS.Publish(pctx, streams.SubjectExec("olt-1", streams.PhaseStarted), []byte(`{}`))
		fctx, fcancel := context.WithTimeout(ctx, time.Second)
		defer fcancel()
		_, forged := d.JS.Publish(fctx, streams.SubjectBrand("b1"), []byte(`{}`))
		results <- result{own, forged}
		<-ctx.Done()
		return nil
	}}
	sink, done := runBinary(ctx, b, nil, map[string]string{
		EnvNATSURL: env.URL, EnvHTTPAddr: "", natsauth.EnvNkeySeedFile: seedFile,
	})
	var r result
	select {
	case r = <-results:
	case err := <-done:
		t.Fatalf("Run returned early: %v\n%s", err, sink)
	}
	if r.own != nil {
		t.Fatalf("the poller's own publish: %v", r.own)
	}
	if r.forged == nil {
		t.Fatal("the poller published a configuration event")
	}
	// The server's violation report reaches the log.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(sink.String(), "Permissions Violation") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := wait(t, done); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	log := sink.String()
	if !strings.Contains(log, "nats async error") || !strings.Contains(log, "facho.config.brand.b1") {
		t.Errorf("the refused publish is not logged:\n%s", log)
	}
	if strings.Contains(log, strings.TrimSpace(string(seed))) {
		t.Error("the log holds the seed")
	}
}

func TestRunWithIdentityRefused(t *testing.T) {
	env := jstest.Start(t, streams.Options{}, jstest.WithAuth())
	// A server with the identities but no streams yet.
	bareKeys := t.TempDir()
	keys, err := natsauth.EnsureKeys(bareKeys)
	if err != nil {
		t.Fatal(err)
	}
	users, err := natsauth.ServerUsers(keys)
	if err != nil {
		t.Fatal(err)
	}
	bare, err := natsembed.Start(natsembed.Config{Port: -1, StoreDir: t.TempDir(), Users: users})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bare.Shutdown)
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{
			name:    "anonymous",
			env:     map[string]string{EnvNATSURL: env.URL},
			wantErr: "Authorization Violation",
		},
		{
			name:    "an identity may not provision",
			env:     map[string]string{EnvNATSURL: env.URL, EnvProvision: ProvisionYes, natsauth.EnvNkeySeedFile: natsauth.SeedFile(env.KeysDir, natsauth.Poller)},
			wantErr: "only the admin identity provisions",
		},
		{
			name:    "streams not provisioned",
			env:     map[string]string{EnvNATSURL: bare.URL(), natsauth.EnvNkeySeedFile: natsauth.SeedFile(bareKeys, natsauth.Poller)},
			wantErr: "facho streams provision",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.env[EnvHTTPAddr] = ""
			b := Binary{Name: natsauth.Poller, Service: func(context.Context, Deps) error {
				t.Error("the service ran")
				return nil
			}}
			// A refused provisioning ends at the server's violation
			// report, not at the timeout.
			_, done := runBinary(context.Background(), b, nil, tc.env)
			err := wait(t, done)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Run: %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheckConfigNATSAuth(t *testing.T) {
	dir := t.TempDir()
	if _, err := natsauth.EnsureKeys(dir); err != nil {
		t.Fatal(err)
	}
	seedFile := natsauth.SeedFile(dir, natsauth.API)
	seed, err := os.ReadFile(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open.nk")
	if err := os.WriteFile(open, seed, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	tlsFiles := jstest.WriteTLSFiles(t, t.TempDir(), "127.0.0.1")
	base := map[string]string{EnvNATSURL: "nats://127.0.0.1:1"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr []string
	}{
		{name: "seed file", env: with(map[string]string{natsauth.EnvNkeySeedFile: seedFile})},
		{name: "seed file by flag", args: []string{"-nats-nkey-seed-file", seedFile, "-provision", "no"}, env: base},
		{name: "tls", env: with(map[string]string{natsauth.EnvTLSCA: tlsFiles.CA, natsauth.EnvTLSCert: tlsFiles.ClientCert, natsauth.EnvTLSKey: tlsFiles.ClientKey})},
		{name: "missing seed file", env: with(map[string]string{natsauth.EnvNkeySeedFile: filepath.Join(dir, "nope.nk")}), wantErr: []string{"nkey seed file", "nope.nk"}},
		{name: "seed readable by others", env: with(map[string]string{natsauth.EnvNkeySeedFile: open}), wantErr: []string{"chmod 600"}},
		{name: "seed and credentials", env: with(map[string]string{natsauth.EnvNkeySeedFile: seedFile, natsauth.EnvCreds: seedFile}), wantErr: []string{"exclusive", "want a user JWT"}},
		{name: "certificate without key", env: with(map[string]string{natsauth.EnvTLSCert: tlsFiles.ClientCert}), wantErr: []string{"go together"}},
		{name: "ca that is not one", env: with(map[string]string{natsauth.EnvTLSCA: seedFile}), wantErr: []string{"no PEM certificate"}},
		{name: "provision value", env: with(map[string]string{EnvProvision: "maybe"}), wantErr: []string{`provision "maybe"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Binary{Name: natsauth.API, Service: func(context.Context, Deps) error {
				t.Error("the service ran under -check-config")
				return nil
			}}
			var stdout, stderr bytes.Buffer
			err := b.Run(context.Background(), append([]string{"facho-x", "-check-config"}, tc.args...), envMap(tc.env), &stdout, &stderr)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Run: %v", err)
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
			if strings.Contains(err.Error(), strings.TrimSpace(string(seed))) {
				t.Errorf("error %q quotes the seed", err)
			}
		})
	}
}

// -h shows the NATS identity and TLS flags with their variables.
func TestHelpShowsNATSAuth(t *testing.T) {
	var stderr bytes.Buffer
	err := Binary{Name: "x"}.Run(context.Background(), []string{"facho-x", "-h"}, envMap(nil), &bytes.Buffer{}, &stderr)
	if err == nil {
		t.Fatal("-h: no flag.ErrHelp")
	}
	for _, want := range []string{natsauth.EnvNkeySeedFile, natsauth.EnvCreds, natsauth.EnvTLSCA, natsauth.EnvTLSCert, natsauth.EnvTLSKey, EnvProvision} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("-h does not mention %s", want)
		}
	}
}
