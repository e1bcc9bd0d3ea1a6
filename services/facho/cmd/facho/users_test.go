package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/facho-olt/facho/pkg/pgtest"
)

func TestUsersCommand(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	env := func(pw string) func(string) string {
		return func(k string) string {
			switch k {
			case "DATABASE_URL":
				return url
			case "FACHO_USER_PASSWORD":
				return pw
			}
			return ""
		}
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"users", "add", "alice", "--role", "operator"}, env("alice-password-1"), &out, &out); err != nil {
		t.Fatalf("users add: %v (%s)", err, out.String())
	}
	if !strings.Contains(out.String(), "user alice (operator) created") {
		t.Errorf("add said %q", out.String())
	}
	for _, c := range []struct {
		args []string
		pw   string
		fail string
	}{
		{[]string{"users", "add", "alice"}, "alice-password-2", "already exists"},
		{[]string{"users", "add", "bob", "--role", "root"}, "bob-password-1", "role"},
		{[]string{"users", "add", "carol"}, "short", "at least 10"},
		{[]string{"users", "add", "Bad Name"}, "dave-password-1", "username"},
	} {
		err := run(ctx, c.args, env(c.pw), &out, &out)
		if err == nil || !strings.Contains(err.Error(), c.fail) {
			t.Errorf("%v: %v, want an error about %q", c.args, err, c.fail)
		}
	}
	out.Reset()
	if err := run(ctx, []string{"users", "list"}, env(""), &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "alice") || !strings.Contains(out.String(), "operator") || strings.Contains(out.String(), "password") {
		t.Errorf("list:\n%s", out.String())
	}
}
