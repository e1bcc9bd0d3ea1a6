package auth

import (
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(h, "horse") {
		t.Fatalf("hash %q", h)
	}
	h2, _ := HashPassword("correct horse battery")
	if h == h2 {
		t.Error("two hashes of a password are equal: no salt")
	}
	for _, c := range []struct {
		hash, pw string
		ok       bool
	}{
		{h, "correct horse battery", true},
		{h, "correct horse batterY", false},
		{h, "", false},
		{dummyHash, "anything at all", false},
	} {
		ok, err := CheckPassword(c.hash, c.pw)
		if err != nil || ok != c.ok {
			t.Errorf("check %q = %v %v, want %v", c.pw, ok, err, c.ok)
		}
	}
	for _, bad := range []string{"", "$2a$10$bcrypt", "$argon2id$v=19$m=0,t=1,p=1$c2FsdA$a2V5", "$argon2id$v=19$m=9999999,t=1,p=1$c2FsdA$a2V5"} {
		if _, err := CheckPassword(bad, "x"); err == nil {
			t.Errorf("hash %q accepted", bad)
		}
	}
	if _, err := HashPassword("short"); err != ErrWeakPassword {
		t.Errorf("short password: %v", err)
	}
}

func TestRoles(t *testing.T) {
	for _, c := range []struct {
		have, need Role
		ok         bool
	}{
		{Admin, Operator, true}, {Operator, Operator, true}, {Viewer, Operator, false}, {Operator, Admin, false},
		{Viewer, Viewer, true}, {Role("root"), Viewer, false}, {"", Viewer, false},
	} {
		if got := c.have.Allows(c.need); got != c.ok {
			t.Errorf("%q allows %q = %v", c.have, c.need, got)
		}
	}
}
