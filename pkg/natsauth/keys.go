package natsauth

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nkeys"
)

// SeedFile is where identity name's seed lives in a keys folder
// (integrator:<name> in integrator-<name>.nk).
func SeedFile(dir, name string) string {
	return filepath.Join(dir, strings.ReplaceAll(name, ":", "-")+".nk")
}

// Keys are the public nkeys of the identities, by name.
type Keys map[string]string

// EnsureKeys makes sure dir holds a user seed for every identity of Table
// (<name>.nk, mode 0600, in a 0700 folder): existing seeds are kept, missing
// ones generated. It returns the public keys.
func EnsureKeys(dir string) (Keys, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("nats keys folder: %w", err)
	}
	keys := Keys{}
	for _, name := range Names() {
		pub, err := ensureSeed(SeedFile(dir, name))
		if err != nil {
			return nil, err
		}
		keys[name] = pub
	}
	return keys, nil
}

// ensureSeed returns the public key of the seed at path, generating the
// seed when there is none.
func ensureSeed(path string) (string, error) {
	pub, err := PublicKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		pub, err = writeSeed(path)
	}
	return pub, err
}

// writeSeed creates a new user seed at path (never over an existing file)
// and returns its public key.
func writeSeed(path string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("create nkey %s: %w", path, err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return "", fmt.Errorf("create nkey %s: %w", path, err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("create nkey %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write nkey seed: %w", err)
	}
	_, err = f.Write(append(seed, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write nkey seed %s: %w", path, err)
	}
	return pub, nil
}

// PublicKey reads the user seed at path and returns its public key. The
// file must not be readable by group or others. Errors name the file,
// never its content.
func PublicKey(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("nkey seed file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("nkey seed file %s: readable by group or others (mode %04o): chmod 600", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("nkey seed file: %w", err)
	}
	defer wipe(b)
	kp, err := nkeys.ParseDecoratedNKey(bytes.TrimSpace(b))
	if err != nil {
		return "", fmt.Errorf("nkey seed file %s: no nkey seed in it", path)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("nkey seed file %s: %w", path, err)
	}
	if !nkeys.IsValidPublicUserKey(pub) {
		return "", fmt.Errorf("nkey seed file %s: not a user seed (want one starting with SU)", path)
	}
	return pub, nil
}

func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}
