package streams

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Event types of the configuration stream.
const (
	TypeBrandUpserted    = "brand.upserted"
	TypeOIDUpserted      = "oid.upserted"
	TypeBrandDeleted     = "brand.deleted"
	TypeOIDDeleted       = "oid.deleted"
	TypeOLTUpserted      = "olt.upserted"
	TypeOLTDeleted       = "olt.deleted"
	TypeJobUpserted      = "job.upserted"
	TypeJobDeleted       = "job.deleted"
	TypeJobOLTAssigned   = "job_olt.assigned"
	TypeJobOLTUnassigned = "job_olt.unassigned"
	TypeOLTAutoDisabled  = "olt.auto_disabled"
	TypeWorkflowUpserted = "workflow.upserted"
	TypeWorkflowDeleted  = "workflow.deleted"
)

// Job kinds (seed 000: "descubrimiento, get, walk, etc").
const (
	KindDiscovery = "discovery"
	KindGet       = "get"
	KindWalk      = "walk"
	KindBulkWalk  = "bulkwalk"
)

// ONU fields an OID can feed in onu_data.
const (
	FieldSerial      = "serial"
	FieldDescription = "description"
	FieldStatus      = "status"
	FieldRxPower     = "rx_power"
	// The fields of vendor profiles (issue 9); NULL in onu_data where a
	// vendor has no such column.
	FieldName          = "name"
	FieldTxPower       = "tx_power"
	FieldOLTRxPower    = "olt_rx_power"
	FieldDistance      = "distance"
	FieldTemperature   = "temperature"
	FieldVoltage       = "voltage"
	FieldBias          = "bias"
	FieldLastDownCause = "last_down_cause"
	FieldLastDownTime  = "last_down_time"
	FieldLastUpTime    = "last_up_time"
	FieldModel         = "model"
	FieldFirmware      = "firmware"
)

// ONUFields lists every ONU field an OID can feed.
func ONUFields() []string {
	return []string{FieldSerial, FieldDescription, FieldStatus, FieldRxPower, FieldName, FieldTxPower, FieldOLTRxPower,
		FieldDistance, FieldTemperature, FieldVoltage, FieldBias, FieldLastDownCause, FieldLastDownTime, FieldLastUpTime,
		FieldModel, FieldFirmware}
}

// Decoder says how a raw varbind value becomes a field value. Kinds:
//   - "string": OctetString as text
//   - "hex_serial": 4 ASCII vendor bytes + the rest as upper-case hex (Huawei)
//   - "int": integer as is
//   - "scaled": float = raw*Scale + Offset; NoReading marks "no reading"
//   - "float_string": a decimal in an OctetString ("-10.47", V-SOL), the
//     first number of the text
//   - "regex": a number or text captured from an OctetString by Pattern:
//     the group named Group, else the first group, else the whole match
//     ("0.03 mW (-14.61 dBm)" with `\((-?[0-9.]+) dBm\)` is -14.61); no
//     match is no reading
//   - "enum": integer mapped through Enum (e.g. 1 -> ONLINE)
//   - "date_and_time": an SNMP DateAndTime (8 or 11 bytes) as a time; an
//     all-zero value or year 0 is no reading
//
// Unit says what unit a number is in (after Scale and Offset) and turns it
// into dBm: "mW" (10*log10(mW); 0 or less is no reading), "uW"
// (microwatts), "dBm" or empty (as is). Trim removes the blanks around a
// text (never done silently: text is stored as the OLT sends it, less NUL
// bytes), before Pattern is applied.
type Decoder struct {
	Kind      string            `json:"kind" yaml:"kind"`
	Scale     float64           `json:"scale,omitempty" yaml:"scale,omitempty"`
	Offset    float64           `json:"offset,omitempty" yaml:"offset,omitempty"`
	NoReading *int64            `json:"no_reading,omitempty" yaml:"no_reading,omitempty"`
	Enum      map[string]string `json:"enum,omitempty" yaml:"enum,omitempty"`
	Pattern   string            `json:"pattern,omitempty" yaml:"pattern,omitempty"`
	Group     string            `json:"group,omitempty" yaml:"group,omitempty"`
	Unit      string            `json:"unit,omitempty" yaml:"unit,omitempty"`
	Trim      bool              `json:"trim,omitempty" yaml:"trim,omitempty"`
}

// DecoderKinds lists the supported decoder kinds.
var DecoderKinds = []string{"string", "hex_serial", "int", "scaled", "float_string", "regex", "enum", "date_and_time"}

// Decoder units (Decoder.Unit).
const (
	UnitDBm = "dBm"
	UnitMW  = "mW"
	UnitUW  = "uW"
)

// MaxPatternLen bounds a decoder's, key's or filter's pattern.
const MaxPatternLen = 512

// Validate checks the decoder kind and its options.
func (d Decoder) Validate() error {
	known := false
	for _, k := range DecoderKinds {
		known = known || d.Kind == k
	}
	if !known {
		return fmt.Errorf("unknown decoder kind %q", d.Kind)
	}
	if d.Kind == "enum" && len(d.Enum) == 0 {
		return errors.New("enum decoder needs a mapping")
	}
	switch d.Unit {
	case "", UnitDBm, UnitMW, UnitUW:
	default:
		return fmt.Errorf("unit %q: want dBm, mW or uW", d.Unit)
	}
	if d.Unit != "" && d.Kind != "scaled" && d.Kind != "int" && d.Kind != "float_string" && d.Kind != "regex" {
		return fmt.Errorf("unit applies to the number kinds (int, scaled, float_string, regex), not %s", d.Kind)
	}
	if d.Trim && d.Kind != "string" && d.Kind != "float_string" && d.Kind != "regex" {
		return fmt.Errorf("trim applies to the text kinds (string, float_string, regex), not %s", d.Kind)
	}
	if d.Kind != "regex" {
		if d.Pattern != "" || d.Group != "" {
			return fmt.Errorf("pattern and group apply to the regex kind, not %s", d.Kind)
		}
		return nil
	}
	_, err := d.CompilePattern()
	return err
}

// CompilePattern compiles a regex decoder's pattern and checks its group.
func (d Decoder) CompilePattern() (*regexp.Regexp, error) {
	if d.Pattern == "" || len(d.Pattern) > MaxPatternLen {
		return nil, fmt.Errorf("regex decoder: pattern of 1..%d characters required", MaxPatternLen)
	}
	re, err := regexp.Compile(d.Pattern)
	if err != nil {
		return nil, fmt.Errorf("regex decoder: pattern: %w", err)
	}
	if d.Group != "" && re.SubexpIndex(d.Group) < 0 {
		return nil, fmt.Errorf("regex decoder: pattern has no group named %q", d.Group)
	}
	return re, nil
}

// BrandUpserted creates or changes a brand (vendor).
type BrandUpserted struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// IndexScheme says how a row index names an ONU: "pon.onu" (the
	// index is <pon port index>.<onu id>, Huawei/ZTE/V-SOL, possibly
	// followed by a sub-index such as ZTE's optical table's ".1") or
	// "fiberhome" (one packed integer slot*2^25+pon*2^19+onu*2^8).
	IndexScheme string `json:"index_scheme"`
	// Index defines the scheme as data (vendor profiles): with it,
	// IndexScheme is only its name. Without it IndexScheme must be a
	// built-in ("pon.onu", "fiberhome").
	Index *IndexSpec `json:"index,omitempty"`
	// Profile is the vendor profile the brand was made from, if any.
	Profile string `json:"profile,omitempty"`
	// SNMP says how the brand's OLTs want to be read (GET batch size and
	// concurrency, walk PDU, max-repetitions); zero fields: defaults.
	SNMP SNMPTuning `json:"snmp,omitzero"`
}

func (BrandUpserted) EventType() string { return TypeBrandUpserted }

// Index schemes of a brand (BrandUpserted.IndexScheme).
const (
	IndexSchemePonONU    = "pon.onu"
	IndexSchemeFiberhome = "fiberhome"
)

// IndexSchemes lists the index schemes the poller and projector decode.
func IndexSchemes() []string { return []string{IndexSchemePonONU, IndexSchemeFiberhome} }

// Validate refuses a brand without id or with an index scheme nobody can
// decode: every ONU reading of the brand's OLTs would be dropped.
func (b BrandUpserted) Validate() error {
	if b.ID == "" {
		return errors.New("id is required")
	}
	if err := b.SNMP.Validate(); err != nil {
		return fmt.Errorf("snmp: %w", err)
	}
	if b.Index != nil {
		if b.IndexScheme == "" {
			return errors.New("index_scheme (the name of the index definition) is required")
		}
		return b.Index.Validate()
	}
	for _, s := range IndexSchemes() {
		if b.IndexScheme == s {
			return nil
		}
	}
	if b.IndexScheme == "" {
		return errors.New("index_scheme is required")
	}
	return fmt.Errorf("index_scheme %q: want one of %v", b.IndexScheme, IndexSchemes())
}

// OIDUpserted creates or changes an OID definition of a brand.
type OIDUpserted struct {
	ID      string  `json:"id"`
	BrandID string  `json:"brand_id"`
	Name    string  `json:"name"`
	OID     string  `json:"oid"`
	Field   string  `json:"field"`
	Decoder Decoder `json:"decoder"`
	// IndexSuffix are the arcs a get appends to an ONU's row index to read
	// this column when its table is indexed below the ONU (ZTE's optical
	// table: <pon>.<onu>.1, suffix "1"); empty for the ONU tables. See
	// ValidIndexSuffix.
	IndexSuffix string `json:"index_suffix,omitempty"`
	// Index, when set, is this column's own index definition (a table
	// indexed otherwise than the brand's ONU tables, e.g. ZTE's 1012-tree
	// Tx power on a 1082-tree OLT); walks only: a get addresses ONUs with
	// the brand's scheme.
	Index *IndexSpec `json:"index,omitempty"`
}

func (OIDUpserted) EventType() string { return TypeOIDUpserted }

// BrandDeleted removes a brand (the API refuses it while an OID, OLT or
// job uses it).
type BrandDeleted struct {
	ID string `json:"id"`
}

func (BrandDeleted) EventType() string { return TypeBrandDeleted }

// OIDDeleted removes an OID definition (the API refuses it while a job
// uses it).
type OIDDeleted struct {
	ID string `json:"id"`
}

func (OIDDeleted) EventType() string { return TypeOIDDeleted }

// OLTUpserted creates or changes an OLT. The SNMP community travels only
// sealed (see pkg/secret); no event carries it in plaintext.
type OLTUpserted struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	IP           string `json:"ip"`
	Port         int    `json:"port"`
	BrandID      string `json:"brand_id"`
	CommunityEnc string `json:"community_enc"`
	Enabled      bool   `json:"enabled"`
	Description  string `json:"description,omitempty"`
	// SNMP overrides the brand's tuning for this OLT (non-zero fields).
	SNMP SNMPTuning `json:"snmp,omitzero"`
}

func (OLTUpserted) EventType() string { return TypeOLTUpserted }

// OLTDeleted removes an OLT and all of its pending work.
type OLTDeleted struct {
	ID string `json:"id"`
}

func (OLTDeleted) EventType() string { return TypeOLTDeleted }

// JobUpserted creates or changes an SNMP job (seed 000 SnmpJob).
//
// MaxRetries is how often a failed execution is retried: 0 takes the
// default of the job's queue class (the planner's, seed 001: discovery 3,
// polling 2), 1..10 that many, -1 none; the planner caps it at its retry
// class ceiling (default 3). Events before that rule carry the API's old
// default 3, and their 0 meant none.
type JobUpserted struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	BrandID           string   `json:"brand_id"`
	Kind              string   `json:"kind"`
	OIDIDs            []string `json:"oid_ids"`
	IntervalSeconds   int      `json:"interval_seconds"`
	MaxRetries        int      `json:"max_retries"`
	RetryDelaySeconds int      `json:"retry_delay_seconds"`
	TimeoutSeconds    int      `json:"timeout_seconds"`
	Priority          int      `json:"priority"`
	Enabled           bool     `json:"enabled"`
}

func (JobUpserted) EventType() string { return TypeJobUpserted }

// JobDeleted removes a job.
type JobDeleted struct {
	ID string `json:"id"`
}

func (JobDeleted) EventType() string { return TypeJobDeleted }

// JobOLTAssigned makes a job run on an OLT (seed 003 SnmpJobHost).
type JobOLTAssigned struct {
	JobID   string `json:"job_id"`
	OLTID   string `json:"olt_id"`
	Enabled bool   `json:"enabled"`
}

func (JobOLTAssigned) EventType() string { return TypeJobOLTAssigned }

// JobOLTUnassigned stops a job on an OLT.
type JobOLTUnassigned struct {
	JobID string `json:"job_id"`
	OLTID string `json:"olt_id"`
}

func (JobOLTUnassigned) EventType() string { return TypeJobOLTUnassigned }

// WorkflowUpserted creates or changes a workflow (seed 004): on one OLT,
// the master node (MasterJobID, which must be assigned to the OLT) and the
// chained jobs run as ONE composite node under one lease: the master
// first, then the chain in order. Only the master has a schedule; a
// chained job is not scheduled on its own on that OLT while the workflow
// is enabled. A chained node's failure is recorded on its own execution and
// does not stop the chain unless StopOnFailure.
type WorkflowUpserted struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	OLTID         string   `json:"olt_id"`
	MasterJobID   string   `json:"master_job_id"`
	ChainJobIDs   []string `json:"chain_job_ids"`
	StopOnFailure bool     `json:"stop_on_failure"`
	Enabled       bool     `json:"enabled"`
}

func (WorkflowUpserted) EventType() string { return TypeWorkflowUpserted }

// WorkflowDeleted removes a workflow: its jobs go back to being plain
// nodes.
type WorkflowDeleted struct {
	ID string `json:"id"`
}

func (WorkflowDeleted) EventType() string { return TypeWorkflowDeleted }

// OLTAutoDisabled: the planner disabled an OLT after consecutive failed
// executions (seed 001). The OLT stays disabled until its next
// olt.upserted (a person re-enabling it resets the count).
type OLTAutoDisabled struct {
	ID          string    `json:"id"`
	Reason      string    `json:"reason"`
	Failures    int       `json:"failures"`
	ExecutionID string    `json:"execution_id"`
	DisabledAt  time.Time `json:"disabled_at"`
}

func (OLTAutoDisabled) EventType() string { return TypeOLTAutoDisabled }
