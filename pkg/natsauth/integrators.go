package natsauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/facho-olt/facho/streams"
)

// IntegratorPrefix starts the name of an integrator's identity:
// integrator:<name>.
const IntegratorPrefix = "integrator:"

// IntegratorsFile is the file of a keys folder that lists its integrators
// (their names and durables), next to their seeds.
const IntegratorsFile = "facho-integrators.json"

// DefaultIntegratorDurables is how many durables an integrator gets when
// none are named: <name>-1 … <name>-4.
const DefaultIntegratorDurables = 4

// MaxIntegratorDurables bounds the durables of one integrator (each is a
// line of every identity's deny list).
const MaxIntegratorDurables = 32

// IntegratorStreams are the streams an integrator's durables read.
func IntegratorStreams() []string {
	return []string{streams.StreamONU, streams.StreamAlert, streams.StreamNotify}
}

var (
	integratorName = regexp.MustCompile(`^[a-z0-9][a-z0-9_]{0,31}$`)
	durableSuffix  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// IntegratorRecord is one integrator of a keys folder.
type IntegratorRecord struct {
	Name     string   `json:"name"`
	Durables []string `json:"durables"`
}

// IntegratorDurableName is the durable name of an integrator's suffix:
// <name>-<suffix>. A suffix already starting with <name>- is kept.
func IntegratorDurableName(name, suffix string) string {
	if strings.HasPrefix(suffix, name+"-") {
		return suffix
	}
	return name + "-" + suffix
}

// Integrator is the identity integrator:<name>: it may create, read, ack
// and delete the durables listed (each starting with <name>-) on the
// streams of IntegratorStreams, read those streams' info, and nothing else.
// NATS permissions match whole subject tokens, never a prefix of one: the
// durables are named up front, and adding one means regenerating the
// authorization (facho nats identity add again).
func Integrator(name string, durables []string) (Identity, error) {
	if !integratorName.MatchString(name) {
		return Identity{}, fmt.Errorf("integrator name %q: want 1 to 32 lowercase letters, digits or '_', starting with a letter or digit", name)
	}
	if len(durables) == 0 {
		for i := 1; i <= DefaultIntegratorDurables; i++ {
			durables = append(durables, fmt.Sprint(i))
		}
	}
	if len(durables) > MaxIntegratorDurables {
		return Identity{}, fmt.Errorf("integrator %s: %d durables, at most %d", name, len(durables), MaxIntegratorDurables)
	}
	facho := durableStreams()
	created := partitionDurables()
	seen := map[string]bool{}
	var names []string
	for _, d := range durables {
		full := IntegratorDurableName(name, d)
		if !durableSuffix.MatchString(strings.TrimPrefix(full, name+"-")) {
			return Identity{}, fmt.Errorf("integrator %s: durable %q: want letters, digits, '-' or '_' after %s-", name, d, name)
		}
		if _, ok := facho[full]; ok {
			return Identity{}, fmt.Errorf("integrator %s: durable %q is one of Facho's own consumers", name, full)
		}
		if _, ok := created[full]; ok {
			return Identity{}, fmt.Errorf("integrator %s: durable %q is one of Facho's own consumers", name, full)
		}
		if seen[full] {
			continue
		}
		seen[full] = true
		names = append(names, full)
	}
	sort.Strings(names)
	return Identity{
		Name:           IntegratorPrefix + name,
		Description:    "integrator: its own durables (" + name + "-…) on " + strings.Join(IntegratorStreams(), ", ") + "; nothing else",
		Durables:       names,
		DurableStreams: IntegratorStreams(),
	}, nil
}

// LoadIntegrators reads the integrators of keys folder dir (none when it
// has no IntegratorsFile).
func LoadIntegrators(dir string) ([]IntegratorRecord, error) {
	path := filepath.Join(dir, IntegratorsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read integrators: %w", err)
	}
	var recs []IntegratorRecord
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("read integrators %s: %w", path, err)
	}
	return recs, nil
}

// AddIntegrator records integrator name with its durables in keys folder
// dir (merged with the durables it already had) and makes sure it has a
// seed. It returns the identity.
func AddIntegrator(dir, name string, durables []string) (Identity, error) {
	recs, err := LoadIntegrators(dir)
	if err != nil {
		return Identity{}, err
	}
	found := false
	for i, r := range recs {
		if r.Name == name {
			found = true
			if len(durables) > 0 {
				recs[i].Durables = append(r.Durables, durables...)
			}
			durables = recs[i].Durables
		}
	}
	id, err := Integrator(name, durables)
	if err != nil {
		return Identity{}, err
	}
	rec := IntegratorRecord{Name: name, Durables: id.Durables}
	if !found {
		recs = append(recs, rec)
	}
	for i := range recs {
		if recs[i].Name == name {
			recs[i] = rec
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Identity{}, fmt.Errorf("nats keys folder: %w", err)
	}
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return Identity{}, err
	}
	path := filepath.Join(dir, IntegratorsFile)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return Identity{}, fmt.Errorf("write integrators: %w", err)
	}
	if _, err := ensureSeed(SeedFile(dir, id.Name)); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// EnsureIdentities is EnsureKeys plus the integrators recorded in dir: the
// identities (the table, then the integrators) and the public keys of all.
func EnsureIdentities(dir string) ([]Identity, Keys, error) {
	keys, err := EnsureKeys(dir)
	if err != nil {
		return nil, nil, err
	}
	recs, err := LoadIntegrators(dir)
	if err != nil {
		return nil, nil, err
	}
	ids := Table()
	for _, r := range recs {
		id, err := Integrator(r.Name, r.Durables)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, IntegratorsFile), err)
		}
		pub, err := ensureSeed(SeedFile(dir, id.Name))
		if err != nil {
			return nil, nil, err
		}
		keys[id.Name] = pub
		ids = append(ids, id)
	}
	return ids, keys, nil
}
