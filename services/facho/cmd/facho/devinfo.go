package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/facho-olt/facho/pkg/natsauth"
)

// devInfoFile is where a running `facho dev` says how to reach it, in its
// data folder, so the stream tools run in that folder (or given -data) find
// its NATS URL, identities' seeds and database by themselves.
const devInfoFile = "dev.json"

// defaultDataDir is facho dev's data folder when -data is not given.
const defaultDataDir = ".facho"

// devInfo is the content of <data>/dev.json. It names files and URLs, never
// a secret itself: the seeds stay in their 0600 files.
type devInfo struct {
	PID         int    `json:"pid"`
	NATSURL     string `json:"nats_url"`
	KeysDir     string `json:"keys_dir"`
	APIURL      string `json:"api_url"`
	DatabaseURL string `json:"database_url"`
}

// seedFile is the seed of a NATS identity of that facho dev.
func (d devInfo) seedFile(identity string) string { return natsauth.SeedFile(d.KeysDir, identity) }

// writeDevInfo writes <dataDir>/dev.json (0600; the database URL may hold
// a password), replacing it whole. Paths are made absolute so the file
// works from anywhere.
func writeDevInfo(dataDir string, d devInfo) error {
	if abs, err := filepath.Abs(d.KeysDir); err == nil {
		d.KeysDir = abs
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", devInfoFile, err)
	}
	path := filepath.Join(dataDir, devInfoFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readDevInfo reads <dataDir>/dev.json; ok is false when there is none.
func readDevInfo(dataDir string) (devInfo, bool, error) {
	path := filepath.Join(dataDir, devInfoFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return devInfo{}, false, nil
	}
	if err != nil {
		return devInfo{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	// Bounded: a dev.json is a few hundred bytes.
	if len(b) > 64<<10 {
		return devInfo{}, false, fmt.Errorf("%s: %d bytes, not a facho dev file", path, len(b))
	}
	var d devInfo
	if err := json.Unmarshal(b, &d); err != nil {
		return devInfo{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	if d.NATSURL == "" {
		return devInfo{}, false, fmt.Errorf("%s: no nats_url", path)
	}
	return d, true, nil
}

// redactAddr drops the credentials of NATS URLs (and anything unparsable), for
// messages that name the address dialled.
func redactAddr(raw string) string {
	var out []string
	for _, one := range strings.Split(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Host == "" {
			out = append(out, "(unparsable URL)")
			continue
		}
		u.User = nil
		out = append(out, u.String())
	}
	return strings.Join(out, ",")
}
