package api

import (
	"github.com/facho-olt/facho/pkg/configrules"
	"github.com/facho-olt/facho/streams"
)

// IndexSchemes are the brand index schemes the poller and projector decode.
var IndexSchemes = configrules.IndexSchemes()

// Kinds are the job kinds.
var Kinds = configrules.Kinds()

// The field rules live in package configrules: the consumers that apply
// the configuration events refuse what breaks them too.

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// fieldErr turns a broken configrules rule into a 400 naming its field.
func fieldErr(err error) *apiError {
	if err == nil {
		return nil
	}
	if fe, ok := configrules.AsFieldError(err); ok {
		return badField(fe.Field, "%s", fe.Msg)
	}
	return badField("", "%s", err.Error())
}

// checkOID: see configrules.OID.
func checkOID(field, s string) *apiError { return fieldErr(configrules.OID(field, s)) }

// checkIP: see configrules.IP.
func checkIP(field, s string) *apiError { return fieldErr(configrules.IP(field, s)) }

// checkName: see configrules.Name.
func checkName(field, v string) *apiError { return fieldErr(configrules.Name(field, v)) }

// checkDescription: see configrules.Description.
func checkDescription(field, v string) *apiError { return fieldErr(configrules.Description(field, v)) }

// Text bounds (configrules).
const (
	maxNameRunes        = configrules.MaxNameRunes
	maxDescriptionRunes = configrules.MaxDescriptionRunes
)

// checkText: see configrules.Text.
func checkText(field, v string, max int, multiline bool) *apiError {
	return fieldErr(configrules.Text(field, v, max, multiline))
}

// textProblem: see configrules.TextProblem.
func textProblem(v string, max int, multiline bool) string {
	return configrules.TextProblem(v, max, multiline)
}

// checkDecoder: see configrules.Decoder.
func checkDecoder(field string, d streams.Decoder) *apiError {
	return fieldErr(configrules.Decoder(field, d))
}

// newOrCheckedID returns a fresh id for an empty one, else checks it.
func newOrCheckedID(id string) (string, *apiError) {
	if id == "" {
		return newID(), nil
	}
	return id, checkID("id", id)
}

// checkID validates an id given in a body or path (it becomes a subject
// token).
func checkID(field, v string) *apiError { return fieldErr(configrules.ID(field, v)) }
