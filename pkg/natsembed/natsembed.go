// Package natsembed runs a NATS server with JetStream inside the process,
// for the one-command local run and for tests.
package natsembed

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start embedded nats: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("start embedded nats: not ready after 10s")
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
