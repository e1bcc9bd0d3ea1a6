package natsauth_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/streams"
)

// natsCLI runs the official nats CLI as identity: the commands
// docs/nats-identities.md shows, with the same flags.
func natsCLI(t *testing.T, env *jstest.Env, identity string, args ...string) (string, error) {
	t.Helper()
	full := append([]string{"--server", env.URL, "--nkey", natsauth.SeedFile(env.KeysDir, identity),
		"--inbox-prefix", natsauth.InboxPrefix(identity), "--timeout", "2s"}, args...)
	return runNATSCLI(t, t.TempDir(), full...)
}

// runNATSCLI runs the nats CLI with home as $HOME (where its contexts
// live), bounded to 20 s.
func runNATSCLI(t *testing.T, home string, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("nats")
	if err != nil {
		t.Skip("the nats CLI is not installed (go install github.com/nats-io/natscli/nats@latest)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The documented way for people: a saved context per identity, then a
// live tail of the events and the listings.
func TestNATSCLIContext(t *testing.T) {
	env := peopleEnv(t)
	home := t.TempDir()
	if out, err := runNATSCLI(t, home, "context", "save", "facho-observer", "--server", env.URL,
		"--nkey", natsauth.SeedFile(env.KeysDir, natsauth.Observer), "--inbox-prefix", natsauth.InboxPrefix(natsauth.Observer)); err != nil {
		t.Fatalf("nats context save: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"--context", "facho-observer", "stream", "ls"},
		{"--context", "facho-observer", "consumer", "ls", streams.StreamConfig},
		{"--context", "facho-observer", "consumer", "info", streams.StreamConfig, streams.ConsumerProjectorConfig},
		{"--context", "facho-observer", "stream", "get", streams.StreamONU, "1"},
		{"--context", "facho-observer", "sub", "--stream", streams.StreamONU, "--all", "--count", "1", "facho.onu.>"},
	} {
		if out, err := runNATSCLI(t, home, args...); err != nil {
			t.Errorf("nats %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// A live tail: the subscription sees an event published after it.
	// (A core subscription on an event subject is refused: see
	// TestPeopleCannotWriteThroughAPushConsumer.)
	if out, err := runNATSCLI(t, home, "--context", "facho-observer", "sub", "facho.onu.>", "--count", "1", "--timeout", "2s"); err == nil {
		t.Errorf("nats sub facho.onu.> (a core subscription) as observer: allowed\n%s", out)
	}
	done := make(chan error, 1)
	var out string
	go func() {
		var err error
		out, err = runNATSCLI(t, home, "--context", "facho-observer", "sub", "--stream", streams.StreamONU, "--new", "--count", "1", "facho.onu.>")
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		if _, err := env.JS.Publish(ctx, streams.SubjectONU("olt-2", streams.ONUDiscovered), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil || !strings.Contains(out, "facho.onu.olt-2") {
				t.Fatalf("nats sub: %v\n%s", err, out)
			}
			return
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("nats sub saw no event")
		}
	}
}

// The nats CLI commands of the documentation work verbatim, and what an
// identity may not do fails (non-zero exit).
func TestNATSCLI(t *testing.T) {
	env := peopleEnv(t)
	for _, tc := range []struct {
		identity string
		args     []string
		ok       bool
		want     string // in the output when ok
	}{
		{natsauth.Observer, []string{"stream", "ls"}, true, streams.StreamONU},
		{natsauth.Observer, []string{"consumer", "ls", streams.StreamConfig}, true, streams.ConsumerProjectorConfig},
		{natsauth.Observer, []string{"consumer", "info", streams.StreamConfig, streams.ConsumerProjectorConfig}, true, "Ack Pending"},
		{natsauth.Observer, []string{"stream", "info", streams.StreamONU}, true, "Messages"},
		{natsauth.Observer, []string{"stream", "get", streams.StreamDLQ, "1"}, true, "facho.dlq"},
		{natsauth.Operator, []string{"stream", "ls"}, true, streams.StreamDLQ},
		{natsauth.Operator, []string{"consumer", "info", streams.StreamConfig, streams.ConsumerProjectorConfig}, true, "Ack Pending"},
		{"integrator:acme", []string{"consumer", "add", streams.StreamONU, "acme-1", "--pull", "--ack", "explicit", "--deliver", "all", "--defaults"}, true, "acme-1"},
		{"integrator:acme", []string{"consumer", "next", streams.StreamONU, "acme-1", "--count", "1"}, true, "facho.onu"},
		{"integrator:acme", []string{"consumer", "info", streams.StreamONU, "acme-1"}, true, "acme-1"},
		{natsauth.Observer, []string{"consumer", "rm", streams.StreamONU, "acme-1", "-f"}, false, ""},
		{natsauth.Operator, []string{"consumer", "rm", streams.StreamONU, "acme-1", "-f"}, false, ""},
		{"integrator:globex", []string{"consumer", "rm", streams.StreamONU, "acme-1", "-f"}, false, ""},
		{natsauth.Observer, []string{"consumer", "add", streams.StreamONU, "acme-2", "--pull", "--defaults"}, false, ""},
		{natsauth.Observer, []string{"stream", "purge", streams.StreamONU, "-f"}, false, ""},
		{"integrator:acme", []string{"consumer", "add", streams.StreamConfig, "acme-1", "--pull", "--defaults"}, false, ""},
		{"integrator:acme", []string{"stream", "ls"}, false, ""},
		{"integrator:acme", []string{"consumer", "rm", streams.StreamONU, "acme-1", "-f"}, true, ""},
		// Push delivery: to a subject under the integrator's inbox prefix.
		{"integrator:acme", []string{"consumer", "add", streams.StreamAlert, "acme-2", "--target", "_INBOX_integrator_acme.push.acme-2",
			"--ack", "explicit", "--deliver", "all", "--heartbeat", "5s", "--flow-control", "--defaults"}, true, "acme-2"},
		{"integrator:acme", []string{"sub", "_INBOX_integrator_acme.push.acme-2", "--count", "1", "--ack"}, true, "facho.alert"},
		{"integrator:globex", []string{"sub", "_INBOX_integrator_acme.push.acme-2", "--count", "1"}, false, ""},
		{"integrator:acme", []string{"consumer", "rm", streams.StreamAlert, "acme-2", "-f"}, true, ""},
	} {
		out, err := natsCLI(t, env, tc.identity, tc.args...)
		cmd := tc.identity + ": nats " + strings.Join(tc.args, " ")
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v\n%s", cmd, err, out)
		case tc.ok && !strings.Contains(out, tc.want):
			t.Errorf("%s: no %q in\n%s", cmd, tc.want, out)
		case !tc.ok && err == nil:
			t.Errorf("%s: allowed\n%s", cmd, out)
		}
	}
}

// The operator's context: the dead letters and JetStream's advisories.
func TestNATSCLIOperatorContext(t *testing.T) {
	env := peopleEnv(t)
	home := t.TempDir()
	if out, err := runNATSCLI(t, home, "context", "save", "facho-operator", "--server", env.URL,
		"--nkey", natsauth.SeedFile(env.KeysDir, natsauth.Operator), "--inbox-prefix", natsauth.InboxPrefix(natsauth.Operator)); err != nil {
		t.Fatalf("nats context save: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"--context", "facho-operator", "stream", "get", streams.StreamDLQ, "1"},
		{"--context", "facho-operator", "sub", "--stream", streams.StreamDLQ, "--all", "--count", "1", "facho.dlq.>"},
	} {
		if out, err := runNATSCLI(t, home, args...); err != nil {
			t.Errorf("nats %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	bin, err := exec.LookPath("nats")
	if err != nil {
		t.Skip("no nats CLI")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out syncBuffer
	cmd := exec.CommandContext(ctx, bin, "--context", "facho-operator", "events", "--js-advisory", "--no-srv-advisory")
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for i := 0; ; i++ {
		name := fmt.Sprintf("noc-advisory-%d", i)
		if _, err := env.JS.CreateOrUpdateConsumer(ctx, streams.StreamONU, jetstream.ConsumerConfig{Name: name}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if strings.Contains(out.String(), "noc-advisory-") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("nats events showed no advisory:\n%s", out.String())
		}
	}
	if strings.Contains(strings.ToLower(out.String()), "permission") {
		t.Fatalf("nats events: %s", out.String())
	}
}

// syncBuffer is an io.Writer safe for a process's output read meanwhile.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
