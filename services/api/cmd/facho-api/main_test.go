package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/facho-olt/facho/pkg/secret"
)

func TestRunCheckConfig(t *testing.T) {
	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	const token = "a-token-of-24-characters"
	base := map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:1/db", "FACHO_SECRET_KEY": key, "FACHO_API_TOKENS": token}
	without := func(drop string, extra ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			if k != drop {
				m[k] = v
			}
		}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	for _, c := range []struct {
		name  string
		flags []string
		env   map[string]string
		fails string // part of the error; empty when the configuration is ok
	}{
		{name: "environment", env: base},
		{name: "tokens and address as flags", flags: []string{"-tokens", " x-token-of-24-characters , " + token, "-addr", "127.0.0.1:0"}, env: without("FACHO_API_TOKENS")},
		{name: "no static token (users log in)", env: without("FACHO_API_TOKENS")},
		{name: "short token", env: without("", "FACHO_API_TOKENS", "short"), fails: "shorter than 16"},
		{name: "no secret key", env: without("FACHO_SECRET_KEY"), fails: "FACHO_SECRET_KEY"},
		{name: "no database", env: without("DATABASE_URL"), fails: "DATABASE_URL is required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"facho-api", "-check-config"}, c.flags...)
			err := run(context.Background(), args, func(k string) string { return c.env[k] }, &stdout, &stderr)
			if c.fails == "" {
				if err != nil || stdout.String() != "configuration ok\n" {
					t.Fatalf("run = %v, stdout %q: want configuration ok", err, stdout.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.fails) {
				t.Fatalf("run = %v, want an error saying %q", err, c.fails)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), token) {
				t.Fatalf("error %q leaks a secret", err)
			}
		})
	}
}

// -h lists the flags without the tokens of the environment as a default.
func TestHelpHidesTokens(t *testing.T) {
	const token = "a-token-of-24-characters"
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"facho-api", "-h"}, func(k string) string {
		if k == "FACHO_API_TOKENS" {
			return token
		}
		return ""
	}, &stdout, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -h = %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(stderr.String(), "-tokens") || strings.Contains(stderr.String(), token) {
		t.Fatalf("help:\n%s", stderr.String())
	}
}
