package profiles

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/facho-olt/facho/streams"
)

// Health is a profile's health section: the OLT-level tables (chassis,
// fans, power supplies, PON ports, uplinks) read by one job of kind health
// on a longer interval than the ONU tables. Each table is a list of
// columns; a column's row index is what follows its OID (a scalar's is
// "0"). The chassis values are the highest over the rows (boards) that
// report one. A column of field type filters its table: rows whose type is
// not in its enum are left out (an IF-MIB ifTable holds PON ports and
// uplinks alike).
type Health struct {
	// IntervalSeconds is the health job's interval (default
	// DefaultHealthInterval); TimeoutSeconds its timeout (0: the poller's).
	IntervalSeconds int `yaml:"interval_seconds,omitempty" json:"interval_seconds,omitempty"`
	TimeoutSeconds  int `yaml:"timeout_seconds,omitempty" json:"timeout_seconds,omitempty"`
	// Verified says what the health tables were checked against.
	Verified string         `yaml:"verified,omitempty" json:"verified,omitempty"`
	Chassis  []HealthColumn `yaml:"chassis,omitempty" json:"chassis,omitempty"`
	Fans     []HealthColumn `yaml:"fans,omitempty" json:"fans,omitempty"`
	PSUs     []HealthColumn `yaml:"psus,omitempty" json:"psus,omitempty"`
	PONs     []HealthColumn `yaml:"pons,omitempty" json:"pons,omitempty"`
	Uplinks  []HealthColumn `yaml:"uplinks,omitempty" json:"uplinks,omitempty"`
}

// HealthColumn is one column of a health table: the field it feeds (see
// streams.HealthFields), its OID and decoder.
type HealthColumn struct {
	Field   string          `yaml:"field" json:"field"`
	Name    string          `yaml:"name,omitempty" json:"name,omitempty"`
	OID     string          `yaml:"oid" json:"oid"`
	Decoder streams.Decoder `yaml:"decoder" json:"decoder"`
}

// DefaultHealthInterval is the health job's interval when the profile
// gives none: 5 minutes.
const DefaultHealthInterval = 300

// HealthJobID is the id (within the profile) of the health job; the job's
// id is Profile.JobID(HealthJobID).
const HealthJobID = "health"

// healthDecoders are the decoder kinds a health column may use.
func healthDecoders() []string { return []string{"int", "scaled", "enum", "string", "float_string"} }

// Tables returns the columns of each table in streams.HealthTables order.
func (h Health) Tables() map[string][]HealthColumn {
	return map[string][]HealthColumn{
		streams.HealthChassis: h.Chassis, streams.HealthFans: h.Fans, streams.HealthPSUs: h.PSUs,
		streams.HealthPONs: h.PONs, streams.HealthUplinks: h.Uplinks,
	}
}

// Interval is the health job's interval in seconds.
func (h Health) Interval() int {
	if h.IntervalSeconds == 0 {
		return DefaultHealthInterval
	}
	return h.IntervalSeconds
}

// Validate checks every column: a known field of its table, once; a dotted
// OID; a health decoder whose enum maps to the field's states.
func (h Health) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf("health: "+format, a...)) }
	if h.IntervalSeconds != 0 && (h.IntervalSeconds < 30 || h.IntervalSeconds > 86400) {
		add("interval_seconds %d: want 30..86400", h.IntervalSeconds)
	}
	if h.TimeoutSeconds < 0 || h.TimeoutSeconds > 3600 {
		add("timeout_seconds %d: want 0..3600", h.TimeoutSeconds)
	}
	n := 0
	tables := h.Tables()
	for _, table := range streams.HealthTables() {
		seen := map[string]bool{}
		for _, c := range tables[table] {
			n++
			where := fmt.Sprintf("%s column %q", table, c.Field)
			if _, _, ok := streams.ParseHealthField(streams.HealthField(table, c.Field)); !ok {
				add("%s: field: want one of %s", where, strings.Join(streams.HealthFields()[table], ", "))
			}
			if seen[c.Field] {
				add("%s: field used twice", where)
			}
			seen[c.Field] = true
			if !oidRE.MatchString(strings.Trim(c.OID, ".")) {
				add("%s: oid %q: want a dotted OID", where, c.OID)
			}
			if !contains(healthDecoders(), c.Decoder.Kind) {
				add("%s: decoder kind %q: want one of %s", where, c.Decoder.Kind, strings.Join(healthDecoders(), ", "))
			} else if err := c.Decoder.Validate(); err != nil {
				add("%s: decoder: %v", where, err)
			}
			if states := streams.HealthStates(c.Field); states != nil {
				if c.Decoder.Kind != "enum" {
					add("%s: decoder: want an enum mapping to %s", where, strings.Join(states, ", "))
				}
				for raw, v := range c.Decoder.Enum {
					if !contains(states, v) {
						add("%s: enum %s: %q: want one of %s", where, raw, v, strings.Join(states, ", "))
					}
				}
			}
			if c.Field == streams.HFType && c.Decoder.Kind != "enum" {
				add("%s: a type column filters rows by its enum: want kind enum", where)
			}
		}
		if len(tables[table]) > 0 && table != streams.HealthChassis && onlyType(tables[table]) {
			add("%s: a type column alone reads nothing", table)
		}
	}
	if n == 0 {
		add("at least one table")
	}
	return errors.Join(errs...)
}

func onlyType(cols []HealthColumn) bool {
	for _, c := range cols {
		if c.Field != streams.HFType {
			return false
		}
	}
	return true
}

// UnmarshalYAML reads a health section strictly (unknown keys are errors,
// as for the rest of a profile) and validates it, so a profile with a bad
// health section is refused where it is parsed, with its source.
func (h *Health) UnmarshalYAML(node *yaml.Node) error {
	b, err := yaml.Marshal(node)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	type plain Health
	var p plain
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("health: %w", err)
	}
	*h = Health(p)
	return h.Validate()
}

// HealthOIDID is the id of the OID made from the health column of table
// and field of p.
func (p Profile) HealthOIDID(table, field string) string {
	return p.ID + "-health-" + table + "-" + field
}

// HealthSpecs are the health columns of p as the OID specs a health node
// carries (Field streams.HealthField(table, field)); nil without a health
// section.
func (p Profile) HealthSpecs() []streams.OIDSpec {
	if p.Health == nil {
		return nil
	}
	var out []streams.OIDSpec
	tables := p.Health.Tables()
	for _, table := range streams.HealthTables() {
		for _, c := range tables[table] {
			out = append(out, streams.OIDSpec{ID: p.HealthOIDID(table, c.Field), OID: strings.Trim(c.OID, "."),
				Field: streams.HealthField(table, c.Field), Decoder: c.Decoder})
		}
	}
	return out
}

// HealthColumnName is the name of the OID made from a health column.
func HealthColumnName(table string, c HealthColumn) string {
	if c.Name != "" {
		return c.Name
	}
	return table + " " + c.Field
}
