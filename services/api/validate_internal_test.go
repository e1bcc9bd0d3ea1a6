package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/facho-olt/facho/streams"
)

func TestCheckIP(t *testing.T) {
	for _, tc := range []struct {
		ip  string
		ok  bool
		why string // part of the message when refused
	}{
		{"10.0.0.1", true, ""},
		{"127.0.0.1", true, ""}, // the simulator listens there
		{"192.168.1.255", true, ""},
		{"2001:db8::1", true, ""},
		{"::1", true, ""},
		{"::ffff:10.0.0.1", true, ""},
		{"0.0.0.0", false, "unspecified"},
		{"0.1.2.3", false, "unspecified"},
		{"::", false, "unspecified"},
		{"::ffff:0.0.0.0", false, "unspecified"},
		{"255.255.255.255", false, "broadcast"},
		{"::ffff:255.255.255.255", false, "broadcast"},
		{"224.0.0.1", false, "multicast"},
		{"239.255.255.250", false, "multicast"},
		{"ff02::1", false, "multicast"},
		{"fe80::1%eth0", false, "IPv4 or IPv6"},
		{"10.0.0.300", false, "IPv4 or IPv6"},
		{"olt.example", false, "IPv4 or IPv6"},
		{"", false, "IPv4 or IPv6"},
	} {
		err := checkIP("ip", tc.ip)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%q refused: %s", tc.ip, err.Msg)
		case !tc.ok && err == nil:
			t.Errorf("%q accepted", tc.ip)
		case !tc.ok && (err.Field != "ip" || !strings.Contains(err.Msg, tc.why)):
			t.Errorf("%q: field %q message %q, want field ip and %q", tc.ip, err.Field, err.Msg, tc.why)
		}
	}
}

func TestCheckOID(t *testing.T) {
	arcs := func(n int, arc string) string {
		parts := []string{"1", "3"}
		for len(parts) < n {
			parts = append(parts, arc)
		}
		return strings.Join(parts, ".")
	}
	for _, tc := range []struct {
		name, oid string
		ok        bool
		why       string
	}{
		{"huawei", "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", true, ""},
		{"leading dot", ".1.3.6.1.2.1.1.1", true, ""},
		{"two arcs", "1.3", true, ""},
		{"joint-iso 2.999", "2.999.1", true, ""},
		{"128 sub-identifiers", arcs(128, "1"), true, ""},
		{"129 sub-identifiers", arcs(129, "1"), false, "at most 128"},
		{"10000 sub-identifiers", arcs(10000, "1"), false, "128"},
		{"arc 2^32-1", "1.3.6.4294967295", true, ""},
		{"arc 2^32", "1.3.6.4294967296", false, "exceeds 4294967295"},
		{"arc 2^64", "1.3.6.18446744073709551616", false, "exceeds"},
		{"one arc", "1", false, "at least 2"},
		{"empty", "", false, "at least 2"},
		{"empty arc", "1.3..6", false, "empty sub-identifier at position 3"},
		{"trailing dot", "1.3.6.", false, "empty"},
		{"letters", "1.3.6.x", false, "not a number"},
		{"sign", "1.3.+6", false, "not a number"},
		{"leading zero", "1.3.06.1", false, "leading zero"},
		{"first arc 3", "3.1", false, "start with 0, 1 or 2"},
		{"second arc 40 under 1", "1.40.1", false, "0..39"},
	} {
		err := checkOID("oid", tc.oid)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: refused: %s", tc.name, err.Msg)
		case !tc.ok && err == nil:
			t.Errorf("%s: accepted", tc.name)
		case !tc.ok && (err.Field != "oid" || !strings.Contains(err.Msg, tc.why)):
			t.Errorf("%s: field %q message %q, want field oid and %q", tc.name, err.Field, err.Msg, tc.why)
		}
	}
}

func TestCheckText(t *testing.T) {
	for _, tc := range []struct {
		name, v   string
		multiline bool
		ok        bool
		why       string
	}{
		{"plain", "OLT Centro 1", false, true, ""},
		{"accents and emoji", "Núcleo São Paulo 📡", false, true, ""},
		{"NUL", "olt\x00a", false, false, "U+0000 at character 4"},
		{"escape", "\x1b[31mred", false, false, "U+001B"},
		{"DEL", "a\x7f", false, false, "U+007F"},
		{"C1 control", "a\u0085", false, false, "U+0085"},
		{"newline in a name", "a\nb", false, false, "U+000A"},
		{"newline in a description", "line 1\nline 2\ttab", true, true, ""},
		{"NUL in a description", "a\x00", true, false, "U+0000"},
		{"bidi override", "abc\u202Egpj.exe", false, false, "U+202E"},
		{"invalid UTF-8", "a\xffb", true, false, "not valid UTF-8"},
		{"replacement character", "a\uFFFDb", true, false, "not valid UTF-8"},
		{"200 characters", strings.Repeat("ñ", 200), false, true, ""},
		{"201 characters", strings.Repeat("ñ", 201), false, false, "longer than 200"},
	} {
		max := maxNameRunes
		err := checkText("name", tc.v, max, tc.multiline)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: refused: %s", tc.name, err.Msg)
		case !tc.ok && err == nil:
			t.Errorf("%s: accepted", tc.name)
		case !tc.ok && (err.Field != "name" || !strings.Contains(err.Msg, tc.why)):
			t.Errorf("%s: field %q message %q, want field name and %q", tc.name, err.Field, err.Msg, tc.why)
		}
	}
}

func TestCheckDecoder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		d     streams.Decoder
		field string // "" = valid
	}{
		{"string", streams.Decoder{Kind: "string"}, ""},
		{"enum", streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}, ""},
		{"unknown kind", streams.Decoder{Kind: "rot13"}, "decoder"},
		{"NUL in an enum label", streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ON\x00"}}, "decoder.enum"},
		{"control in an enum key", streams.Decoder{Kind: "enum", Enum: map[string]string{"\x01": "ON"}}, "decoder.enum"},
		{"long enum label", streams.Decoder{Kind: "enum", Enum: map[string]string{"1": strings.Repeat("x", 201)}}, "decoder.enum"},
	} {
		err := checkDecoder("decoder", tc.d)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: refused: %s", tc.name, err.Msg)
		case tc.field != "" && err == nil:
			t.Errorf("%s: accepted", tc.name)
		case tc.field != "" && err.Field != tc.field:
			t.Errorf("%s: field %q (%s), want %q", tc.name, err.Field, err.Msg, tc.field)
		}
	}
}

func TestDecodeStrictMessages(t *testing.T) {
	type inner struct {
		Scale float64 `json:"scale"`
	}
	type body struct {
		Name    string   `json:"name"`
		Port    *int     `json:"port"`
		Enabled *bool    `json:"enabled"`
		IDs     []string `json:"ids"`
		Inner   inner    `json:"inner"`
	}
	for _, tc := range []struct {
		name, body string
		status     int
		field      string
		msg        string // part of the message
	}{
		{"ok", `{"name":"a","port":161}`, 0, "", ""},
		{"string for a number", `{"port":"161"}`, 400, "port", "port: want a whole number, got a string"},
		{"fraction for a whole number", `{"port":1.5}`, 400, "port", "want a whole number, got the number 1.5"},
		{"huge number", `{"port":1e30}`, 400, "port", "want a whole number"},
		{"number for a string", `{"name":5}`, 400, "name", "name: want a string, got a number"},
		{"string for a bool", `{"enabled":"yes"}`, 400, "enabled", "want true or false, got a string"},
		{"object for a list", `{"ids":{}}`, 400, "ids", "want a list, got an object"},
		{"number in a list", `{"ids":[1]}`, 400, "ids", "want a string"},
		{"nested field", `{"inner":{"scale":"x"}}`, 400, "inner.scale", "inner.scale: want a number, got a string"},
		{"list for the body", `[1,2]`, 400, "", "body must be a JSON object, not a list"},
		{"unknown field", `{"colour":"red"}`, 400, "colour", `unknown field "colour"`},
		{"syntax error", `{"name":}`, 400, "", "malformed JSON at byte"},
		{"truncated", `{"name":"a"`, 400, "", "ends too early"},
		{"empty", ``, 400, "", "empty body"},
		{"two objects", `{}{}`, 400, "", "single JSON object"},
		{"invalid UTF-8 in a value", "{\"name\":\"a\xffb\"}", 400, "name", "name is not valid UTF-8"},
		{"invalid UTF-8 outside an object", "\"a\xff\"", 400, "", "body is not valid UTF-8"},
		{"too large", `{"name":"` + strings.Repeat("a", 2000) + `"}`, 413, "", "larger than 1024 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v body
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			err := decodeStrict(r, 1024, &v)
			if tc.status == 0 {
				if err != nil {
					t.Fatalf("refused: %s", err.Msg)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", v)
			}
			if err.Status != tc.status || err.Field != tc.field || !strings.Contains(err.Msg, tc.msg) {
				t.Errorf("got %d field %q %q, want %d field %q %q", err.Status, err.Field, err.Msg, tc.status, tc.field, tc.msg)
			}
			// Never a Go type or package name.
			for _, leak := range []string{"Go ", "int", "float64", "bool", "string]", "api.", "struct", "*"} {
				if strings.Contains(err.Msg, leak) && !strings.Contains(tc.msg, leak) {
					t.Errorf("message %q shows %q", err.Msg, leak)
				}
			}
		})
	}
}

// TestJSONErrorNeverShowsGoTypes feeds encoding/json's own errors.
func TestJSONErrorNeverShowsGoTypes(t *testing.T) {
	var v struct {
		Port int `json:"port"`
	}
	err := json.Unmarshal([]byte(`{"port":"x"}`), &v)
	if err == nil || !strings.Contains(err.Error(), "Go struct field") {
		t.Fatalf("encoding/json no longer names Go types (%v): this test needs another example", err)
	}
	if got := jsonError(err); strings.Contains(got.Msg, "Go") || strings.Contains(got.Msg, "int") {
		t.Errorf("jsonError(%v) = %q", err, got.Msg)
	}
	if got := jsonError(errors.New("json: cannot unmarshal into Go value of type api.thing")); strings.Contains(got.Msg, "Go") {
		t.Errorf("unknown decode error shown as %q", got.Msg)
	}
}
