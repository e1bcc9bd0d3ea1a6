// Package profiles is Facho's vendor catalogue: what it knows of each OLT
// family (how to recognise it, its ONU tables, how their rows are indexed,
// how it wants to be read, which jobs to run) as data, in YAML profiles.
// The profiles in profiles/ are embedded in every binary (Builtin); more
// can be loaded from a folder (Load), so a vendor is added without a
// release.
package profiles

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/facho-olt/facho/streams"
)

//go:embed profiles/*.yaml
var embedded embed.FS

// Profile is one OLT family.
type Profile struct {
	// ID names the profile; it is also the id of the brand made from it.
	ID          string `yaml:"id" json:"id"`
	Name        string `yaml:"name" json:"name"`
	Vendor      string `yaml:"vendor" json:"vendor"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Verified says what the profile was checked against (simulator
	// profile, recordings); empty: from public references only.
	Verified string `yaml:"verified,omitempty" json:"verified,omitempty"`
	Match    Match  `yaml:"match" json:"match"`
	// IndexScheme names Index (the brand's index_scheme).
	IndexScheme string             `yaml:"index_scheme" json:"index_scheme"`
	Index       streams.IndexSpec  `yaml:"index" json:"index"`
	SNMP        streams.SNMPTuning `yaml:"snmp,omitempty" json:"snmp,omitzero"`
	Columns     []Column           `yaml:"columns" json:"columns"`
	Jobs        []Job              `yaml:"jobs" json:"jobs"`
	Bounds      Bounds             `yaml:"bounds,omitempty" json:"bounds,omitzero"` // bounds.go
	Health      *Health            `yaml:"health,omitempty" json:"health,omitempty"`
	Traps       Traps              `yaml:"traps,omitempty" json:"traps,omitempty"`
	// Source is where the profile was loaded from ("builtin:huawei.yaml",
	// a file path).
	Source string `yaml:"-" json:"source"`
}

// Match says which agents the profile is for: a sysObjectID under one of
// the prefixes, or a sysDescr matching one of the patterns (RE2, anywhere
// in the text; "(?i)" for case-insensitive). Priority breaks ties between
// profiles that match (higher first). A profile without rules (the
// generic IF-MIB one) is never auto-detected, only chosen by id.
type Match struct {
	SysObjectID []string `yaml:"sys_object_id,omitempty" json:"sys_object_id,omitempty"`
	SysDescr    []string `yaml:"sys_descr,omitempty" json:"sys_descr,omitempty"`
	Priority    int      `yaml:"priority,omitempty" json:"priority,omitempty"`
}

// Column is one ONU table column: an OID and how its value becomes an ONU
// field.
type Column struct {
	// ID is unique in the profile; the OID's id is "<profile>-<column>".
	ID      string          `yaml:"id" json:"id"`
	Name    string          `yaml:"name" json:"name"`
	OID     string          `yaml:"oid" json:"oid"`
	Field   string          `yaml:"field" json:"field"`
	Decoder streams.Decoder `yaml:"decoder" json:"decoder"`
	// IndexSuffix: arcs a get appends to the ONU's row index (ZTE's
	// optical table, indexed <pon>.<onu>.1).
	IndexSuffix string `yaml:"index_suffix,omitempty" json:"index_suffix,omitempty"`
	// Index, when set, is this column's own index scheme (a table indexed
	// otherwise than the profile's ONU tables); it is read by its own job.
	Index *streams.IndexSpec `yaml:"index,omitempty" json:"index,omitempty"`
}

// Job is a default job of the profile: created with the brand and
// assigned to the OLTs created with the profile.
type Job struct {
	// ID is unique in the profile; the job's id is "<profile>-<job>".
	ID              string   `yaml:"id" json:"id"`
	Name            string   `yaml:"name" json:"name"`
	Kind            string   `yaml:"kind" json:"kind"`
	Columns         []string `yaml:"columns" json:"columns"`
	IntervalSeconds int      `yaml:"interval_seconds" json:"interval_seconds"`
	TimeoutSeconds  int      `yaml:"timeout_seconds,omitempty" json:"timeout_seconds,omitempty"`
	MaxRetries      int      `yaml:"max_retries,omitempty" json:"max_retries,omitempty"`
	Priority        int      `yaml:"priority,omitempty" json:"priority,omitempty"`
}

// OIDID is the id of the OID made from column c of p.
func (p Profile) OIDID(c string) string { return p.ID + "-" + c }

// JobID is the id of the job made from job j of p.
func (p Profile) JobID(j string) string { return p.ID + "-" + j }

// Column returns the column with id.
func (p Profile) Column(id string) (Column, bool) {
	for _, c := range p.Columns {
		if c.ID == id {
			return c, true
		}
	}
	return Column{}, false
}

// Specs are the profile's columns as the OID specs a node carries, with
// the OIDs' ids.
func (p Profile) Specs(ids ...string) []streams.OIDSpec {
	var out []streams.OIDSpec
	for _, c := range p.Columns {
		if len(ids) > 0 && !contains(ids, c.ID) {
			continue
		}
		out = append(out, streams.OIDSpec{ID: p.OIDID(c.ID), OID: c.OID, Field: c.Field, Decoder: c.Decoder, IndexSuffix: c.IndexSuffix, Index: c.Index})
	}
	return out
}

// IndexOf is the index scheme of column c: its own, else the profile's.
func (p Profile) IndexOf(c Column) streams.IndexSpec {
	if c.Index != nil {
		return *c.Index
	}
	return p.Index
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var oidRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)+$`)

// Validate checks everything a brand, its OIDs and jobs made from the
// profile need, and that the match rules compile.
func (p Profile) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !streams.ValidID(p.ID) {
		add("id %q: want 1-64 characters of A-Z a-z 0-9 _ -", p.ID)
	}
	if strings.TrimSpace(p.Name) == "" {
		add("name is required")
	}
	for _, o := range p.Match.SysObjectID {
		if !oidRE.MatchString(strings.Trim(o, ".")) {
			add("match.sys_object_id %q: want a dotted OID", o)
		}
	}
	for _, d := range p.Match.SysDescr {
		if _, err := regexp.Compile(d); err != nil {
			add("match.sys_descr %q: %v", d, err)
		}
	}
	if p.IndexScheme == "" {
		add("index_scheme (the index definition's name) is required")
	}
	if err := p.Index.Validate(); err != nil {
		add("%v", err)
	}
	if err := p.SNMP.Validate(); err != nil {
		add("snmp: %v", err)
	}
	if err := p.Bounds.Validate(); err != nil {
		add("bounds: %v", err)
	}
	if len(p.Columns) == 0 {
		add("columns: at least one")
	}
	seen := map[string]bool{}
	for _, c := range p.Columns {
		where := fmt.Sprintf("column %q", c.ID)
		switch {
		case !streams.ValidID(p.OIDID(c.ID)):
			add("%s: id: want A-Z a-z 0-9 _ - (and %q at most 64 characters)", where, p.OIDID(c.ID))
		case seen[c.ID]:
			add("%s: id used twice", where)
		}
		seen[c.ID] = true
		if !oidRE.MatchString(strings.Trim(c.OID, ".")) {
			add("%s: oid %q: want a dotted OID", where, c.OID)
		}
		if !contains(streams.ONUFields(), c.Field) {
			add("%s: field %q: want one of %s", where, c.Field, strings.Join(streams.ONUFields(), ", "))
		}
		if err := c.Decoder.Validate(); err != nil {
			add("%s: decoder: %v", where, err)
		}
		if err := streams.ValidIndexSuffix(c.IndexSuffix); err != nil {
			add("%s: %v", where, err)
		}
		if c.Index != nil {
			if err := c.Index.Validate(); err != nil {
				add("%s: %v", where, err)
			}
		}
	}
	errs = append(errs, p.validateLang()...)
	jobs := map[string]bool{}
	for _, j := range p.Jobs {
		where := fmt.Sprintf("job %q", j.ID)
		if !streams.ValidID(p.JobID(j.ID)) || jobs[j.ID] {
			add("%s: id: want A-Z a-z 0-9 _ -, unique", where)
		}
		jobs[j.ID] = true
		switch j.Kind {
		case streams.KindDiscovery, streams.KindGet, streams.KindWalk, streams.KindBulkWalk:
		default:
			add("%s: kind %q: want discovery, get, walk or bulkwalk", where, j.Kind)
		}
		if j.IntervalSeconds < 10 || j.IntervalSeconds > 86400 {
			add("%s: interval_seconds %d: want 10..86400", where, j.IntervalSeconds)
		}
		if len(j.Columns) == 0 {
			add("%s: columns: at least one", where)
		}
		for _, cid := range j.Columns {
			c, ok := p.Column(cid)
			if !ok {
				add("%s: column %q is not in the profile", where, cid)
				continue
			}
			if c.Index != nil && j.Kind == streams.KindGet {
				add("%s: column %q has its own index: a get reads ONUs by the profile's index, walk it instead", where, cid)
			}
		}
	}
	return errors.Join(errs...)
}

// Parse reads one profile from YAML (unknown keys are errors) and
// validates it.
func Parse(data []byte, source string) (Profile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Profile
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return Profile{}, fmt.Errorf("%s: empty profile", source)
		}
		return Profile{}, fmt.Errorf("%s: %w", source, err)
	}
	p.Source = source
	p.resolveRows()
	if err := p.Validate(); err != nil {
		return Profile{}, fmt.Errorf("%s: %w", source, err)
	}
	return p, nil
}

// Catalogue is a set of profiles by id.
type Catalogue struct {
	byID map[string]Profile
	// problems are the files of a folder that could not be loaded.
	problems []Problem
}

// New returns a catalogue of the given profiles only (validated).
func New(ps ...Profile) (*Catalogue, error) {
	c := &Catalogue{byID: map[string]Profile{}}
	for _, p := range ps {
		if err := c.Add(p); err != nil {
			return nil, fmt.Errorf("profile %s: %w", p.ID, err)
		}
	}
	return c, nil
}

// Builtin returns the profiles embedded in the binary.
func Builtin() (*Catalogue, error) {
	c := &Catalogue{byID: map[string]Profile{}}
	if err := c.addFS(embedded, "profiles", builtinPrefix); err != nil {
		return nil, err
	}
	return c, nil
}

// Load returns the built-in profiles plus every *.yaml / *.yml file of dir
// (a profile of dir replaces a built-in one of the same id). An empty dir
// loads only the built-in ones. A file that does not parse or validate is
// not loaded and is listed by Problems; only a folder that cannot be read
// is an error.
func Load(dir string) (*Catalogue, error) {
	c, err := Builtin()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return c, nil
	}
	if err := c.addFS(os.DirFS(dir), ".", dir+string(filepath.Separator)); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Catalogue) addFS(fsys fs.FS, dir, prefix string) error {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return fmt.Errorf("vendor profiles: %w", err)
	}
	local := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || (!strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml")) {
			continue
		}
		data, err := fs.ReadFile(fsys, pathJoin(dir, name))
		if err != nil {
			return fmt.Errorf("vendor profiles: %w", err)
		}
		p, err := Parse(data, prefix+name)
		if err != nil {
			if prefix == builtinPrefix {
				return err
			}
			c.problems = append(c.problems, Problem{Source: prefix + name, Error: err.Error()})
			continue
		}
		if other, dup := local[p.ID]; dup {
			c.problems = append(c.problems, Problem{Source: p.Source, Error: fmt.Sprintf("id %q is already the profile of %s: not loaded", p.ID, other)})
			continue
		}
		local[p.ID] = p.Source
		c.byID[p.ID] = p
	}
	return nil
}

func pathJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// Add adds (or replaces) a validated profile.
func (c *Catalogue) Add(p Profile) error {
	p.resolveRows()
	if err := p.Validate(); err != nil {
		return err
	}
	c.byID[p.ID] = p
	return nil
}

// Get returns the profile with id.
func (c *Catalogue) Get(id string) (Profile, bool) {
	p, ok := c.byID[id]
	return p, ok
}

// List returns the profiles sorted by id.
func (c *Catalogue) List() []Profile {
	out := make([]Profile, 0, len(c.byID))
	for _, p := range c.byID {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
