package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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
	body := map[string]any{"error": err.Msg}
	if err.Status == http.StatusBadRequest {
		body["field"] = err.Field
	}
	writeJSON(w, err.Status, body)
}

// decodeStrict parses a JSON body into v: unknown fields, trailing data and
// wrong types are 400s naming the field.
func decodeStrict(r *http.Request, limit int64, v any) *apiError {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return badField("", "body must hold a single JSON object")
	}
	return nil
}

func jsonError(err error) *apiError {
	var typeErr *json.UnmarshalTypeError
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &typeErr):
		return badField(typeErr.Field, "%s must be of type %s", typeErr.Field, typeErr.Type.String())
	case errors.As(err, &maxErr):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Msg: "body too large"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return badField(name, "unknown field %q", name)
	case errors.Is(err, io.EOF):
		return badField("", "empty body")
	default:
		return badField("", "malformed JSON: %v", err)
	}
}
