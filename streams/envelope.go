package streams

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Envelope wraps every Facho event. Type and Version say which payload
// schema Data follows (see Catalogue).
type Envelope struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Version int             `json:"version"`
	Time    time.Time       `json:"time"`
	Source  string          `json:"source"`
	Data    json.RawMessage `json:"data"`
}

// Event is implemented by every payload type.
type Event interface {
	EventType() string
}

// Versioned is implemented by payload types whose current version is not
// 1; Encode writes that version and Decode accepts only it.
type Versioned interface {
	EventVersion() int
}

// VersionOf is the version e is encoded with: 1 unless e is Versioned.
func VersionOf(e Event) int {
	if v, ok := e.(Versioned); ok {
		return v.EventVersion()
	}
	return 1
}

// MinVersionOf is the oldest version Decode accepts for e: e's
// EventMinVersion when it has one (a newer version that only added
// fields), else its current version.
func MinVersionOf(e Event) int {
	if v, ok := e.(interface{ EventMinVersion() int }); ok {
		return v.EventMinVersion()
	}
	return VersionOf(e)
}

// ErrMalformed marks an event that can never be decoded; consumers send it to
// the dead-letter subject instead of retrying.
var ErrMalformed = errors.New("malformed event")

// Encode wraps payload in an envelope with a fresh id.
func Encode(source string, now time.Time, payload Event) ([]byte, error) {
	return EncodeWithID(uuid.NewString(), source, now, payload)
}

// EncodeWithID wraps payload in an envelope with the given id; use ids a
// retry recomputes so the stream's duplicate window can drop re-sends.
func EncodeWithID(id, source string, now time.Time, payload Event) ([]byte, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", payload.EventType(), err)
	}
	b, err := json.Marshal(Envelope{ID: id, Type: payload.EventType(), Version: VersionOf(payload), Time: now.UTC(), Source: source, Data: data})
	if err != nil {
		return nil, fmt.Errorf("encode %s envelope: %w", payload.EventType(), err)
	}
	return b, nil
}

// DecodeEnvelope parses the envelope only.
func DecodeEnvelope(b []byte) (Envelope, error) {
	var env Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return env, fmt.Errorf("%w: envelope: %v", ErrMalformed, err)
	}
	if env.Type == "" || env.Version < 1 || len(env.Data) == 0 {
		return env, fmt.Errorf("%w: envelope lacks type, version or data", ErrMalformed)
	}
	return env, nil
}

// Decode parses an envelope whose payload must be of type T.
func Decode[T Event](b []byte) (Envelope, T, error) {
	var payload T
	env, err := DecodeEnvelope(b)
	if err != nil {
		return env, payload, err
	}
	if env.Type != payload.EventType() {
		return env, payload, fmt.Errorf("%w: type %q, want %q", ErrMalformed, env.Type, payload.EventType())
	}
	if want, min := VersionOf(payload), MinVersionOf(payload); env.Version < min || env.Version > want {
		if min == want {
			return env, payload, fmt.Errorf("%w: %s version %d not supported (want %d)", ErrMalformed, env.Type, env.Version, want)
		}
		return env, payload, fmt.Errorf("%w: %s version %d not supported (want %d to %d)", ErrMalformed, env.Type, env.Version, min, want)
	}
	if err := DecodeData(env, &payload); err != nil {
		return env, payload, err
	}
	return env, payload, nil
}

// DecodeData parses env.Data into v (a pointer to a payload type) and runs
// its Validate method when it has one.
func DecodeData(env Envelope, v any) error {
	if err := json.Unmarshal(env.Data, v); err != nil {
		return fmt.Errorf("%w: %s data: %v", ErrMalformed, env.Type, err)
	}
	if val, ok := v.(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrMalformed, env.Type, err)
		}
	}
	return nil
}
