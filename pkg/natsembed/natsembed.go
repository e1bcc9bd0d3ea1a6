// Package natsembed runs a NATS server with JetStream inside the process,
// for the one-command local run and for tests.
package natsembed

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/facho-olt/facho/pkg/portcheck"
)

// Config of the embedded server.
type Config struct {
	Host string // default 127.0.0.1
	// Port of the client listener; -1 picks a free one. The default is
	// 14222, not 4222, so it never collides with a system nats-server.
	Port     int
	StoreDir string // JetStream storage; required
	// ServerName identifies the server in logs.
	ServerName string
	// Users, when not empty, are the only clients accepted (nkeys with
	// their permissions, see pkg/natsauth): anonymous connections are
	// refused.
	Users []*server.NkeyUser
	// TLS, when not nil, serves clients over TLS (with
	// ClientAuth: tls.RequireAndVerifyClientCert, clients need
	// certificates too).
	TLS *tls.Config
}

// DefaultPort is the embedded server's client port in the local run.
const DefaultPort = 14222

// Server is a running embedded server.
type Server struct {
	srv *server.Server
}

// Start starts the server and waits until it accepts clients.
func Start(cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("start embedded nats: store dir is required")
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.ServerName == "" {
		cfg.ServerName = "facho-embedded"
	}
	opts := &server.Options{
		ServerName: cfg.ServerName,
		Host:       cfg.Host,
		Port:       cfg.Port,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoLog:      true,
		NoSigs:     true,
		Nkeys:      cfg.Users,
	}
	if cfg.TLS != nil {
		opts.TLS = true
		opts.TLSConfig = cfg.TLS
		opts.TLSVerify = cfg.TLS.ClientAuth == tls.RequireAndVerifyClientCert
		opts.TLSTimeout = 2
	}
	// A taken port would only show as "not ready" after the wait below.
	if cfg.Port > 0 {
		if err := portcheck.Free("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))); err != nil {
			if errors.Is(err, portcheck.ErrInUse) {
				return nil, fmt.Errorf("embedded nats: port %d in use", cfg.Port)
			}
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start embedded nats: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("start embedded nats on %s: not ready after 10s", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	}
	return &Server{srv: srv}, nil
}

// URL is the client URL.
func (s *Server) URL() string { return s.srv.ClientURL() }

// Shutdown stops the server and waits for it.
func (s *Server) Shutdown() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}
