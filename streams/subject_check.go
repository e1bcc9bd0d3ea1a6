package streams

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// SubjectPattern is the subject an event type must be published on, token
// by token: a literal; "{field}", a token equal to that string field of
// the event's data; "*", any valid id. ok is false for a type this version
// does not know.
func SubjectPattern(eventType string) (pattern string, ok bool) {
	switch eventType {
	case TypeBrandUpserted, TypeBrandDeleted:
		return "facho.config.brand.{id}", true
	case TypeOIDUpserted, TypeOIDDeleted:
		return "facho.config.oid.{id}", true
	case TypeOLTUpserted, TypeOLTDeleted:
		return "facho.config.olt.{id}", true
	case TypeJobUpserted, TypeJobDeleted:
		return "facho.config.job.{id}", true
	case TypeJobOLTAssigned, TypeJobOLTUnassigned:
		return "facho.config.assignment.{job_id}.{olt_id}", true
	case TypeOLTAutoDisabled, TypeOLTAutoEnabled:
		return "facho.config.olt_disabled.{id}", true
	case TypeWorkflowUpserted, TypeWorkflowDeleted:
		return "facho.config.workflow.{id}", true
	case TypeNodeDue:
		return "facho.schedule.due.{olt_id}.{class}", true
	case TypeNodeRunRequested:
		return "facho.schedule.manual.{olt_id}", true
	case TypeExecutionAborted:
		return "facho.exec.{olt_id}." + PhaseAborted, true
	case TypeExecutionStarted:
		return "facho.exec.{olt_id}." + PhaseStarted, true
	case TypeExecutionSucceeded:
		return "facho.exec.{olt_id}." + PhaseSucceeded, true
	case TypeExecutionFailed:
		return "facho.exec.{olt_id}." + PhaseFailed, true
	case TypeExecutionSkipped:
		return "facho.exec.{olt_id}." + PhaseSkipped, true
	case TypeExecutionInterrupted:
		return "facho.exec.{olt_id}." + PhaseInterrupted, true
	case TypeVarbindBatch:
		return "facho.varbinds.{olt_id}", true
	case TypeONUChanged:
		return "facho.onu.{olt_id}.{change}", true
	case TypeAudit:
		return "facho.audit.*", true
	case TypeDeadLetter:
		return "facho.dlq.{consumer}", true
	case TypeNotification:
		return "facho.notify.{kind}.*", true
	case TypeSilenceUpserted, TypeSilenceDeleted:
		return "facho.config.silence.{id}", true
	case TypeOLTAvailability:
		return "facho.olt.{olt_id}.availability", true
	case TypeOLTHealth:
		return "facho.olt.{olt_id}.health", true
	case TypeTrapReceived, TypeTrapDecoded:
		return "facho.trap.{olt_id}", true
	case TypeAlertFiring:
		return "facho.alert.*." + AlertStateFiring, true
	case TypeAlertResolved:
		return "facho.alert.*." + AlertStateResolved, true
	case TypeAlertAcknowledged:
		return "facho.alert.*." + AlertStateAcknowledged, true
	case TypeAlertUpdated:
		return "facho.alert.*." + AlertStateUpdated, true
	}
	return "", false
}

// legacyNodeDuePattern is the subject of a NodeDue before queue classes;
// CheckSubject still accepts it (a stream may hold such events).
const legacyNodeDuePattern = "facho.schedule.due.{olt_id}"

// subjectFields are the data fields a subject pattern may name.
type subjectFields struct {
	ID       string `json:"id"`
	JobID    string `json:"job_id"`
	OLTID    string `json:"olt_id"`
	Change   string `json:"change"`
	Consumer string `json:"consumer"`
	Kind     string `json:"kind"`
	Class    string `json:"class"`
}

func (f subjectFields) get(name string) (string, bool) {
	switch name {
	case "id":
		return f.ID, true
	case "job_id":
		return f.JobID, true
	case "olt_id":
		return f.OLTID, true
	case "change":
		return f.Change, true
	case "consumer":
		return f.Consumer, true
	case "kind":
		return f.Kind, true
	case "class":
		return f.Class, true
	}
	return "", false
}

// CheckSubject is the one rule of which event may travel on which subject:
// env's type must be one published on subject's kind (a brand.upserted
// only on facho.config.brand.<id>, an execution.failed only on
// facho.exec.<olt>.failed, ...) and every id the subject names must be the
// one in env's data (the brand's id, the batch's olt_id, ...). Consumers
// call it before they apply anything, so a message published on one
// entity's subject cannot change another. The error wraps ErrMalformed.
// A type this version does not know passes: its consumer decides.
func CheckSubject(subject string, env Envelope) error {
	return CheckSubjectWith(subject, env, nil)
}

// payloadField answers a subject field from the decoded payload: its
// top-level string field of that JSON name, which decoding the data filled
// from the same key the check would read. ok false: the payload has no
// such field, and the data is parsed for it.
func payloadField(payload any, name string) (string, bool) {
	v := reflect.ValueOf(payload)
	if v.Kind() != reflect.Struct {
		return "", false
	}
	i := PayloadFieldIndex(v.Type(), name)
	if i < 0 {
		return "", false
	}
	return v.Field(i).String(), true
}

// PayloadFieldIndex is the index in struct type t of the field a subject
// check reads for the subject's field name: the first exported, not
// embedded string field whose json tag's name is name; -1: none. A caller
// checking many events of one type keeps it (projection.Decoders).
func PayloadFieldIndex(t reflect.Type, name string) int {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name && f.IsExported() && !f.Anonymous && f.Type.Kind() == reflect.String {
			return i
		}
	}
	return -1
}

// CheckSubjectWith is CheckSubject for an event whose data was decoded
// already: field answers the subject's fields from it (false, or field
// nil: parsed from the data), so the data is parsed once.
func CheckSubjectWith(subject string, env Envelope, field func(name string) (string, bool)) error {
	pattern, ok := SubjectPattern(env.Type)
	if !ok {
		return nil
	}
	want := strings.Split(pattern, ".")
	got := strings.Split(subject, ".")
	if env.Type == TypeNodeDue && len(got) == len(want)-1 {
		// Published before queue classes: no class token (and no class).
		pattern = legacyNodeDuePattern
		want = want[:len(want)-1]
	}
	if len(got) != len(want) {
		return fmt.Errorf("%w: %s on subject %q: want %s", ErrMalformed, env.Type, subject, pattern)
	}
	var fields *subjectFields
	for i, w := range want {
		switch {
		case w == "*":
			if !ValidID(got[i]) {
				return fmt.Errorf("%w: %s on subject %q: token %q is not an id", ErrMalformed, env.Type, subject, got[i])
			}
		case strings.HasPrefix(w, "{") && strings.HasSuffix(w, "}"):
			name := w[1 : len(w)-1]
			v, ok := "", false
			if field != nil {
				v, ok = field(name)
			}
			if !ok {
				if fields == nil {
					fields = &subjectFields{}
					if err := json.Unmarshal(env.Data, fields); err != nil {
						return fmt.Errorf("%w: %s data: %v", ErrMalformed, env.Type, err)
					}
				}
				v, ok = fields.get(name)
			}
			if !ok {
				return fmt.Errorf("streams: subject pattern %s names unknown field %s", pattern, name)
			}
			if v != got[i] {
				return fmt.Errorf("%w: %s on subject %q: %s %q does not match the subject (want %s)", ErrMalformed, env.Type, subject, name, v, pattern)
			}
		case w != got[i]:
			return fmt.Errorf("%w: %s on subject %q: want %s", ErrMalformed, env.Type, subject, pattern)
		}
	}
	return nil
}

// DecodeOn is Decode for a message received on subject: the payload must
// be of type T and the subject the one CheckSubject allows for it.
func DecodeOn[T Event](subject string, b []byte) (Envelope, T, error) {
	env, payload, err := Decode[T](b)
	if err != nil {
		return env, payload, err
	}
	if err := CheckSubjectOf(subject, env, payload); err != nil {
		return env, payload, err
	}
	return env, payload, nil
}

// CheckSubjectOf is CheckSubjectWith answering the subject's fields from
// payload, the event env's data was decoded into (payloadField).
func CheckSubjectOf(subject string, env Envelope, payload any) error {
	return CheckSubjectWith(subject, env, func(name string) (string, bool) { return payloadField(payload, name) })
}
