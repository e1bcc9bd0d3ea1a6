package streams

import "time"

// The notification stream (issue 11): every notification the auditor sends
// to webhooks is also published here, so operators can subscribe to
// facho.notify.> (or one kind) instead of running a webhook receiver.
const (
	StreamNotify   = "FACHO_NOTIFY"
	SubjectsNotify = "facho.notify.>"
	// TypeNotification is the event of facho.notify.<kind>.<olt_id|global>.
	TypeNotification = "notification"
)

// Durable consumers of the auditor's quotas and notifications (see
// services/auditor). They are separate from the coordinator log's
// consumers (auditor-exec, auditor-audit) so each read model has its own
// checkpoints and can be rebuilt alone.
const (
	// ConsumerAuditorSchedule reads NodeDue: what is due in which hour,
	// and the interval the hour's quota is computed from.
	ConsumerAuditorSchedule = "auditor-schedule"
	// ConsumerAuditorQuotaExec reads the execution events: what each
	// execution of the hour came to; consecutive failures.
	ConsumerAuditorQuotaExec = "auditor-quota-exec"
	// ConsumerAuditorConfig reads the OLT configuration events: an OLT
	// disabled or deleted mid-hour interrupts its quotas.
	ConsumerAuditorConfig = "auditor-config"
	// ConsumerAuditorQuotaAudit reads the audit events: an OLT_DISABLED
	// interrupts the OLT's quotas and is notified.
	ConsumerAuditorQuotaAudit = "auditor-quota-audit"
	// ConsumerAuditorNotify reads the quota violation notifications:
	// quota_violations rows.
	ConsumerAuditorNotify = "auditor-notify"
	// ConsumerAuditorNotifyLog reads them too, for the coordinator log:
	// their QUOTA_VIOLATION rows.
	ConsumerAuditorNotifyLog = "auditor-notify-log"
)

// SubjectsNotifyQuotaViolation is every quota violation notification.
const SubjectsNotifyQuotaViolation = "facho.notify." + NotifyQuotaViolation + ".>"

// SubjectsConfigOLT is every OLT configuration subject.
const SubjectsConfigOLT = "facho.config.olt.>"

// Notification kinds (the <kind> token of facho.notify.<kind>.<olt>).
const (
	// NotifyQuotaViolation: an hour's quota was below the threshold.
	NotifyQuotaViolation = "quota_violation"
	// NotifyOLTDisabled: an OLT_DISABLED audit event.
	NotifyOLTDisabled = "olt_disabled"
	// NotifyRepeatedFailures: N consecutive final failures of an OLT's
	// executions.
	NotifyRepeatedFailures = "repeated_failures"
)

// NotifyKinds lists the notification kinds a webhook may subscribe to.
func NotifyKinds() []string {
	return []string{NotifyQuotaViolation, NotifyOLTDisabled, NotifyRepeatedFailures, NotifyOLTEnabled}
}

// NotifyGlobal is the OLT token of a notification about no single OLT.
const NotifyGlobal = "global"

// SubjectNotify is the subject of a notification of kind about oltID
// ("" = global).
func SubjectNotify(kind, oltID string) string {
	if oltID == "" {
		oltID = NotifyGlobal
	}
	return "facho.notify." + kind + "." + oltID
}

// Notification is what operators and webhooks receive. A webhook's body is
// this envelope too (signed, see services/auditor).
type Notification struct {
	// ID is unique per notification and stable across re-publishes and
	// webhook retries (the Nats-Msg-Id and the webhook's X-Facho-Notification).
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	OLTID    string `json:"olt_id,omitempty"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	// Details: the violation's report, the audit event's details, or the
	// failure streak.
	Details    map[string]any `json:"details,omitempty"`
	OccurredAt time.Time      `json:"occurred_at"`
}

func (Notification) EventType() string { return TypeNotification }
