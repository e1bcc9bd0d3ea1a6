package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/facho-olt/facho/pkg/natsauth"
)

// cmdHelp is the help of one command: how to call it, what it does, and
// examples (in the `facho` form; `go run ./services/facho/cmd/facho` works
// the same from a clone). flagsFrom, when set, are the arguments that make
// the command print its own flags (its flag set's -h); nil: no flags.
type cmdHelp struct {
	usage     string
	about     string
	examples  []string
	flagsFrom []string
}

// helps is the help of every command and subcommand, by command path.
func helps() map[string]cmdHelp {
	return map[string]cmdHelp{
		"dev": {
			usage: "facho dev [flags]",
			about: "Runs the whole system in one process: embedded NATS JetStream, Postgres (DATABASE_URL or a\nprivate cluster in the data folder), every service and a simulated fleet configured as a demo.\nIt writes <data>/dev.json so the other commands run in this folder find it.",
			examples: []string{
				"facho dev",
				"facho dev -olts 10 -shape 1x4x64 -interval 120",
				"facho dev -data /tmp/second -api 127.0.0.1:8090 -nats-port 14223 -pg-port 15442 -metrics-port 9201 -sim-port 16201 -sim-control 127.0.0.1:8171 -trap-addr 127.0.0.1:1172",
				"FACHO_LOG_LEVEL=debug FACHO_LOG_FORMAT=json facho dev 2>dev.log",
			},
			flagsFrom: []string{"dev", "-h"},
		},
		"version": {
			usage:     "facho version [-json]",
			about:     "Prints the version, the git commit and the build date of this binary (stamped by\ndeploy/release, else what the Go toolchain recorded). Every service logs the same at start\nand exports it as the facho_build_info metric.",
			examples:  []string{"facho version", "facho version -json"},
			flagsFrom: []string{"version", "-h"},
		},
		"keygen": {
			usage:    "facho keygen",
			about:    "Prints a new FACHO_SECRET_KEY: base64 of 32 random bytes, the key that seals SNMP\ncommunities and webhook secrets.",
			examples: []string{"FACHO_SECRET_KEY=$(facho keygen)"},
		},
		"streams": {
			usage:    "facho streams provision|catalogue",
			about:    "provision  creates or updates every stream, consumer and KV bucket (idempotent; as admin)\ncatalogue  prints the event catalogue (streams/CATALOGUE.md)",
			examples: []string{"facho streams provision --nats nats://nats-1:4222 --nats-nkey-seed-file /etc/facho/nkeys/admin.nk", "facho streams catalogue > CATALOGUE.md"},
		},
		"streams provision": {
			usage:     "facho streams provision [flags]",
			about:     "Creates or updates every stream, consumer and KV bucket from the stream variables\n(FACHO_STREAM_REPLICAS, the max ages, ...). Idempotent; needs the admin identity on a\nserver with identities.",
			examples:  []string{"facho streams provision --nats nats://nats-1:4222 --nats-nkey-seed-file /etc/facho/nkeys/admin.nk"},
			flagsFrom: []string{"streams", "provision", "-h"},
		},
		"streams catalogue": {
			usage:    "facho streams catalogue",
			about:    "Prints the event catalogue: streams, consumers, subjects, events and their JSON Schemas.",
			examples: []string{"facho streams catalogue | less"},
		},
		"nats": {
			usage:    "facho nats keys DIR",
			about:    "Writes an nkey seed per NATS identity into DIR and the nats-server authorization block\ngenerated from the identities' permissions.\n\nidentities: " + strings.Join(natsauth.Names(), ", "),
			examples: []string{"facho nats keys /etc/facho/nkeys"},
		},
		"nats keys": {
			usage:    "facho nats keys DIR",
			about:    "Writes an nkey seed per NATS identity into DIR (<identity>.nk, mode 0600; existing seeds\nare kept) and DIR/" + AuthConfFile + ", the nats-server authorization block with every\nidentity's permissions (include it from the server config). Give each service its own seed\n(FACHO_NATS_NKEY_SEED_FILE); the admin seed is for facho streams provision and operators.\n\nidentities: " + strings.Join(natsauth.Names(), ", "),
			examples: []string{"facho nats keys /etc/facho/nkeys"},
		},
		"replay": {
			usage:     "facho replay --stream S [--from SEQ|TIME|AGO] [--to SEQ|TIME] [--subject F ...]",
			about:     "Prints a stream's events as JSON lines {stream, seq, subject, time, data}, from --from to\n--to or the stream's last message when it started. In the folder of a running facho dev it\nfinds its NATS URL and observer key by itself.",
			examples:  []string{"facho replay --stream FACHO_EXEC --from 1h --subject 'facho.exec.olt-1.>'", "facho replay --stream FACHO_CONFIG > config.jsonl"},
			flagsFrom: []string{"replay", "-h"},
		},
		"rebuild": {
			usage:     "facho rebuild READ_MODEL [flags]",
			about:     "Rebuilds a read model from the streams into a shadow schema, compares it with the live\ntables and swaps it in, safely while the system runs (--dry-run: report only).\nfacho rebuild onu_history_hourly [--from T] [--to T] recomputes the hourly rollups from\nonu_history (Postgres only), one transaction per day.",
			examples:  []string{"facho rebuild executions --dry-run", "facho rebuild onu_data", "facho rebuild onu_history_hourly --from 720h", "DATABASE_URL=postgres://... facho rebuild quotas --nats nats://nats-1:4222 --nats-nkey-seed-file observer.nk"},
			flagsFrom: []string{"rebuild", "-h"},
		},
		"export": {
			usage:     "facho export onu-data|onu-history|varbinds [flags]",
			about:     "Writes onu_data, onu_history (Postgres) or the raw readings of the varbind stream as CSV or\nparquet, to stdout or --out FILE (written whole or not at all).",
			examples:  []string{"facho export onu-data --format csv --out onus.csv", "facho export onu-history --from 24h --olt olt-1 --format parquet --out history.parquet", "facho export varbinds --from 1h --format parquet --out varbinds.parquet"},
			flagsFrom: []string{"export", "varbinds", "-h"},
		},
		"tail": {
			usage:     "facho tail [--olt X] [--kind K] [--json]",
			about:     "Follows live ONU changes, executions and notifications, one line per event (JSON lines\nwith --json). K: onu, exec, notify, an ONU change (discovered, status, updated), a phase\n(started, succeeded, failed, skipped, interrupted) or a notification kind.",
			examples:  []string{"facho tail", "facho tail --olt olt-1 --kind exec", "facho tail --kind notify --json"},
			flagsFrom: []string{"tail", "-h"},
		},
		"users": {
			usage:    "facho users add NAME [--role admin|operator|viewer] | facho users list",
			about:    "Adds or lists console and API users, in the database of DATABASE_URL. The password comes\nfrom FACHO_USER_PASSWORD or the first line of stdin, never from a flag.\n\nadd flags:\n  --role string   admin, operator or viewer (default viewer)",
			examples: []string{"DATABASE_URL=postgres://... FACHO_USER_PASSWORD='at least 10 chars' facho users add alice --role operator", "DATABASE_URL=postgres://... facho users list"},
		},
		"users add": {
			usage:    "facho users add NAME [--role admin|operator|viewer]",
			about:    "Adds a console and API user to the database of DATABASE_URL. The password (at least 10\ncharacters) comes from FACHO_USER_PASSWORD or the first line of stdin.\n\nflags:\n  --role string   admin, operator or viewer (default viewer)",
			examples: []string{"DATABASE_URL=postgres://... FACHO_USER_PASSWORD='at least 10 chars' facho users add alice --role operator", "echo 'a long password' | DATABASE_URL=postgres://... facho users add bob"},
		},
		"users list": {
			usage:    "facho users list",
			about:    "Lists the users of the database of DATABASE_URL with their roles.",
			examples: []string{"DATABASE_URL=postgres://... facho users list"},
		},
		"keys": {
			usage:     "facho keys rotate [flags]",
			about:     "Re-seals every OLT community (and, with DATABASE_URL, webhook secret) under FACHO_SECRET_KEY,\nopening with FACHO_SECRET_KEY_OLD: a key rotation with no downtime (docs/operations.md).",
			examples:  []string{"FACHO_SECRET_KEY=<new> FACHO_SECRET_KEY_OLD=<old> facho keys rotate --dry-run", "FACHO_SECRET_KEY=<new> FACHO_SECRET_KEY_OLD=<old> facho keys rotate --nats nats://nats-1:4222 --nats-nkey-seed-file admin.nk"},
			flagsFrom: []string{"keys", "rotate", "-h"},
		},
		"keys rotate": {
			usage:     "facho keys rotate [flags]",
			about:     "Re-seals every OLT community (and, with DATABASE_URL, webhook secret) under FACHO_SECRET_KEY,\nopening with FACHO_SECRET_KEY_OLD. Running it again is a no-op.",
			examples:  []string{"FACHO_SECRET_KEY=<new> FACHO_SECRET_KEY_OLD=<old> facho keys rotate --dry-run"},
			flagsFrom: []string{"keys", "rotate", "-h"},
		},
		"bench": {
			usage:     "facho bench [flags]",
			about:     "Measures the whole pipeline as production runs it (service binaries, simulator, JetStream,\nPostgres) against baselines, and prints a table (-json FILE: the same figures).",
			examples:  []string{"facho bench -olts 100 -shape 1x4x256 -cycles 3 -interval 2m -json bench.json"},
			flagsFrom: []string{"bench", "-h"},
		},
		"profiles": {
			usage:    "facho profiles list|show ID|check FILE [HOST[:PORT]]",
			about:    strings.TrimPrefix(profilesUsage, "usage:\n"),
			examples: []string{"facho profiles list", "facho profiles show huawei-ma5800", "FACHO_SNMP_COMMUNITY=secret facho profiles check my-olt.yaml 192.0.2.10:161"},
		},
		"profiles list": {
			usage:     "facho profiles list [--dir DIR]",
			about:     "Lists the vendor profiles: the built-in ones plus those of DIR (FACHO_PROFILES_DIR), then\nthe files of DIR that were not loaded, with their error (then it exits non-zero).",
			examples:  []string{"facho profiles list", "facho profiles list --dir /etc/facho/profiles"},
			flagsFrom: []string{"profiles", "list", "-h"},
		},
		"profiles show": {
			usage:     "facho profiles show ID [--dir DIR]",
			about:     "Prints one vendor profile as JSON.",
			examples:  []string{"facho profiles show zte-1082"},
			flagsFrom: []string{"profiles", "show", "-h"},
		},
		"profiles check": {
			usage:     "facho profiles check FILE [HOST[:PORT]] [--timeout D]",
			about:     "Validates a profile file; given an agent, says whether the profile's rules match it, walks\nevery column and prints the ONUs Facho would store and the varbinds it could not place, and\nwarns on implausible readings (a power outside -50..+10 dBm, a column of zeros or of one\nvalue, a unit float_string ignores) (community from FACHO_SNMP_COMMUNITY, default public).",
			examples:  []string{"facho profiles check my-olt.yaml", "FACHO_SNMP_COMMUNITY=secret facho profiles check my-olt.yaml 192.0.2.10:161"},
			flagsFrom: []string{"profiles", "check", "-h"},
		},
	}
}

// isHelpArg reports whether a is a request for help.
func isHelpArg(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// helpPath returns the command path whose help args ask for ("tail",
// "users add"), and whether they ask for help at all: -h anywhere before a
// "--", or "help COMMAND...".
func helpPath(args []string) (string, bool) {
	want := false
	if len(args) > 0 && args[0] == "help" {
		want, args = true, args[1:]
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if isHelpArg(a) {
			want = true
		}
	}
	if !want || len(args) == 0 || isHelpArg(args[0]) {
		return "", want
	}
	all := helps()
	if len(args) > 1 {
		if _, ok := all[args[0]+" "+args[1]]; ok {
			return args[0] + " " + args[1], true
		}
	}
	return args[0], true
}

// printHelp writes the help of path: usage, what it does, its flags (as
// its own flag set prints them), and examples. An unknown path is an
// error after the list of commands.
func printHelp(ctx context.Context, path string, getenv func(string) string, stdout, stderr io.Writer) error {
	h, ok := helps()[path]
	if !ok {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", path)
	}
	fmt.Fprintf(stdout, "usage: %s\n\n%s\n", h.usage, h.about)
	if h.flagsFrom != nil {
		var buf bytes.Buffer
		// The command's flag set prints its usage on -h and does nothing
		// else; its error, if any, is that -h stopped it.
		_ = dispatch(ctx, h.flagsFrom, getenv, &buf, &buf)
		if flags := flagLines(buf.String()); flags != "" {
			if strings.HasPrefix(flags, "  -") {
				fmt.Fprint(stdout, "\nflags:\n")
			} else {
				fmt.Fprint(stdout, "\n")
			}
			fmt.Fprint(stdout, flags)
		}
	}
	fmt.Fprintf(stdout, "\nexamples:\n")
	for _, e := range h.examples {
		fmt.Fprintf(stdout, "  %s\n", e)
	}
	fmt.Fprintf(stdout, "\nFrom a clone, without the binary: %s %s ...\n", goRunCommand, path)
	return nil
}

// flagLines is what a flag set's usage output says after its usage line
// ("Usage of X:" or a custom "usage: ..."): the flags, and what a custom
// usage adds (read models, environment).
func flagLines(out string) string {
	if strings.HasPrefix(out, "Usage of ") || strings.HasPrefix(out, "usage:") {
		if i := strings.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		} else {
			out = ""
		}
	}
	return strings.TrimLeft(out, "\n")
}
