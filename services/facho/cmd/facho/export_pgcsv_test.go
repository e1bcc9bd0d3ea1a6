package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// pgCSV rewrites Postgres's timestamptz text to RFC 3339 in the time
// columns only and an empty string ("") to an empty cell, whatever the
// chunks COPY sends and whatever quoted commas, quotes and line breaks
// the other fields hold; the header, a NULL (empty) time and a field of
// one quote pass unchanged; fix sees each row's raw fields.
func TestPGCSV(t *testing.T) {
	in := "at,olt_id,note,seen\n" +
		"2026-01-02 03:04:05+00,olt-1,\"a, \"\"b\"\"\nc\",2026-01-02 03:04:05.5+00\n" +
		"2026-01-02 03:04:05.123456+00,\"x,y\",,\n" +
		"infinity,olt-2,2026-01-02 03:04:05+00,2026-12-31 23:59:59.9+00\n" +
		"2026-01-02 03:04:05+00,\"\",\"\"\"\",\n" +
		"2026-01-02 03:04:05+00,olt-3,\"\"\"\"\"\",\"\"\n" +
		"2026-01-02 03:04:05+00,olt-4,\"\n\",\n"
	want := "at,olt_id,note,seen\n" +
		"2026-01-02T03:04:05Z,olt-1,\"a, \"\"b\"\"\nc\",2026-01-02T03:04:05.5Z\n" +
		"2026-01-02T03:04:05.123456Z,\"x,y\",,\n" +
		"infinity,olt-2,2026-01-02 03:04:05+00,2026-12-31T23:59:59.9Z\n" +
		"2026-01-02T03:04:05Z,,\"\"\"\",\n" +
		"2026-01-02T03:04:05Z,olt-3,\"\"\"\"\"\",\n" +
		"2026-01-02T03:04:05Z,olt-4,\"\n\",\n"
	for _, tc := range []struct {
		name   string
		chunks func(string) []string
	}{
		{"one write per row", func(s string) []string {
			// As COPY sends them: the rows above have no line break
			// outside quotes but at their end.
			var rows []string
			quoted := false
			start := 0
			for i := 0; i < len(s); i++ {
				switch {
				case s[i] == '"':
					quoted = !quoted
				case s[i] == '\n' && !quoted:
					rows = append(rows, s[start:i+1])
					start = i + 1
				}
			}
			return rows
		}},
		{"whole", func(s string) []string { return []string{s} }},
		{"bytes", func(s string) []string { return chunks(s, 1) }},
		{"pairs", func(s string) []string { return chunks(s, 2) }},
		{"sevens", func(s string) []string { return chunks(s, 7) }},
		{"64", func(s string) []string { return chunks(s, 64) }},
	} {
		for _, withFix := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s fix %v", tc.name, withFix), func(t *testing.T) {
				var out bytes.Buffer
				rw := newPGCSV(&out, []int{0, 3})
				var olts []string
				if withFix {
					rw.fix = func(f [][]byte) uint64 {
						olts = append(olts, string(csvUnquote(f[1])))
						return 0
					}
				}
				for _, c := range tc.chunks(in) {
					if _, err := rw.Write([]byte(c)); err != nil {
						t.Fatal(err)
					}
				}
				if err := rw.flush(); err != nil {
					t.Fatal(err)
				}
				if out.String() != want {
					t.Errorf("got\n%s\nwant\n%s", out.String(), want)
				}
				if got := strings.Join(olts, "|"); (withFix && got != "olt-1|x,y|olt-2||olt-3|olt-4") || rw.rows != 6 {
					t.Errorf("fix saw %q in %d rows", got, rw.rows)
				}
			})
		}
	}
	// What fix replaces is written in place of the field, whatever its
	// length; the other fields as they were.
	var out bytes.Buffer
	rw := newPGCSV(&out, []int{1})
	rw.fix = func(f [][]byte) uint64 {
		if string(f[0]) != "b" {
			return 0
		}
		f[0], f[1], f[3] = []byte("bb"), []byte("2026-01-02 03:04:06.25+00"), nil
		return 1<<0 | 1<<1 | 1<<3
	}
	for _, r := range []string{"id,at,note,tail\n", "a,2026-01-02 03:04:05+00,\"\",x\n", "b,2026-01-02 03:04:05+00,\"\",x\n", "c,,\",\",x\n"} {
		if _, err := rw.Write([]byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rw.flush(); err != nil {
		t.Fatal(err)
	}
	if want := "id,at,note,tail\na,2026-01-02T03:04:05Z,,x\nbb,2026-01-02T03:04:06.25Z,,\nc,,\",\",x\n"; out.String() != want {
		t.Errorf("fixed rows:\n%s\nwant\n%s", out.String(), want)
	}
	// A COPY cut short is an error, not a shorter file.
	rw = newPGCSV(&bytes.Buffer{}, nil)
	if _, err := rw.Write([]byte("a,b\n1,\"x\n")); err != nil {
		t.Fatal(err)
	}
	if err := rw.flush(); err == nil {
		t.Error("a row cut short was flushed")
	}
}

func chunks(s string, n int) []string {
	var out []string
	for i := 0; i < len(s); i += n {
		out = append(out, s[i:min(i+n, len(s))])
	}
	return out
}

// pgTimeAfter compares Postgres's time text as the times, the fractions
// of any length included, and parses what is not in the usual form.
func TestPGTimeAfter(t *testing.T) {
	for _, tc := range []struct {
		a, b      string
		after, ok bool
	}{
		{"2026-01-02 03:04:06+00", "2026-01-02 03:04:05+00", true, true},
		{"2026-01-02 03:04:05+00", "2026-01-02 03:04:06+00", false, true},
		{"2026-01-02 03:04:05+00", "2026-01-02 03:04:05+00", false, true},
		{"2026-01-02 03:04:05.5+00", "2026-01-02 03:04:05+00", true, true},
		{"2026-01-02 03:04:05+00", "2026-01-02 03:04:05.000001+00", false, true},
		{"2026-01-02 03:04:05.5+00", "2026-01-02 03:04:05.25+00", true, true},
		{"2026-01-02 03:04:05.25+00", "2026-01-02 03:04:05.5+00", false, true},
		{"2026-01-02 03:04:05.50+00", "2026-01-02 03:04:05.5+00", false, true},
		{"2026-12-31 23:59:59.999999+00", "2027-01-01 00:00:00+00", false, true},
		{"2026-01-02 05:04:05+02", "2026-01-02 03:04:04+00", true, true}, // not UTC: parsed
		{"infinity", "2026-01-02 03:04:05+00", false, false},
	} {
		after, ok := pgTimeAfter([]byte(tc.a), []byte(tc.b))
		if after != tc.after || ok != tc.ok {
			t.Errorf("%s after %s: %v %v, want %v %v", tc.a, tc.b, after, ok, tc.after, tc.ok)
		}
	}
}
