package api

import (
	"sort"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/streams"
)

// The answers that are not a resource or a row of a read model. Handlers
// encode these types and the OpenAPI document reflects them (routeDocs'
// Resp), so the document says what the wire carries.

// deleted answers the deletion of a resource by id.
type deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// assignmentDeleted answers the removal of a job's assignment to an OLT.
type assignmentDeleted struct {
	JobID   string `json:"job_id"`
	OLTID   string `json:"olt_id"`
	Deleted bool   `json:"deleted"`
}

// revoked answers the revocation of an API token.
type revoked struct {
	ID      string `json:"id"`
	Revoked bool   `json:"revoked"`
}

// errorBody is every error's answer; field names the input at fault (400
// only, "" when the body as a whole is).
type errorBody struct {
	Error string  `json:"error"`
	Field *string `json:"field,omitempty"`
}

// health is the answer of /healthz: "OK" or "Service Unavailable", and
// each dependency's "ok" or what is down.
type health struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

// whoAmI is the authenticated principal.
type whoAmI struct {
	UserID   int64     `json:"user_id"`
	Username string    `json:"username"`
	Role     auth.Role `json:"role"`
	Via      auth.Via  `json:"via"`
}

type userList struct {
	Count int         `json:"count"`
	Total int         `json:"total"`
	Users []auth.User `json:"users"`
}

type tokenList struct {
	Count  int          `json:"count"`
	Total  int          `json:"total"`
	Tokens []auth.Token `json:"tokens"`
}

// tokenCreated carries the token's secret, shown this once.
type tokenCreated struct {
	Token  auth.Token `json:"token"`
	Secret string     `json:"secret"`
}

type vendorProfileList struct {
	Count    int                    `json:"count"`
	Profiles []vendorProfileSummary `json:"profiles"`
}

// webhookCreated carries the generated secret when the request had none
// (shown this once).
type webhookCreated struct {
	Webhook webhookView `json:"webhook"`
	Secret  string      `json:"secret,omitempty"`
}

type nodeList struct {
	OLTID string                 `json:"olt_id"`
	Count int                    `json:"count"`
	Nodes []streams.NodeSchedule `json:"nodes"`
}

type ponList struct {
	OLTID string         `json:"olt_id"`
	Count int            `json:"count"`
	PONs  []ponHealthRow `json:"pons"`
}

type incidentDetail struct {
	Incident incidentRow `json:"incident"`
	Alerts   []alertRow  `json:"alerts"`
}

type executionDetail struct {
	Execution   executionRow    `json:"execution"`
	Attempts    []attemptRow    `json:"attempts"`
	ONUFailures []onuFailureRow `json:"onu_failures"`
}

// runAccepted answers a manual run: the execution it will be.
type runAccepted struct {
	ExecutionID string    `json:"execution_id"`
	NodeID      string    `json:"node_id"`
	JobID       string    `json:"job_id"`
	OLTID       string    `json:"olt_id"`
	RequestedAt time.Time `json:"requested_at"`
}

// queueAnswer is the planner's queue report and its age.
type queueAnswer struct {
	streams.QueueReport
	AgeSeconds float64 `json:"age_seconds"`
}

// The members a list carries beside its page (see list).
type (
	onusOfOLT struct {
		OLTID string `json:"olt_id"`
	}
	serialQuery struct {
		Serial string `json:"serial"`
	}
	historyOf struct {
		OLTID    string    `json:"olt_id"`
		PonIndex int64     `json:"pon_index"`
		ONUID    int64     `json:"onu_id"`
		From     time.Time `json:"from"`
		To       time.Time `json:"to"`
		Fields   []string  `json:"fields,omitempty"`
	}
)

// userDeleted answers the deletion of a user (users have numeric ids).
type userDeleted struct {
	ID      int64 `json:"id"`
	Deleted bool  `json:"deleted"`
}

// onuStateAt is the answer of GET .../onus/{pon_index}/{onu_id}?at=: every
// field of onu_history (a string "" and a number or time null without a
// reading) at that time, when each changed last, and the ONU's keys.
type onuStateAt struct{}

func (onuStateAt) schema(*schemaGen) map[string]any {
	props := map[string]any{}
	for _, f := range onuFields {
		switch f.Kind {
		case "number":
			props[f.Name] = map[string]any{"type": "number", "format": "double", "nullable": true}
		case "time":
			props[f.Name] = map[string]any{"type": "string", "format": "date-time", "nullable": true}
		default:
			props[f.Name] = map[string]any{"type": "string"}
		}
	}
	dateTime := map[string]any{"type": "string", "format": "date-time"}
	props["olt_id"] = map[string]any{"type": "string"}
	props["pon_index"] = map[string]any{"type": "integer", "format": "int64"}
	props["onu_id"] = map[string]any{"type": "integer", "format": "int64"}
	props["at"], props["first_seen"], props["last_changed"] = dateTime, dateTime, dateTime
	props["changed_at"] = map[string]any{"type": "object", "additionalProperties": dateTime, "description": "when each field last changed at or before at"}
	required := make([]string, 0, len(props))
	for k := range props {
		required = append(required, k)
	}
	sort.Strings(required)
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}
