// Package portcheck tells, before a server starts, whether its port is
// taken, so the error names the port ("embedded nats: port 14222 in use")
// instead of a timeout further on.
package portcheck

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
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

// PickTCP returns 127.0.0.1:PORT with a port no socket holds now, for a
// child process to listen on. It picks below the kernel's ephemeral range
// (ip_local_port_range): a port the kernel hands out ("127.0.0.1:0") is
// also what it gives the next outgoing connection, which can then hold it
// when the child binds ("address already in use" for as long as that
// connection lives). It falls back to a kernel-chosen port when none is
// free below the range.
func PickTCP() (string, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				low = n
			}
		}
	}
	const floor = 1024
	for range 200 {
		port := floor + rand.IntN(low-floor)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if Free("tcp", addr) == nil {
			return addr, nil
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("pick a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
