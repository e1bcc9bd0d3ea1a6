package projection

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/facho-olt/facho/streams"
)

// DecodeOn is streams.DecodeOn in one pass over the message: the envelope
// and its data are parsed together (streams.DecodeOn parses the envelope,
// then the data again, each after a validity scan of its own), for a
// rebuild's batch forms where decoding is most of the CPU. What it
// accepts and refuses is what streams.DecodeOn accepts and refuses (every
// refusal is streams.ErrMalformed): an envelope without type, version or
// data, another type, an unsupported version, invalid data (json.Unmarshal
// into T, then T's Validate) and a subject not the event's. The one input
// they could tell apart, an envelope with two "data" keys, is not one a
// Facho publisher writes.
func DecodeOn[T streams.Event](subject string, b []byte) (streams.Envelope, T, error) {
	return DecodeOnWith[T](nil, subject, b)
}

// onEnvelope is an envelope with its data as T, as DecodeOn parses it.
type onEnvelope[T any] struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	Version int       `json:"version"`
	Time    time.Time `json:"time"`
	Source  string    `json:"source"`
	// A pointer: absent (or null) data is told from empty data.
	Data *T `json:"data"`
}

// DecodeOnWith is DecodeOn with the plans of d (nil: encoding/json alone):
// a message in the subset d's plans decode (Decoders) is parsed without
// encoding/json, which parses the others; either way it is accepted or
// refused as DecodeOn does, with the same payload.
func DecodeOnWith[T streams.Event](d *Decoders, subject string, b []byte) (streams.Envelope, T, error) {
	var e onEnvelope[T]
	var err error
	if d == nil || !d.decodeFast(b, reflect.ValueOf(&e).Elem(), false, nil) {
		e = onEnvelope[T]{}
		err = json.Unmarshal(b, &e)
	}
	env, payload, err := checkOn(d, subject, b, &e, err)
	return env, *payload, err
}

// DecodeOnReused is DecodeOnWith into memory d keeps for T, for a batch
// form that reads a few fields of each event and keeps none of its
// memory: the payload's slices, maps and pointers are the previous
// payload's, written over, and a string equal to the one there is kept,
// so an event like the one before it (most of a stream) allocates next to
// nothing; a field of the payload holding an object or an array with the
// bytes it had in the previous event is not decoded again (rawMemo). The
// payload is valid until the next DecodeOnReused of T on d (the strings
// in it stay valid) and must not be modified. What it accepts and
// refuses, and the payload's value, are DecodeOnWith's.
func DecodeOnReused[T streams.Event](d *Decoders, subject string, b []byte) (streams.Envelope, *T, error) {
	r := reused[T](d)
	var err error
	if !d.decodeFast(b, reflect.ValueOf(&r.env).Elem(), true, &r.memo) {
		r.env = onEnvelope[T]{} // encoding/json decodes into what it is given
		err = json.Unmarshal(b, &r.env)
	}
	return checkOn(d, subject, b, &r.env, err)
}

// reusedOn is DecodeOnReused's memory for T: the envelope decoded last and
// the payload's rawMemo.
type reusedOn[T any] struct {
	env  onEnvelope[T]
	memo rawMemo
}

// reused is d's reusedOn of T.
func reused[T any](d *Decoders) *reusedOn[T] {
	t := reflect.TypeFor[T]()
	r, _ := d.reused[t].(*reusedOn[T])
	if r == nil {
		r = &reusedOn[T]{memo: newRawMemo(d.plan(t))}
		d.reused[t] = r
	}
	return r
}

// checkOn is the rest of DecodeOn once the message is parsed into e (err:
// the parse error; d: the plans, nil: none). The payload is e's data (a
// zero one when e has none).
func checkOn[T streams.Event](d *Decoders, subject string, b []byte, e *onEnvelope[T], err error) (streams.Envelope, *T, error) {
	payload := e.Data
	if payload == nil {
		payload = new(T)
	}
	env := streams.Envelope{ID: e.ID, Type: e.Type, Version: e.Version, Time: e.Time, Source: e.Source}
	switch {
	case err != nil:
		return env, payload, fmt.Errorf("%w: %s: %v", streams.ErrMalformed, (*payload).EventType(), err)
	case e.Type == "" || e.Version < 1 || e.Data == nil:
		if e.Data == nil && e.Type == (*payload).EventType() && e.Version >= 1 && hasNullData(b) {
			// "data": null: streams.DecodeOn takes it as empty data,
			// which T's Validate judges.
			break
		}
		return env, payload, fmt.Errorf("%w: envelope lacks type, version or data", streams.ErrMalformed)
	case e.Type != (*payload).EventType():
		return env, payload, fmt.Errorf("%w: type %q, want %q", streams.ErrMalformed, e.Type, (*payload).EventType())
	}
	if want, min := streams.VersionOf(asEvent(payload)), streams.MinVersionOf(asEvent(payload)); e.Version < min || e.Version > want {
		return env, payload, fmt.Errorf("%w: %s version %d not supported (want %d to %d)", streams.ErrMalformed, e.Type, e.Version, min, want)
	}
	if v, ok := any(payload).(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return env, payload, fmt.Errorf("%w: %s: %v", streams.ErrMalformed, e.Type, err)
		}
	}
	if d != nil {
		// CheckSubjectOf, its payload fields found once per type.
		pv := reflect.ValueOf(payload).Elem()
		err = streams.CheckSubjectWith(subject, env, func(name string) (string, bool) { return d.payloadField(pv, name) })
	} else {
		err = streams.CheckSubjectOf(subject, env, *payload)
	}
	if err != nil {
		return env, payload, err
	}
	return env, payload, nil
}

// asEvent is *p as a streams.Event, without the copy of *p boxing a T
// makes (a NodeDue is about 600 bytes).
func asEvent[T streams.Event](p *T) streams.Event {
	if e, ok := any(p).(streams.Event); ok {
		return e
	}
	return *p
}

// hasNullData reports whether the envelope b (valid JSON) has a "data"
// key whose value is null (any spelling json.Unmarshal matches).
func hasNullData(b []byte) bool {
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) != nil {
		return false
	}
	found := false
	for k, v := range keys {
		if strings.EqualFold(k, "data") {
			found = true
			if string(v) != "null" {
				return false
			}
		}
	}
	return found
}
