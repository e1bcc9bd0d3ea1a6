package natsauth

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
)

// Environment variables of the client options.
const (
	EnvNkeySeedFile = "FACHO_NATS_NKEY_SEED_FILE"
	EnvCreds        = "FACHO_NATS_CREDS"
	EnvTLSCA        = "FACHO_NATS_TLS_CA"
	EnvTLSCert      = "FACHO_NATS_TLS_CERT"
	EnvTLSKey       = "FACHO_NATS_TLS_KEY"
)

// Client is how a process authenticates to NATS: an nkey seed file or a
// user credentials file (JWT and seed), and TLS. All are file paths; the
// zero value connects anonymously without TLS.
type Client struct {
	NkeySeedFile string
	CredsFile    string
	TLSCA        string // CA bundle verifying the server (default: system roots)
	TLSCert      string // client certificate, for servers that verify clients
	TLSKey       string
}

// RegisterFlags registers -nats-nkey-seed-file, -nats-creds, -nats-tls-ca,
// -nats-tls-cert and -nats-tls-key with their environment fallbacks.
func (c *Client) RegisterFlags(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&c.NkeySeedFile, "nats-nkey-seed-file", getenv(EnvNkeySeedFile), "file holding this service's NATS nkey seed; the seed is never logged ("+EnvNkeySeedFile+")")
	fs.StringVar(&c.CredsFile, "nats-creds", getenv(EnvCreds), "NATS user credentials file (JWT and seed), instead of an nkey seed ("+EnvCreds+")")
	fs.StringVar(&c.TLSCA, "nats-tls-ca", getenv(EnvTLSCA), "CA bundle verifying the NATS server's certificate; enables TLS ("+EnvTLSCA+")")
	fs.StringVar(&c.TLSCert, "nats-tls-cert", getenv(EnvTLSCert), "client certificate for NATS TLS; enables TLS ("+EnvTLSCert+")")
	fs.StringVar(&c.TLSKey, "nats-tls-key", getenv(EnvTLSKey), "key of the client certificate ("+EnvTLSKey+")")
}

// Authenticated reports whether the client connects with an identity.
func (c Client) Authenticated() bool { return c.NkeySeedFile != "" || c.CredsFile != "" }

// TLS reports whether the client asks for TLS.
func (c Client) TLS() bool { return c.TLSCA != "" || c.TLSCert != "" }

// Validate checks the files without connecting and reports every problem
// at once. No error quotes a file's content.
func (c Client) Validate() error {
	var errs []error
	if c.NkeySeedFile != "" && c.CredsFile != "" {
		errs = append(errs, fmt.Errorf("%s and %s are exclusive: give one", EnvNkeySeedFile, EnvCreds))
	}
	if c.NkeySeedFile != "" {
		if _, err := PublicKey(c.NkeySeedFile); err != nil {
			errs = append(errs, err)
		}
	}
	if c.CredsFile != "" {
		if err := checkCreds(c.CredsFile); err != nil {
			errs = append(errs, err)
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, fmt.Errorf("%s and %s go together", EnvTLSCert, EnvTLSKey))
	} else if c.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey); err != nil {
			errs = append(errs, fmt.Errorf("nats tls client certificate: %w", err))
		}
	}
	if c.TLSCA != "" {
		if err := checkCA(c.TLSCA); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkCreds(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("nats credentials file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("nats credentials file %s: readable by group or others (mode %04o): chmod 600", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("nats credentials file: %w", err)
	}
	defer wipe(b)
	if !bytes.Contains(b, []byte("BEGIN NATS USER JWT")) || !bytes.Contains(b, []byte("BEGIN USER NKEY SEED")) {
		return fmt.Errorf("nats credentials file %s: want a user JWT and its nkey seed (nsc generate creds)", path)
	}
	return nil
}

func checkCA(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("nats tls ca: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return fmt.Errorf("nats tls ca %s: no PEM certificate in it", path)
	}
	return nil
}

// Options are the nats.go options of the client. identity names the
// connection's reply-subject prefix (InboxPrefix), which the permission
// table lets that identity subscribe to; empty keeps the default _INBOX.
func (c Client) Options(identity string) ([]nats.Option, error) {
	var opts []nats.Option
	if identity != "" {
		opts = append(opts, nats.CustomInboxPrefix(InboxPrefix(identity)))
	}
	switch {
	case c.NkeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(c.NkeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nats nkey seed file %s: %w", c.NkeySeedFile, err)
		}
		opts = append(opts, opt)
	case c.CredsFile != "":
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	}
	// Either one turns TLS on (a tls:// URL does too, with the system's
	// roots).
	if c.TLSCA != "" {
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	if c.TLSCert != "" {
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	}
	return opts, nil
}
