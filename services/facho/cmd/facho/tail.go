package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/facho-olt/facho/pkg/replay"
)

func runTail(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tail", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f replay.TailFilter
	fs.StringVar(&f.OLT, "olt", "", "only this OLT id")
	fs.StringVar(&f.Kind, "kind", "", "only this kind: onu, exec, notify, an ONU change (discovered, status, updated), a phase (started, succeeded, failed, skipped, interrupted) or a notification kind")
	asJSON := fs.Bool("json", false, "JSON lines instead of readable lines")
	nf := addNATSFlags(fs, getenv)
	if ok, err := parseFlags(fs, args); !ok {
		return err
	}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("tail: %w", err)
	}
	nc, js, err := nf.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	color := !*asJSON && isTerminal(stdout)
	enc := json.NewEncoder(stdout)
	// Ctrl-C ends ctx: Tail returns nil.
	return replay.Tail(ctx, js, f, nil, func(ev replay.TailEvent) error {
		if *asJSON {
			return enc.Encode(ev)
		}
		_, err := io.WriteString(stdout, tailLine(ev, color)+"\n")
		return err
	})
}

// tailLine is one readable line: time, class, OLT, kind, summary; colored
// by kind on a terminal.
func tailLine(ev replay.TailEvent, color bool) string {
	kind := fmt.Sprintf("%-11s", ev.Kind)
	if color {
		if c := kindColor(ev.Kind); c != "" {
			kind = c + kind + "\x1b[0m"
		}
	}
	return fmt.Sprintf("%s %-6s %-12s %s %s", ev.Time.Format("15:04:05.000"), ev.Class, ev.OLT, kind, ev.Summary)
}

func kindColor(kind string) string {
	switch kind {
	case "failed", "interrupted", "quota_violation", "olt_disabled", "repeated_failures":
		return "\x1b[31m" // red
	case "succeeded", "discovered":
		return "\x1b[32m" // green
	case "status", "skipped":
		return "\x1b[33m" // yellow
	}
	return ""
}
