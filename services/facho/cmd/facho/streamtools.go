package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/streams"
)

// natsFlags are the connection flags of the stream tools (replay, rebuild,
// export, tail): the observer's seed is enough for reading streams.
//
// Run in the folder of a running `facho dev` (or given -data DIR), they
// find it by themselves: whatever the flags and the environment do not
// say (the NATS URL, the identity's seed, the database) comes from its
// <data>/dev.json.
type natsFlags struct {
	fs       *flag.FlagSet
	getenv   func(string) string
	url      *string
	identity *string
	dataDir  *string
	client   natsauth.Client
	// dev is the facho dev found in dataDir (resolve), if any.
	dev    devInfo
	hasDev bool
}

// defaultNATSURL is dialled when nothing says otherwise.
const defaultNATSURL = "nats://127.0.0.1:4222"

func addNATSFlags(fs *flag.FlagSet, getenv func(string) string) *natsFlags {
	f := &natsFlags{
		fs:       fs,
		getenv:   getenv,
		url:      fs.String("nats", envOr(getenv, "FACHO_NATS_URL", defaultNATSURL), "NATS URL (FACHO_NATS_URL; default: the running facho dev's, from <data>/dev.json, else "+defaultNATSURL+")"),
		identity: fs.String("identity", natsauth.Observer, "NATS identity of the seed (observer: read-only; admin)"),
		dataDir:  fs.String("data", defaultDataDir, "data folder of a running facho dev, whose dev.json gives the NATS URL, seeds and database the flags do not"),
	}
	f.client.RegisterFlags(fs, getenv)
	return f
}

// setByUser reports whether the flag was given or its variable is set.
func (f *natsFlags) setByUser(flagName, env string) bool {
	if env != "" && f.getenv(env) != "" {
		return true
	}
	set := false
	f.fs.Visit(func(fl *flag.Flag) {
		if fl.Name == flagName {
			set = true
		}
	})
	return set
}

// resolve fills what the flags and the environment leave unsaid from the
// running facho dev's dev.json, when there is one.
func (f *natsFlags) resolve() error {
	d, ok, err := readDevInfo(*f.dataDir)
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	f.dev, f.hasDev = d, true
	if !f.setByUser("nats", "FACHO_NATS_URL") {
		*f.url = d.NATSURL
	}
	if !f.client.Authenticated() && d.KeysDir != "" {
		f.client.NkeySeedFile = d.seedFile(*f.identity)
	}
	return nil
}

// databaseURL is the --db flag's value, else the running facho dev's.
func (f *natsFlags) databaseURL(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if !f.hasDev {
		if d, ok, err := readDevInfo(*f.dataDir); err == nil && ok {
			return d.DatabaseURL
		}
		return ""
	}
	return f.dev.DatabaseURL
}

// connect connects as the identity (its inbox prefix is the one its
// permissions allow). An error names the address dialled.
func (f *natsFlags) connect() (*nats.Conn, jetstream.JetStream, error) {
	if err := f.resolve(); err != nil {
		return nil, nil, err
	}
	if err := f.client.Validate(); err != nil {
		return nil, nil, err
	}
	id := ""
	if f.client.Authenticated() {
		id = *f.identity
	}
	opts, err := f.client.Options(id)
	if err != nil {
		return nil, nil, err
	}
	nc, err := nats.Connect(*f.url, append(opts, nats.Name("facho-cli"))...)
	if err != nil {
		// The URL may hold credentials: named without them.
		hint := ""
		if !f.hasDev && !f.setByUser("nats", "FACHO_NATS_URL") {
			hint = fmt.Sprintf(" (no running facho dev in %s: run this in its folder, give -data DIR, or --nats URL)", filepath.Join(*f.dataDir, devInfoFile))
		}
		return nil, nil, fmt.Errorf("connect to nats at %s: %w%s", redactAddr(*f.url), err, hint)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	// A NATS server answers, but is it Facho's? (A nats-server of
	// something else on 4222 would otherwise fail later with "stream not
	// found".)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Stream(ctx, streams.StreamConfig); errors.Is(err, jetstream.ErrStreamNotFound) {
		nc.Close()
		hint := ""
		if !f.hasDev && !f.setByUser("nats", "FACHO_NATS_URL") {
			hint = fmt.Sprintf(" (no running facho dev in %s: run this in its folder, give -data DIR, or --nats URL)", filepath.Join(*f.dataDir, devInfoFile))
		}
		return nil, nil, fmt.Errorf("nats at %s has no Facho streams (no %s)%s", redactAddr(*f.url), streams.StreamConfig, hint)
	}
	return nc, js, nil
}

// parsePosition reads a stream position: a sequence number, an RFC 3339
// time, or a duration ago (e.g. 2h); empty is the zero Position.
func parsePosition(v string, now time.Time) (replay.Position, error) {
	if v == "" {
		return replay.Position{}, nil
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		if n == 0 {
			return replay.Position{}, errors.New("sequence 0: streams start at 1")
		}
		return replay.Position{Seq: n}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return replay.Position{Time: t}, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return replay.Position{Time: now.Add(-d)}, nil
	}
	return replay.Position{}, fmt.Errorf("%q: want a sequence, an RFC 3339 time or a duration ago (e.g. 2h)", v)
}

// parseFlags parses fs, treating -h as a successful no-op (ok=false).
func parseFlags(fs *flag.FlagSet, args []string) (ok bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// isTerminal reports whether w is a terminal (colors and progress bars only
// there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// progress draws a progress bar on a terminal; elsewhere it prints nothing.
type progress struct {
	w     io.Writer
	what  string
	on    bool
	start time.Time
	last  time.Time
}

func newProgress(w io.Writer, what string) *progress {
	return &progress{w: w, what: what, on: isTerminal(w), start: time.Now()}
}

// update redraws at most 10 times a second.
func (p *progress) update(done, total uint64) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && done < total {
		return
	}
	p.last = now
	const width = 30
	frac := 1.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	bar := strings.Repeat("#", int(frac*width)) + strings.Repeat(".", width-int(frac*width))
	rate := float64(done) / max(now.Sub(p.start).Seconds(), 1e-3)
	fmt.Fprintf(p.w, "\r%s [%s] %d/%d %.0f/s ", p.what, bar, done, total, rate)
}

func (p *progress) finish() {
	if p.on {
		fmt.Fprintln(p.w)
	}
}
