// Command facho-api serves Facho's HTTP JSON API: configuration that
// becomes events, and queries over the read models.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/facho-olt/facho/pkg/servicemain"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/services/api"
	"github.com/facho-olt/facho/services/api/auth"
)

func main() { servicemain.Main("facho-api", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg api.Config
	var proxies string // FACHO_API_TRUSTED_PROXIES, parsed by Check
	return servicemain.Binary{
		Name:     "api",
		HTTPAddr: "127.0.0.1:9105",
		// The API reads the read models: migrating at start makes sure their
		// schema exists even when it starts before the projector.
		Database:  servicemain.RequireDatabase,
		SecretKey: true,
		Flags: func(fs *flag.FlagSet, env *servicemain.Env, _ *servicemain.Common) {
			fs.StringVar(&cfg.Addr, "addr", env.String("FACHO_API_ADDR", "127.0.0.1:8080"), "API listen address (FACHO_API_ADDR)")
			fs.StringVar(&cfg.ProfilesDir, "profiles-dir", env.String("FACHO_PROFILES_DIR", ""), "folder of vendor profiles added to the built-in ones (FACHO_PROFILES_DIR)")
			fs.IntVar(&cfg.Throttle.LoginMaxFailures, "login-max-failures", env.Int("FACHO_API_LOGIN_MAX_FAILURES", 5),
				"failed console logins a username may have from one client address within -auth-window; more from that address are answered 429 with Retry-After until the oldest leaves the window (other addresses are not held back); a success clears the count (negative: no limit) (FACHO_API_LOGIN_MAX_FAILURES)")
			fs.IntVar(&cfg.Throttle.LoginMaxFailuresPerAddress, "login-max-failures-per-address", env.Int("FACHO_API_LOGIN_MAX_FAILURES_PER_ADDRESS", 0),
				"failed console logins one client address may make within -auth-window whatever the usernames; 0: the value of -login-max-failures (negative: no limit) (FACHO_API_LOGIN_MAX_FAILURES_PER_ADDRESS)")
			fs.IntVar(&cfg.Throttle.TokenMaxFailures, "token-max-failures", env.Int("FACHO_API_TOKEN_MAX_FAILURES", 20),
				"requests with an unknown bearer token a client IP may make within -auth-window; then its bearer requests are answered 429 (negative: no limit) (FACHO_API_TOKEN_MAX_FAILURES)")
			fs.DurationVar(&cfg.Throttle.Window, "auth-window", env.Duration("FACHO_API_AUTH_WINDOW", 15*time.Minute),
				"sliding window of the failed-login and failed-token counts (FACHO_API_AUTH_WINDOW)")
			fs.IntVar(&cfg.Throttle.MaxKeys, "auth-max-keys", env.Int("FACHO_API_AUTH_MAX_KEYS", 10000),
				"most client IPs and usernames each count remembers, in memory (FACHO_API_AUTH_MAX_KEYS)")
			fs.StringVar(&proxies, "trusted-proxies", env.String("FACHO_API_TRUSTED_PROXIES", ""),
				"comma-separated addresses or CIDRs of reverse proxies whose X-Forwarded-For names the client; empty: the client is the TCP peer (FACHO_API_TRUSTED_PROXIES)")
			fs.DurationVar(&cfg.MaxSilence, "max-silence", env.Duration("FACHO_API_MAX_SILENCE", 30*24*time.Hour),
				"longest silence of alerts POST /api/v1/silences accepts (FACHO_API_MAX_SILENCE)")
			// A func flag, so that -h never prints the tokens as a default.
			cfg.Tokens = splitTokens(env.String("FACHO_API_TOKENS", ""))
			fs.Func("tokens", "comma-separated bearer tokens (FACHO_API_TOKENS); prefer the environment", func(s string) error {
				cfg.Tokens = splitTokens(s)
				return nil
			})
		},
		Check: func() error {
			var err error
			if cfg.Throttle.TrustedProxies, err = auth.ParsePrefixes(proxies); err != nil {
				return fmt.Errorf("trusted proxies: %w", err)
			}
			return servicemain.CheckConfig(&cfg)()
		},
		Service: func(ctx context.Context, d servicemain.Deps) error {
			return api.Run(ctx, cfg, api.Deps{JS: d.JS, DB: d.DB, Log: d.Log, Registry: d.Registry, Box: d.Box, Ready: func(a net.Addr) {
				d.Log.Info().Str(telemetry.KeyAddr, a.String()).Msg("api listening")
			}})
		},
	}.Run(ctx, args, getenv, stdout, stderr)
}

func splitTokens(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
