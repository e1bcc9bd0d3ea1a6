package streams

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// OLT health: what an OLT says of itself as a device (chassis, fans, power
// supplies, PON ports, uplinks), read by jobs of kind KindHealth on a longer
// interval than the ONU tables, under the OLT's lease like every job. The
// poller decodes what it read into one OLTHealth reading and publishes it on
// facho.olt.<olt_id>.health (FACHO_OLT), so the last message of the subject
// is the OLT's current health.
const (
	// KindHealth is the job kind that reads an OLT's health tables. Its
	// OIDs carry Field HealthField(table, field).
	KindHealth = "health"
	// TypeOLTHealth is the event of facho.olt.<olt_id>.health.
	TypeOLTHealth = "olt.health"
	// SubjectsOLTHealth is every OLT's health subject.
	SubjectsOLTHealth = "facho.olt.*.health"

	// ConsumerProjectorHealth builds olt_health, olt_pon_health and their
	// history; ConsumerAlerterHealth feeds the health alert rules.
	ConsumerProjectorHealth = "projector-health"
	ConsumerAlerterHealth   = "alerter-health"

	// MaxHealthRows bounds the rows of one table of a reading (an OLT has
	// at most a few hundred PON ports).
	MaxHealthRows = 1024
	// MaxHealthText bounds a name read from the OLT.
	MaxHealthText = 128
)

// SubjectOLTHealth is where an OLT's health readings are published.
func SubjectOLTHealth(oltID string) string { return "facho.olt." + oltID + ".health" }

// Health tables of a reading.
const (
	HealthChassis = "chassis"
	HealthFans    = "fans"
	HealthPSUs    = "psus"
	HealthPONs    = "pons"
	HealthUplinks = "uplinks"
)

// Health fields (the second part of HealthField). A column named type is a
// row filter: rows whose type is not in the column's enum are not rows of
// the table (an IF-MIB ifTable holds PON ports and uplinks alike).
const (
	HFCPUPercent    = "cpu_percent"
	HFMemoryPercent = "memory_percent"
	HFTemperature   = "temperature_c"
	HFName          = "name"
	HFType          = "type"
	HFStatus        = "status"
	HFAdminState    = "admin_state"
	HFOperState     = "oper_state"
	HFTxPower       = "tx_power_dbm"
	HFRxPower       = "rx_power_dbm"
	HFONUCount      = "onu_count"
	HFInErrors      = "in_errors"
	HFOutErrors     = "out_errors"
)

// HealthFields lists the fields of each health table.
func HealthFields() map[string][]string {
	return map[string][]string{
		HealthChassis: {HFCPUPercent, HFMemoryPercent, HFTemperature},
		HealthFans:    {HFName, HFType, HFStatus},
		HealthPSUs:    {HFName, HFType, HFStatus},
		HealthPONs:    {HFName, HFType, HFAdminState, HFOperState, HFTxPower, HFRxPower, HFTemperature, HFONUCount},
		HealthUplinks: {HFName, HFType, HFAdminState, HFOperState, HFInErrors, HFOutErrors},
	}
}

// HealthTables lists the health tables in display order.
func HealthTables() []string {
	return []string{HealthChassis, HealthFans, HealthPSUs, HealthPONs, HealthUplinks}
}

// Unit states (fans, PSUs): what an enum decoder of a status column maps to.
const (
	UnitOK      = "ok"
	UnitFailed  = "failed"
	UnitAbsent  = "absent"
	UnitUnknown = "unknown"
)

// Port states (admin_state, oper_state).
const (
	PortUp      = "up"
	PortDown    = "down"
	PortTesting = "testing"
	PortUnknown = "unknown"
)

// HealthStates are the values an enum decoder of a field may map to; other
// fields' enums are free (type).
func HealthStates(field string) []string {
	switch field {
	case HFStatus:
		return []string{UnitOK, UnitFailed, UnitAbsent, UnitUnknown}
	case HFAdminState, HFOperState:
		return []string{PortUp, PortDown, PortTesting, PortUnknown}
	}
	return nil
}

// HealthField is the OIDSpec.Field of a health column.
func HealthField(table, field string) string { return "health." + table + "." + field }

// ParseHealthField splits an OIDSpec.Field made by HealthField; false when
// it names no known table and field.
func ParseHealthField(s string) (table, field string, ok bool) {
	rest, found := strings.CutPrefix(s, "health.")
	if !found {
		return "", "", false
	}
	table, field, found = strings.Cut(rest, ".")
	if !found {
		return "", "", false
	}
	for _, f := range HealthFields()[table] {
		if f == field {
			return table, field, true
		}
	}
	return "", "", false
}

// ChassisHealth is the chassis of a reading: the highest value over the
// boards that report one (the busiest CPU, the hottest board); nil: not
// read or no reading.
type ChassisHealth struct {
	CPUPercent    *float64 `json:"cpu_percent,omitempty"`
	MemoryPercent *float64 `json:"memory_percent,omitempty"`
	TemperatureC  *float64 `json:"temperature_c,omitempty"`
	// Boards counts the rows the values were taken from.
	Boards int `json:"boards"`
}

// UnitHealth is one fan or power supply: its row index, name and status
// (ok, failed, absent, unknown).
type UnitHealth struct {
	Index  string `json:"index"`
	Name   string `json:"name,omitempty"`
	Status string `json:"status"`
}

// PONHealth is one PON port as the OLT reports it. PonIndex is the row
// index as an integer: the pon_index of the ONU tables when the profile
// reads a table indexed like them (-1 when the index is not one integer).
type PONHealth struct {
	PonIndex     int64    `json:"pon_index"`
	Index        string   `json:"index"`
	Name         string   `json:"name,omitempty"`
	AdminState   string   `json:"admin_state,omitempty"`
	OperState    string   `json:"oper_state,omitempty"`
	TxPowerDBm   *float64 `json:"tx_power_dbm,omitempty"`
	RxPowerDBm   *float64 `json:"rx_power_dbm,omitempty"`
	TemperatureC *float64 `json:"temperature_c,omitempty"`
	ONUCount     *int64   `json:"onu_count,omitempty"`
}

// UplinkHealth is one uplink port.
type UplinkHealth struct {
	Index      string `json:"index"`
	Name       string `json:"name,omitempty"`
	AdminState string `json:"admin_state,omitempty"`
	OperState  string `json:"oper_state,omitempty"`
	InErrors   *int64 `json:"in_errors,omitempty"`
	OutErrors  *int64 `json:"out_errors,omitempty"`
}

// OLTHealth is one health reading of an OLT: every table its job reads,
// decoded. Tables lists the tables the job reads (a table listed with no
// rows was read empty; one not listed is not read). Nats-Msg-Id
// <execution_id>:<attempt>:health.
type OLTHealth struct {
	OLTID       string         `json:"olt_id"`
	ExecutionID string         `json:"execution_id"`
	JobID       string         `json:"job_id"`
	ObservedAt  time.Time      `json:"observed_at"`
	Tables      []string       `json:"tables"`
	Chassis     *ChassisHealth `json:"chassis,omitempty"`
	Fans        []UnitHealth   `json:"fans,omitempty"`
	PSUs        []UnitHealth   `json:"psus,omitempty"`
	PONs        []PONHealth    `json:"pons,omitempty"`
	Uplinks     []UplinkHealth `json:"uplinks,omitempty"`
	// Skipped counts the varbinds that fed no field (no value,
	// undecodable, rows over MaxHealthRows).
	Skipped int `json:"skipped,omitempty"`
}

func (OLTHealth) EventType() string { return TypeOLTHealth }

// Has says whether the reading covers table.
func (h OLTHealth) Has(table string) bool {
	for _, t := range h.Tables {
		if t == table {
			return true
		}
	}
	return false
}

// Validate checks what a consumer relies on: ids, bounds, states.
func (h OLTHealth) Validate() error {
	if !ValidID(h.OLTID) {
		return fmt.Errorf("olt_id %q is not a valid id", h.OLTID)
	}
	if h.ObservedAt.IsZero() {
		return errors.New("observed_at is required")
	}
	for _, n := range []int{len(h.Fans), len(h.PSUs), len(h.PONs), len(h.Uplinks)} {
		if n > MaxHealthRows {
			return fmt.Errorf("%d rows in a table: at most %d", n, MaxHealthRows)
		}
	}
	for _, u := range append(append([]UnitHealth{}, h.Fans...), h.PSUs...) {
		if !oneOf(u.Status, HealthStates(HFStatus)) {
			return fmt.Errorf("unit %s: status %q", u.Index, u.Status)
		}
	}
	for _, p := range h.PONs {
		if (p.AdminState != "" && !oneOf(p.AdminState, HealthStates(HFAdminState))) || (p.OperState != "" && !oneOf(p.OperState, HealthStates(HFOperState))) {
			return fmt.Errorf("pon %s: state %q/%q", p.Index, p.AdminState, p.OperState)
		}
	}
	return nil
}

func oneOf(s string, list []string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}
