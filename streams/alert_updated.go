package streams

// An incident's summary follows the outage: while a PON or OLT outage
// fires, the alerter publishes alert.updated on
// facho.alert.<olt_id>.updated each time its count changes (ONUs down,
// PONs in outage), with its new summary and value. It is not a
// notification: receivers keep the one firing and the one resolution;
// Alertmanager gets the new summary with its next re-send.
const (
	TypeAlertUpdated  = "alert.updated"
	AlertStateUpdated = "updated"
)

// AlertUpdated is the payload of alert.updated: the firing alert as it is
// now (state firing, the same id, key and starts_at as its alert.firing,
// the new summary and value). Nats-Msg-Id alert:<id>:updated:<revision>.
type AlertUpdated Alert

func (AlertUpdated) EventType() string { return TypeAlertUpdated }
