package servicemain

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/streams"
)

// drainWait bounds the wait for a drained connection to close; nats.go
// closes it itself after its own drain timeout (30s).
const drainWait = 40 * time.Second

// natsConn is the service's NATS connection.
type natsConn struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	closed chan struct{}
}

// connectNATS connects (reconnecting forever once connected) and
// provisions the streams, consumers and KV buckets with c.Streams.
func connectNATS(ctx context.Context, c Common, name string) (*natsConn, error) {
	closed := make(chan struct{})
	// The URL is not quoted in errors: it may hold credentials.
	nc, err := nats.Connect(c.NATSURL, nats.Name(name), nats.MaxReconnects(-1),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		return nil, fmt.Errorf("connect to nats: %w", err)
	}
	conn := &natsConn{nc: nc, closed: closed}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	conn.js = js
	pctx, cancel := context.WithTimeout(ctx, provisionTimeout)
	err = streams.Provision(pctx, js, c.Streams)
	cancel()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("provision streams: %w", err)
	}
	return conn, nil
}

// check is the nats health check.
func (c *natsConn) check(context.Context) error {
	if !c.nc.IsConnected() {
		return fmt.Errorf("nats %s", c.nc.Status())
	}
	return nil
}

// drain flushes what is still buffered and closes the connection, waiting
// for it so that nothing published is lost at exit.
func (c *natsConn) drain(log zerolog.Logger) {
	if err := c.nc.Drain(); err != nil {
		c.nc.Close()
		return
	}
	select {
	case <-c.closed:
	case <-time.After(drainWait):
		log.Warn().Msg("nats connection not closed after drain; closing")
		c.nc.Close()
	}
}
