package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/facho-olt/facho/pkg/buildinfo"
)

// runVersion prints the build of this binary (pkg/buildinfo): one line, or
// a JSON object with -json.
func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("facho version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a JSON object (version, commit, build_date, go_version)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("version: unexpected argument %q", fs.Arg(0))
	}
	info := buildinfo.Get()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(info); err != nil {
			return fmt.Errorf("version: write JSON: %w", err)
		}
		return nil
	}
	_, err := fmt.Fprintln(stdout, info.String())
	return err
}
