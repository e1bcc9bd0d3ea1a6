// Package portcheck tells, before a server starts, whether its port is
// taken, so the error names the port ("embedded nats: port 14222 in use")
// instead of a timeout further on.
package portcheck

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// ErrInUse is wrapped by Free's error when another socket holds the port.
var ErrInUse = errors.New("in use")

// Free checks that addr (host:port) can be bound on network ("tcp" or
// "udp") by binding it and letting it go at once. Port 0 is always free.
// The error wraps ErrInUse when the port is taken, else says why it cannot
// be bound. The port may still be taken between this check and the real
// bind: it makes the common case clear, not the race impossible.
func Free(network, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if port == "0" {
		return nil
	}
	var closeErr error
	switch network {
	case "tcp", "tcp4", "tcp6":
		ln, lerr := net.Listen(network, addr)
		if lerr == nil {
			closeErr = ln.Close()
		}
		err = lerr
	case "udp", "udp4", "udp6":
		pc, lerr := net.ListenPacket(network, addr)
		if lerr == nil {
			closeErr = pc.Close()
		}
		err = lerr
	default:
		return fmt.Errorf("network %q: want tcp or udp", network)
	}
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("port %s/%s %w", port, network, ErrInUse)
	case err != nil:
		return fmt.Errorf("bind %s/%s: %w", addr, network, err)
	}
	return closeErr
}
