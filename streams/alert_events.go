package streams

import "time"

// The alert stream: what the alerter decided about ONUs, PONs and OLTs.
// facho.alert.<olt_id>.firing and .resolved carry the alerts' lifecycle;
// facho.alert.<olt_id>.acknowledged an operator's acknowledgement (from the
// API). Alerts about no single OLT use the OLT token "global".
const (
	StreamAlert   = "FACHO_ALERT"
	SubjectsAlert = "facho.alert.>"

	TypeAlertFiring       = "alert.firing"
	TypeAlertResolved     = "alert.resolved"
	TypeAlertAcknowledged = "alert.acknowledged"
)

// Alert states: the <state> token of facho.alert.<olt_id>.<state>.
const (
	AlertStateFiring       = "firing"
	AlertStateResolved     = "resolved"
	AlertStateAcknowledged = "acknowledged"
)

// AlertGlobal is the OLT token of an alert about no single OLT.
const AlertGlobal = "global"

// SubjectAlert is the subject of an alert event of oltID ("" = global) in
// state.
func SubjectAlert(oltID, state string) string {
	if oltID == "" {
		oltID = AlertGlobal
	}
	return "facho.alert." + oltID + "." + state
}

// Alert rules shipped with Facho (the rule label of every alert).
const (
	RuleONUDown         = "onu_down"
	RuleONURxLow        = "onu_rx_low"
	RuleONURxHigh       = "onu_rx_high"
	RuleOLTRxLow        = "olt_rx_low"
	RuleOLTRxHigh       = "olt_rx_high"
	RuleONURxDrift      = "onu_rx_drift"
	RuleONUFlapping     = "onu_flapping"
	RulePONOutage       = "pon_outage"
	RuleOLTOutage       = "olt_outage"
	RuleOLTUnreachable  = "olt_unreachable"
	RuleOLTEmptyRead    = "olt_empty_read"
	RuleQuotaViolation  = "quota_violation"
	RuleOLTAutoDisabled = "olt_auto_disabled"
	// Rules fed by the OLT's health readings (olt.health): a PON port
	// administratively up whose oper state is down, the chassis above its
	// temperature threshold, a failed power supply, a failed fan (one
	// alert per port or unit).
	RulePONPortDown        = "pon_port_down"
	RuleOLTTemperatureHigh = "olt_temperature_high"
	RuleOLTPSUFailed       = "olt_psu_failed"
	RuleOLTFanFailed       = "olt_fan_failed"
)

// Alert severities, lowest first.
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// Alert is the payload of alert.firing and alert.resolved. Key is stable
// for the thing alerted on (rule + olt + pon + onu); ID names one firing
// of it (key and starts_at), so the firing and the resolution of one
// outage share an ID and a new outage of the same ONU has a new one.
// Nats-Msg-Id alert:<id>:<state>: a restart, a replay or a second replica
// stores each transition once.
type Alert struct {
	ID       string `json:"id"`
	Key      string `json:"key"`
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	State    string `json:"state"`
	OLTID    string `json:"olt_id,omitempty"`
	OLTName  string `json:"olt_name,omitempty"`
	// PonIndex is the PON's index as the OLT reports it; Pon its port name
	// where the profile reads one (e.g. "0/1/3"), else the index.
	PonIndex    *int64     `json:"pon_index,omitempty"`
	Pon         string     `json:"pon,omitempty"`
	ONUID       *int64     `json:"onu_id,omitempty"`
	Serial      string     `json:"serial,omitempty"`
	Description string     `json:"description,omitempty"`
	Summary     string     `json:"summary"`
	Cause       string     `json:"cause,omitempty"`
	StartsAt    time.Time  `json:"starts_at"`
	EndsAt      *time.Time `json:"ends_at,omitempty"`
	// Value is the reading that fired it (dBm, dB of drift, status
	// changes), with its unit.
	Value *float64 `json:"value,omitempty"`
	Unit  string   `json:"unit,omitempty"`
	// IncidentID is the ID of the PON or OLT outage alert this alert is
	// grouped under (its notification is inhibited); an outage alert
	// carries its own ID.
	IncidentID string `json:"incident_id,omitempty"`
	// Inhibited: not notified on its own because its incident covers it.
	Inhibited bool `json:"inhibited,omitempty"`
	// Labels are extra labels passed to Alertmanager as they are.
	Labels     map[string]string `json:"labels,omitempty"`
	ObservedAt time.Time         `json:"observed_at"`
}

func (a Alert) EventType() string {
	if a.State == AlertStateResolved {
		return TypeAlertResolved
	}
	return TypeAlertFiring
}

// AlertAcknowledged is an operator's acknowledgement of one firing (by
// alert ID): it is not notified again until it resolves and fires anew.
type AlertAcknowledged struct {
	AlertID string    `json:"alert_id"`
	Key     string    `json:"key"`
	OLTID   string    `json:"olt_id,omitempty"`
	By      string    `json:"by"`
	Comment string    `json:"comment,omitempty"`
	At      time.Time `json:"at"`
}

func (AlertAcknowledged) EventType() string { return TypeAlertAcknowledged }

// Silences are configuration: facho.config.silence.<silence_id>, published
// by the API, read by the alerter (a silenced alert is recorded but not
// notified) and the projector (alert_silences).
const (
	TypeSilenceUpserted = "silence.upserted"
	TypeSilenceDeleted  = "silence.deleted"
)

// SubjectSilence is a silence's configuration subject.
func SubjectSilence(id string) string { return "facho.config.silence." + id }

// SilenceUpserted silences the alerts that match every non-empty matcher
// (olt_id, pon, rule) from starts_at to ends_at.
type SilenceUpserted struct {
	ID        string    `json:"id"`
	OLTID     string    `json:"olt_id,omitempty"`
	Pon       string    `json:"pon,omitempty"`
	Rule      string    `json:"rule,omitempty"`
	StartsAt  time.Time `json:"starts_at"`
	EndsAt    time.Time `json:"ends_at"`
	CreatedBy string    `json:"created_by"`
	Comment   string    `json:"comment,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func (SilenceUpserted) EventType() string { return TypeSilenceUpserted }

// SilenceDeleted ends a silence before its ends_at.
type SilenceDeleted struct {
	ID string `json:"id"`
}

func (SilenceDeleted) EventType() string { return TypeSilenceDeleted }

// The alerter's durable consumers (services/alerter): one per input
// stream, each applied with its checkpoint and the evaluation state in one
// transaction, and the alerts read model's.
const (
	ConsumerAlerterONU    = "alerter-onu"
	ConsumerAlerterOLT    = "alerter-olt"
	ConsumerAlerterExec   = "alerter-exec"
	ConsumerAlerterNotify = "alerter-notify"
	ConsumerAlerterConfig = "alerter-config"
	ConsumerAlerterAcks   = "alerter-acks"
	ConsumerAlerterAlerts = "alerter-alerts"
)

// SubjectsAlertAcknowledged is every acknowledgement.
const SubjectsAlertAcknowledged = "facho.alert.*." + AlertStateAcknowledged

// Webhook event kinds of alerts: a webhook subscribed to them receives
// the alert.firing / alert.resolved envelopes, signed.
const (
	NotifyAlertFiring   = TypeAlertFiring
	NotifyAlertResolved = TypeAlertResolved
)

// WebhookKinds lists what a webhook may subscribe to: the notification
// kinds and the alert events.
func WebhookKinds() []string {
	return append(NotifyKinds(), NotifyAlertFiring, NotifyAlertResolved)
}
