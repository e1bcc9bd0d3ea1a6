package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"
)

// apiError is an error the client sees: a status, a message and, for bad
// input, the field at fault.
type apiError struct {
	Status int
	Msg    string
	Field  string
}

func (e *apiError) Error() string { return e.Msg }

func badField(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...), Field: field}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Msg: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusConflict, Msg: fmt.Sprintf(format, args...)}
}

func unavailable(what string) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Msg: what + " unavailable, retry later"}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers {"error": ..., "field": ...}; field is present on 400s
// ("" when the body as a whole is at fault).
func writeError(w http.ResponseWriter, err *apiError) {
	body := errorBody{Error: err.Msg}
	if err.Status == http.StatusBadRequest {
		body.Field = &err.Field
	}
	writeJSON(w, err.Status, body)
}

// decodeStrict parses a JSON body into v: invalid UTF-8, unknown fields,
// trailing data and wrong types are 400s naming the field, in words a
// client understands (never a Go type).
func decodeStrict(r *http.Request, limit int64, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	if err != nil {
		return jsonError(err)
	}
	if !utf8.Valid(body) {
		// encoding/json would silently turn the bad bytes into U+FFFD.
		field := invalidUTF8Field(body)
		if field == "" {
			return badField("", "body is not valid UTF-8")
		}
		return badField(field, "%s is not valid UTF-8", field)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return badField("", "body must hold a single JSON object")
	}
	return nil
}

// invalidUTF8Field names the top-level member of a JSON object whose value
// holds invalid UTF-8, "" when the body is no object or the name itself is
// at fault.
func invalidUTF8Field(body []byte) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return ""
	}
	names := make([]string, 0, len(members))
	for name, raw := range members {
		if !utf8.Valid(raw) && utf8.ValidString(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

func jsonError(err error) *apiError {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return badField("", "body must be a JSON object, not %s", jsonGot(typeErr.Value))
		}
		return badField(typeErr.Field, "%s: want %s, got %s", typeErr.Field, jsonWant(typeErr.Type), jsonGot(typeErr.Value))
	case errors.As(err, &maxErr):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("body larger than %d bytes", maxErr.Limit)}
	case errors.As(err, &syntaxErr):
		return badField("", "malformed JSON at byte %d: %s", syntaxErr.Offset, strings.TrimPrefix(syntaxErr.Error(), "json: "))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return badField(name, "unknown field %q", name)
	case errors.Is(err, io.EOF):
		return badField("", "empty body")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badField("", "malformed JSON: the body ends too early")
	default:
		// Whatever else encoding/json says may name Go types: not shown.
		return badField("", "malformed JSON body")
	}
}

// jsonWant says in JSON terms what a Go type takes.
func jsonWant(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

// jsonGot says what encoding/json found ("string", "number 1.5", ...).
func jsonGot(value string) string {
	switch {
	case value == "string":
		return "a string"
	case value == "number":
		return "a number"
	case strings.HasPrefix(value, "number "):
		return "the number " + strings.TrimPrefix(value, "number ")
	case value == "bool":
		return "true or false"
	case value == "array":
		return "a list"
	case value == "object":
		return "an object"
	}
	return "another kind of value"
}
