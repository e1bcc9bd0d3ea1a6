// Command facho-api serves Facho's HTTP JSON API: configuration that
// becomes events, and queries over the read models.
package main

import (
	"context"
	"flag"
	"io"
	"net"
	"strings"

	"github.com/facho-olt/facho/pkg/servicemain"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/services/api"
)

func main() { servicemain.Main("facho-api", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg api.Config
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
			// A func flag, so that -h never prints the tokens as a default.
			cfg.Tokens = splitTokens(env.String("FACHO_API_TOKENS", ""))
			fs.Func("tokens", "comma-separated bearer tokens (FACHO_API_TOKENS); prefer the environment", func(s string) error {
				cfg.Tokens = splitTokens(s)
				return nil
			})
		},
		Check: servicemain.CheckConfig(&cfg),
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
