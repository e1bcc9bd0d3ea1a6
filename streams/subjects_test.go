package streams

import "testing"

func TestOLTOfONUSubject(t *testing.T) {
	for subject, want := range map[string]string{
		SubjectONU("olt-1", ONUStatusChanged): "olt-1",
		SubjectONU("a.b", ONUDiscovered):      "a.b",
		"facho.onu.x":                         "",
		"facho.onu.":                          "",
		SubjectAudit("projector"):             "",
	} {
		if got := OLTOfONUSubject(subject); got != want {
			t.Errorf("OLTOfONUSubject(%q) = %q, want %q", subject, got, want)
		}
	}
}
