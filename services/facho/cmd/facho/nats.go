package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/natsauth"
)

// AuthConfFile is the authorization block `facho nats keys` writes next
// to the seeds, for nats-server's `include`.
const AuthConfFile = "facho-auth.conf"

// runNATS runs `facho nats <command>`.
func runNATS(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "keys" {
		return errors.New("nats: want keys DIR")
	}
	fs := flag.NewFlagSet("nats keys", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: facho nats keys DIR

Writes an nkey seed per NATS identity into DIR (<identity>.nk, mode 0600;
existing seeds are kept) and DIR/%s, the authorization block of
nats-server with every identity's permissions (include it from the server
config). Give each service its own seed (FACHO_NATS_NKEY_SEED_FILE); the
admin seed is for facho streams provision and operators.

identities: %v
`, AuthConfFile, natsauth.Names())
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("nats keys: want one folder")
	}
	dir := fs.Arg(0)
	keys, err := natsauth.EnsureKeys(dir)
	if err != nil {
		return err
	}
	auth, err := natsauth.RenderAuthorization(keys)
	if err != nil {
		return err
	}
	// Public keys only: readable by the server's user.
	authPath := filepath.Join(dir, AuthConfFile)
	if err := os.WriteFile(authPath, auth, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", authPath, err)
	}
	names := make([]string, 0, len(keys))
	for name := range keys {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(stdout, "seeds (secret, mode 0600) and public keys:\n")
	for _, name := range names {
		fmt.Fprintf(stdout, "  %-10s %s  %s\n", name, natsauth.SeedFile(dir, name), keys[name])
	}
	fmt.Fprintf(stdout, "authorization block: %s (copy it next to each nats-server config, which includes it)\n", authPath)
	return nil
}

// connectCLI connects the CLI with the NATS client flags (the admin
// identity's seed, TLS) registered by registerNATSFlags.
func connectCLI(url string, client natsauth.Client) (*nats.Conn, jetstream.JetStream, error) {
	if err := client.Validate(); err != nil {
		return nil, nil, err
	}
	opts, err := client.Options("")
	if err != nil {
		return nil, nil, err
	}
	nc, err := nats.Connect(url, append(opts, nats.Name("facho-cli"))...)
	if err != nil {
		// The URL may hold credentials: not quoted.
		return nil, nil, fmt.Errorf("connect to nats: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}
