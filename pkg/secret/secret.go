// Package secret seals SNMP communities (AES-256-GCM) so that no plaintext
// community reaches Postgres, a stream, a KV bucket or a log line.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

const prefix = "v1:"

// EnvKey is the environment variable holding the base64 32-byte key.
const EnvKey = "FACHO_SECRET_KEY"

// EnvOldKeys holds, during a key rotation, the previous keys
// (comma-separated base64): values sealed with them still open, new ones
// are sealed with FACHO_SECRET_KEY (see `facho keys rotate`).
const EnvOldKeys = "FACHO_SECRET_KEY_OLD"

// Box seals with one key and opens with it or, during a rotation, with
// older keys.
type Box struct {
	aead cipher.AEAD
	old  []cipher.AEAD
}

// WithOldKeys returns a Box sealing with b's key that also opens values
// sealed with the old keys.
func (b *Box) WithOldKeys(old ...[]byte) (*Box, error) {
	out := &Box{aead: b.aead, old: append([]cipher.AEAD(nil), b.old...)}
	for _, k := range old {
		o, err := NewBox(k)
		if err != nil {
			return nil, fmt.Errorf("old %w", err)
		}
		out.old = append(out.old, o.aead)
	}
	return out, nil
}

// BoxFromEnv builds the Box of FACHO_SECRET_KEY and FACHO_SECRET_KEY_OLD.
// Its errors never quote a key.
func BoxFromEnv(getenv func(string) string) (*Box, error) {
	key, err := ParseKey(getenv(EnvKey))
	if err != nil {
		return nil, err
	}
	box, err := NewBox(key)
	if err != nil {
		return nil, err
	}
	var old [][]byte
	for i, s := range strings.Split(getenv(EnvOldKeys), ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		k, err := ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("%s key %d: %w", EnvOldKeys, i+1, err)
		}
		old = append(old, k)
	}
	return box.WithOldKeys(old...)
}

// NewBox builds a Box from a 32-byte key.
func NewBox(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secret key: %d bytes, want 32", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return &Box{aead: aead}, nil
}

// ParseKey decodes a base64 (std or URL) 32-byte key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("secret key: %s is empty", EnvKey)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != 32 {
				return nil, fmt.Errorf("secret key: %d bytes, want 32", len(k))
			}
			return k, nil
		}
	}
	return nil, errors.New("secret key: not base64")
}

// NewKey returns a fresh random key, base64 encoded.
func NewKey() (string, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return "", fmt.Errorf("new secret key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(k), nil
}

// Seal encrypts plaintext; the result is "v1:" + base64(nonce|ciphertext).
func (b *Box) Seal(plaintext string) (string, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	out := b.aead.Seal(nonce, nonce, []byte(plaintext), nil)
	return prefix + base64.StdEncoding.EncodeToString(out), nil
}

// Open decrypts what Seal produced. Errors never contain the plaintext.
func (b *Box) Open(sealed string) (string, error) {
	if !strings.HasPrefix(sealed, prefix) {
		return "", errors.New("open secret: not a sealed value")
	}
	raw, err := base64.StdEncoding.DecodeString(sealed[len(prefix):])
	if err != nil {
		return "", errors.New("open secret: bad encoding")
	}
	ns := b.aead.NonceSize()
	if len(raw) < ns {
		return "", errors.New("open secret: too short")
	}
	pt, err := b.aead.Open(nil, raw[:ns], raw[ns:], nil)
	for _, o := range b.old {
		if err == nil {
			break
		}
		pt, err = o.Open(nil, raw[:ns], raw[ns:], nil)
	}
	if err != nil {
		return "", errors.New("open secret: wrong key or corrupted value")
	}
	return string(pt), nil
}

// SealedWithCurrent reports whether sealed opens with the current key
// (false: an old key's, or not openable).
func (b *Box) SealedWithCurrent(sealed string) bool {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, prefix))
	if !strings.HasPrefix(sealed, prefix) || err != nil || len(raw) < b.aead.NonceSize() {
		return false
	}
	ns := b.aead.NonceSize()
	_, err = b.aead.Open(nil, raw[:ns], raw[ns:], nil)
	return err == nil
}

// Reseal opens sealed (with any key of b) and seals it again with the
// current key.
func (b *Box) Reseal(sealed string) (string, error) {
	pt, err := b.Open(sealed)
	if err != nil {
		return "", err
	}
	return b.Seal(pt)
}
