package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/natsauth"
)

// AuthConfFile is the authorization block `facho nats keys` writes next
// to the seeds, for nats-server's `include`.
const AuthConfFile = "facho-auth.conf"

// runNATS runs `facho nats <command>`: keys, identity add.
func runNATS(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "keys" {
		return runNATSKeys(args[1:], stdout, stderr)
	}
	if len(args) > 1 && args[0] == "identity" && args[1] == "add" {
		return runNATSIdentityAdd(args[2:], stdout, stderr)
	}
	return errors.New("nats: want keys DIR, or identity add integrator:<name> DIR")
}

// integratorFlag collects -integrator NAME[:DURABLE,...] flags.
type integratorFlag []natsauth.IntegratorRecord

func (f *integratorFlag) String() string { return fmt.Sprint(len(*f)) }

func (f *integratorFlag) Set(v string) error {
	name, durables, _ := strings.Cut(strings.TrimPrefix(v, natsauth.IntegratorPrefix), ":")
	r := natsauth.IntegratorRecord{Name: name}
	if durables != "" {
		r.Durables = strings.Split(durables, ",")
	}
	if _, err := natsauth.Integrator(r.Name, r.Durables); err != nil {
		return err
	}
	*f = append(*f, r)
	return nil
}

// stringsFlag collects a repeatable string flag.
type stringsFlag []string

func (f *stringsFlag) String() string { return strings.Join(*f, ",") }

func (f *stringsFlag) Set(v string) error {
	*f = append(*f, strings.Split(v, ",")...)
	return nil
}

func runNATSKeys(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nats keys", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var integrators integratorFlag
	fs.Var(&integrators, "integrator", "add identity integrator:`NAME[:DURABLE,...]` (repeatable): its own durables NAME-DURABLE on FACHO_ONU, FACHO_ALERT and FACHO_NOTIFY (default NAME-1 … NAME-4)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: facho nats keys [-integrator NAME[:DURABLE,...]]... DIR

Writes an nkey seed per NATS identity into DIR (<identity>.nk, mode 0600;
existing seeds are kept) and DIR/%s, the authorization block of
nats-server with every identity's permissions (include it from the server
config, then reload nats-server). Give each service its own seed
(FACHO_NATS_NKEY_SEED_FILE); the admin seed is for facho streams provision;
observer, operator and integrator:<name> are for people and integrations
(docs/nats-identities.md). Integrators added once (here or with facho nats
identity add) are kept in DIR/%s.

identities: %v
`, AuthConfFile, natsauth.IntegratorsFile, natsauth.Names())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
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
	for _, r := range integrators {
		if _, err := natsauth.AddIntegrator(dir, r.Name, r.Durables); err != nil {
			return err
		}
	}
	return writeNATSKeys(dir, stdout)
}

func runNATSIdentityAdd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nats identity add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var durables stringsFlag
	fs.Var(&durables, "durable", "a durable of the integrator (`NAME`, repeatable or comma-separated), named <integrator>-NAME (default 1,2,3,4; added to those it has)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: facho nats identity add integrator:<name> [-durable NAME]... DIR

Adds identity integrator:<name> to the keys folder DIR: its seed
(integrator-<name>.nk), its durables (<name>-NAME on FACHO_ONU, FACHO_ALERT
and FACHO_NOTIFY) and a new DIR/%s for nats-server (reload it).
`, AuthConfFile)
		fs.PrintDefaults()
	}
	if len(args) == 0 || !strings.HasPrefix(args[0], natsauth.IntegratorPrefix) {
		fs.Usage()
		return errors.New("nats identity add: want integrator:<name> first")
	}
	name := strings.TrimPrefix(args[0], natsauth.IntegratorPrefix)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("nats identity add: want one folder")
	}
	dir := fs.Arg(0)
	id, err := natsauth.AddIntegrator(dir, name, durables)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: durables %s on %s\n", id.Name, strings.Join(id.Durables, ", "), strings.Join(id.DurableStreams, ", "))
	return writeNATSKeys(dir, stdout)
}

// writeNATSKeys makes sure every identity of dir has a seed and writes
// the authorization block.
func writeNATSKeys(dir string, stdout io.Writer) error {
	ids, keys, err := natsauth.EnsureIdentities(dir)
	if err != nil {
		return err
	}
	auth, err := natsauth.RenderAuthorizationOf(ids, keys)
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
		fmt.Fprintf(stdout, "  %-16s %s  %s\n", name, natsauth.SeedFile(dir, name), keys[name])
	}
	fmt.Fprintf(stdout, "authorization block: %s (copy it next to each nats-server config, which includes it; then nats-server --signal reload)\n", authPath)
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
