package auditor

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// Entry is one coordinator log entry (seed 002 CoordinatorLog).
type Entry struct {
	OLTID        string // "" = global
	EventType    string
	Level        string
	Message      string
	Details      map[string]any
	Timestamp    time.Time
	SourceStream string
	SourceSeq    uint64
}

// errSkip marks an event the auditor does not log (a type it does not know).
type errSkip struct{ typ string }

func (e errSkip) Error() string { return "no coordinator log for event type " + e.typ }

// fromExec turns an execution lifecycle event into an entry.
func fromExec(env streams.Envelope) (Entry, error) {
	switch env.Type {
	case streams.TypeExecutionStarted:
		return execEntry(env, startedEntry)
	case streams.TypeExecutionSucceeded:
		return execEntry(env, succeededEntry)
	case streams.TypeExecutionFailed:
		return execEntry(env, failedEntry)
	case streams.TypeExecutionSkipped:
		return execEntry(env, skippedEntry)
	case streams.TypeExecutionAborted:
		return execEntry(env, abortedEntry)
	case streams.TypeExecutionInterrupted:
		return execEntry(env, interruptedEntry)
	}
	return Entry{Timestamp: env.Time}, errSkip{env.Type}
}

// execEntry decodes env's data as a T and makes it an entry.
func execEntry[T any](env streams.Envelope, of func(time.Time, T) Entry) (Entry, error) {
	var ev T
	if err := streams.DecodeData(env, &ev); err != nil {
		return Entry{Timestamp: env.Time}, err
	}
	return of(env.Time, ev), nil
}

func startedEntry(at time.Time, ev streams.ExecutionStarted) Entry {
	return Entry{Timestamp: at, OLTID: ev.OLTID, EventType: streams.AuditExecStarted, Level: streams.LevelInfo,
		Message: fmt.Sprintf("execution %s of job %s started (attempt %d, poller %s)", ev.ExecutionID, ev.JobID, ev.Attempt, ev.PollerID),
		Details: map[string]any{"execution_id": ev.ExecutionID, "job_id": ev.JobID, "poller_id": ev.PollerID,
			"attempt": ev.Attempt, "lease_revision": ev.LeaseRevision, "started_at": ev.StartedAt}}
}

func succeededEntry(at time.Time, ev streams.ExecutionSucceeded) Entry {
	return Entry{Timestamp: at, OLTID: ev.OLTID, EventType: streams.AuditExecSucceeded, Level: streams.LevelInfo,
		Message: fmt.Sprintf("execution %s of job %s succeeded in %d ms (%d varbinds)", ev.ExecutionID, ev.JobID, ev.DurationMS, ev.Varbinds),
		Details: map[string]any{"execution_id": ev.ExecutionID, "job_id": ev.JobID, "poller_id": ev.PollerID,
			"attempt": ev.Attempt, "duration_ms": ev.DurationMS, "varbinds": ev.Varbinds, "batches": ev.Batches,
			"started_at": ev.StartedAt, "finished_at": ev.FinishedAt}}
}

func failedEntry(at time.Time, ev streams.ExecutionFailed) Entry {
	e := Entry{Timestamp: at, OLTID: ev.OLTID, EventType: streams.AuditExecFailed, Level: streams.LevelError,
		Message: fmt.Sprintf("execution %s of job %s failed (attempt %d): %s", ev.ExecutionID, ev.JobID, ev.Attempt, ev.Error),
		Details: map[string]any{"execution_id": ev.ExecutionID, "job_id": ev.JobID, "poller_id": ev.PollerID,
			"attempt": ev.Attempt, "duration_ms": ev.DurationMS, "error": ev.Error, "retryable": ev.Retryable,
			"started_at": ev.StartedAt, "finished_at": ev.FinishedAt}}
	if ev.Cause != "" {
		e.Details["cause"] = ev.Cause // machine readable (streams.ExecCause*)
	}
	if ev.Retryable {
		e.Level = streams.LevelWarning // another attempt follows
	}
	return e
}

func skippedEntry(at time.Time, ev streams.ExecutionSkipped) Entry {
	// A warning: a run was omitted (no catch-up), which counts against
	// the hour's quota.
	e := Entry{Timestamp: at, OLTID: ev.OLTID, EventType: streams.AuditExecSkipped, Level: streams.LevelWarning,
		Message: fmt.Sprintf("execution %s of job %s skipped: %s", ev.ExecutionID, ev.JobID, ev.Reason),
		Details: map[string]any{"execution_id": ev.ExecutionID, "job_id": ev.JobID, "poller_id": ev.PollerID,
			"reason": ev.Reason, "scheduled_at": ev.ScheduledAt, "skipped_at": ev.SkippedAt}}
	if ev.Attempt > 0 {
		// Which dispatch was skipped: the retry after a failed attempt
		// ends the execution, a stale skip of an earlier one does not.
		e.Message = fmt.Sprintf("execution %s of job %s skipped (attempt %d): %s", ev.ExecutionID, ev.JobID, ev.Attempt, ev.Reason)
		e.Details["attempt"] = ev.Attempt
	}
	return e
}

func abortedEntry(at time.Time, ev streams.ExecutionAborted) Entry {
	return Entry{Timestamp: at, OLTID: ev.OLTID, EventType: streams.AuditExecAborted, Level: streams.LevelWarning,
		Message: fmt.Sprintf("execution %s of job %s aborted before it started: %s", ev.ExecutionID, ev.JobID, ev.Reason),
		Details: map[string]any{"execution_id": ev.ExecutionID, "job_id": ev.JobID, "poller_id": ev.PollerID,
			"reason": ev.Reason, "aborted_at": ev.AbortedAt}}
}

func interruptedEntry(at time.Time, ev streams.ExecutionInterrupted) Entry {
	// An error: a poller died mid-run and the attempt's work is lost;
	// its NodeDue may run again as the next attempt. A warning when the
	// planner cancelled it (its OLT was disabled or deleted).
	e := Entry{Timestamp: at, OLTID: ev.OLTID, EventType: streams.AuditExecInterrupted, Level: streams.LevelError,
		Message: fmt.Sprintf("execution %s of job %s interrupted (attempt %d): %s", ev.ExecutionID, ev.JobID, ev.Attempt, ev.Reason),
		Details: map[string]any{"execution_id": ev.ExecutionID, "job_id": ev.JobID, "poller_id": ev.PollerID,
			"attempt": ev.Attempt, "lease_revision": ev.LeaseRevision, "detected_by": ev.DetectedBy, "reason": ev.Reason,
			"started_at": ev.StartedAt, "interrupted_at": ev.InterruptedAt, "cancelled": ev.Cancelled}}
	if ev.Cancelled {
		e.Level = streams.LevelWarning
	}
	return e
}

// fromExecOn is fromExec, with the subject check, for a message received
// on subject, in one pass (projection.DecodeOn) as the type the subject's
// phase names. ok false: no such phase, or the message was refused; the
// caller then takes the general path, which says how the live decoder
// counts it (refused, or ignored: a type the log does not know). What
// this accepts, that path accepts with the same entry.
func fromExecOn(d *projection.Decoders, subject string, data []byte) (Entry, bool) {
	var (
		e   Entry
		err error
	)
	switch subject[strings.LastIndexByte(subject, '.')+1:] {
	case streams.PhaseStarted:
		e, err = execEntryOn(d, subject, data, startedEntry)
	case streams.PhaseSucceeded:
		e, err = execEntryOn(d, subject, data, succeededEntry)
	case streams.PhaseFailed:
		e, err = execEntryOn(d, subject, data, failedEntry)
	case streams.PhaseSkipped:
		e, err = execEntryOn(d, subject, data, skippedEntry)
	case streams.PhaseAborted:
		e, err = execEntryOn(d, subject, data, abortedEntry)
	case streams.PhaseInterrupted:
		e, err = execEntryOn(d, subject, data, interruptedEntry)
	default:
		return e, false
	}
	return e, err == nil
}

func execEntryOn[T streams.Event](d *projection.Decoders, subject string, data []byte, of func(time.Time, T) Entry) (Entry, error) {
	env, ev, err := projection.DecodeOnWith[T](d, subject, data)
	if err != nil {
		return Entry{}, err
	}
	return of(env.Time, ev), nil
}

var levels = map[string]bool{streams.LevelDebug: true, streams.LevelInfo: true, streams.LevelWarning: true, streams.LevelError: true, streams.LevelCritical: true}

// fromAudit turns an audit event into an entry.
func fromAudit(env streams.Envelope) (Entry, error) {
	e := Entry{Timestamp: env.Time}
	if env.Type != streams.TypeAudit {
		return e, errSkip{env.Type}
	}
	var ev streams.AuditEvent
	if err := streams.DecodeData(env, &ev); err != nil {
		return e, err
	}
	if ev.Kind == "" {
		return e, fmt.Errorf("%w: audit event without event_type", streams.ErrMalformed)
	}
	e.OLTID, e.EventType, e.Level, e.Message, e.Details = ev.OLTID, ev.Kind, strings.ToUpper(ev.Level), ev.Message, ev.Details
	if !levels[e.Level] {
		e.Level = streams.LevelInfo
	}
	return e, nil
}

// secretKey matches detail keys whose values must never be logged.
var secretKey = regexp.MustCompile(`(?i)community|password|passwd|secret|token|credential`)

// controlChars are stripped so a message cannot forge log lines.
var controlChars = regexp.MustCompile(`[\x00-\x08\x0b-\x1f\x7f]`)

const redacted = "[REDACTED]"

// sanitize redacts secrets from details (at any depth), strips control
// characters and bounds the message length.
func sanitize(e Entry) Entry {
	e.Message = sanitizeString(e.Message)
	e.Details = sanitizeMap(e.Details)
	e.EventType = cut(sanitizeString(e.EventType), 64)
	return e
}

func sanitizeString(s string) string {
	if hasControl(s) {
		s = strings.ReplaceAll(s, "\n", " ")
		s = controlChars.ReplaceAllString(s, "")
	}
	if len(s) > 4000 {
		s = cut(s, 4000) + "..."
	}
	return s
}

// cut shortens s to at most n bytes without splitting a character:
// Postgres refuses invalid UTF-8, which would dead-letter the entry.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// hasControl reports whether s holds a byte sanitizeString changes: a
// newline or one of controlChars (all ASCII); without one both
// replacements leave s as it is and are skipped.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// secretWords are secretKey's alternatives, lower case.
var secretWords = [...]string{"community", "password", "passwd", "secret", "token", "credential"}

// isSecretKey is secretKey.MatchString(k): for an ASCII key (the usual
// case, where the regexp's case folding is ASCII's) by lower-casing it
// and looking for each word, otherwise by the regexp (Unicode folding:
// the Kelvin sign is a k).
func isSecretKey(k string) bool {
	switch k {
	case "execution_id", "job_id", "poller_id", "attempt", "lease_revision", "started_at", "finished_at",
		"duration_ms", "varbinds", "batches", "error", "retryable", "reason", "scheduled_at", "skipped_at",
		"aborted_at", "detected_by", "interrupted_at", "cancelled":
		// The execution entries' keys (fromExec): none is a secret, and
		// every rebuilt entry asks about each of them.
		return false
	}
	var buf [64]byte
	if len(k) > len(buf) {
		return secretKey.MatchString(k)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 0x80:
			return secretKey.MatchString(k)
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	lower := buf[:len(k)]
	for _, w := range secretWords {
		if bytes.Contains(lower, []byte(w)) {
			return true
		}
	}
	return false
}

func sanitizeMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	if cleanMap(m) {
		// The usual case (every entry of a rebuild): nothing to redact or
		// strip, and a copy would be the same map.
		return m
	}
	return sanitizeMapCopy(m)
}

// sanitizeMapCopy is sanitizeMap by making a new map, always.
func sanitizeMapCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if isSecretKey(k) {
			out[k] = redacted
			continue
		}
		out[k] = sanitizeValue(v)
	}
	return out
}

// cleanMap reports whether sanitizeMap would return m unchanged: no
// secret key and no string sanitizeString changes, at any depth.
func cleanMap(m map[string]any) bool {
	for k, v := range m {
		if isSecretKey(k) || !cleanValue(v) {
			return false
		}
	}
	return true
}

func cleanValue(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return x != nil && cleanMap(x) // sanitizeMap makes a nil map {}
	case []any:
		for _, e := range x {
			if !cleanValue(e) {
				return false
			}
		}
		return x != nil // sanitizeValue makes a nil slice []
	case string:
		return len(x) <= 4000 && !hasControl(x)
	}
	return true
}

func sanitizeValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return sanitizeMap(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = sanitizeValue(x[i])
		}
		return out
	case string:
		return sanitizeString(x)
	default:
		return v
	}
}
