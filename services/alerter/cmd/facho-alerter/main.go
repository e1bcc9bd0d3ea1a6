// Command facho-alerter evaluates the alert rules over Facho's streams and
// sends the alerts to Alertmanager and the webhooks.
package main

import (
	"context"
	"flag"
	"io"
	"math"
	"strconv"

	"github.com/facho-olt/facho/pkg/servicemain"
	"github.com/facho-olt/facho/services/alerter"
)

func main() { servicemain.Main("facho-alerter", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg alerter.Config
	var amURLs string
	var ponGauges bool
	g := &cfg.Rules.Global
	return servicemain.Binary{
		Name:      "alerter",
		HTTPAddr:  "127.0.0.1:9106",
		Database:  servicemain.RequireDatabase,
		SecretKey: true, // opens the sealed webhook secrets
		Flags: func(fs *flag.FlagSet, env *servicemain.Env, _ *servicemain.Common) {
			fs.StringVar(&cfg.RulesFile, "rules", env.String("FACHO_ALERT_RULES", ""), "YAML rules file: defaults, profiles and olts sections (FACHO_ALERT_RULES; default: the shipped thresholds)")
			fs.StringVar(&amURLs, "alertmanager-url", env.String("FACHO_ALERTMANAGER_URL", ""), "Alertmanager base URL(s), comma-separated (FACHO_ALERTMANAGER_URL; default none)")
			fs.DurationVar(&cfg.ResendInterval, "alertmanager-resend", env.Duration("FACHO_ALERTMANAGER_RESEND", 0), "re-send firing alerts to Alertmanager this often (FACHO_ALERTMANAGER_RESEND; default 1m)")
			fs.BoolVar(&ponGauges, "pon-gauges", env.String("FACHO_PON_GAUGES", "true") != "false", "export facho_pon_onus and facho_pon_rx_dbm (FACHO_PON_GAUGES; default true)")
			fs.DurationVar(&cfg.QuotaAlertTTL, "quota-alert-ttl", env.Duration("FACHO_ALERT_QUOTA_TTL", 0), "a quota_violation alert resolves after this (FACHO_ALERT_QUOTA_TTL; default 1h)")
			fs.IntVar(&cfg.Limits.MaxONUs, "max-onus", env.Int("FACHO_ALERT_MAX_ONUS", 0), "ONUs evaluated at most (FACHO_ALERT_MAX_ONUS; default 2000000)")
			fs.IntVar(&cfg.MaxAttempts, "delivery-max-attempts", env.Int("FACHO_ALERT_DELIVERY_MAX_ATTEMPTS", 0), "a delivery fails after this many attempts (default 10)")
			fs.DurationVar(&cfg.Timeout, "delivery-timeout", env.Duration("FACHO_ALERT_DELIVERY_TIMEOUT", 0), "timeout of one delivery request (default 10s)")
			// The globals of the rules, from the environment (the rules
			// file's sections apply on top).
			envF := func(key string) *float64 {
				v := env.String(key, "")
				if v == "" {
					return nil
				}
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					f = math.NaN() // refused by the validation
				}
				return &f
			}
			envI := func(key string) *int {
				if env.String(key, "") == "" {
					return nil
				}
				n := env.Int(key, 0)
				return &n
			}
			g.ONURxLowDBm = envF("FACHO_ALERT_ONU_RX_LOW_DBM")
			g.ONURxHighDBm = envF("FACHO_ALERT_ONU_RX_HIGH_DBM")
			g.OLTRxLowDBm = envF("FACHO_ALERT_OLT_RX_LOW_DBM")
			g.OLTRxHighDBm = envF("FACHO_ALERT_OLT_RX_HIGH_DBM")
			g.HysteresisDB = envF("FACHO_ALERT_HYSTERESIS_DB")
			g.DriftDB = envF("FACHO_ALERT_DRIFT_DB")
			g.FlapChanges = envI("FACHO_ALERT_FLAP_CHANGES")
			g.PONOutageONUs = envI("FACHO_ALERT_PON_OUTAGE_ONUS")
			g.PONOutagePercent = envF("FACHO_ALERT_PON_OUTAGE_PERCENT")
			g.OutageCycles = envI("FACHO_ALERT_OUTAGE_CYCLES")
			if d := env.Duration("FACHO_ALERT_OUTAGE_WINDOW", 0); d != 0 {
				g.OutageWindow = &d
			}
			if d := env.Duration("FACHO_ALERT_FLAP_WINDOW", 0); d != 0 {
				g.FlapWindow = &d
			}
			g.OLTTemperatureHighC = envF("FACHO_ALERT_OLT_TEMPERATURE_HIGH_C")
			if d := env.Duration("FACHO_ALERT_ONU_DOWN_HOLD", -1); d >= 0 {
				g.ONUDownHold = &d
			}
		},
		Check: func() error {
			cfg.AlertmanagerURLs = alerter.ParseURLs(amURLs)
			cfg.PONGaugesOff = !ponGauges
			r, err := alerter.LoadRules(cfg.RulesFile)
			if err != nil {
				return err
			}
			r.Global = cfg.Rules.Global
			cfg.Rules = r
			cfg = cfg.WithDefaults()
			return cfg.Validate()
		},
		Service: func(ctx context.Context, d servicemain.Deps) error {
			return alerter.Run(ctx, cfg, alerter.Deps{JS: d.JS, DB: d.DB, Log: d.Log, Registry: d.Registry, Box: d.Box})
		},
	}.Run(ctx, args, getenv, stdout, stderr)
}
