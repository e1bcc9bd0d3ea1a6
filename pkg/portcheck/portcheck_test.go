package portcheck

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestFree(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	_, tcpPort, _ := net.SplitHostPort(tcp.Addr().String())
	_, udpPort, _ := net.SplitHostPort(udp.LocalAddr().String())
	for _, tc := range []struct {
		name, network, addr string
		inUse               bool
		wantErr             string // "" = free
	}{
		{"taken tcp", "tcp", tcp.Addr().String(), true, "port " + tcpPort + "/tcp in use"},
		{"taken udp", "udp", udp.LocalAddr().String(), true, "port " + udpPort + "/udp in use"},
		{"port 0", "tcp", "127.0.0.1:0", false, ""},
		{"no port", "tcp", "127.0.0.1", false, "address"},
		{"bad network", "sctp", "127.0.0.1:1", false, "want tcp or udp"},
		{"address not ours", "tcp", "192.0.2.1:8080", false, "bind 192.0.2.1:8080/tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Free(tc.network, tc.addr)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Free: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Free = %v, want %q", err, tc.wantErr)
			}
			if errors.Is(err, ErrInUse) != tc.inUse {
				t.Errorf("errors.Is(%v, ErrInUse) = %v, want %v", err, !tc.inUse, tc.inUse)
			}
		})
	}
	// A released port is free again.
	addr := tcp.Addr().String()
	tcp.Close()
	if err := Free("tcp", addr); err != nil {
		t.Errorf("released port: %v", err)
	}
}

func TestPickTCPIsBindableAndBelowTheEphemeralRange(t *testing.T) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			low, _ = strconv.Atoi(f[0])
		}
	}
	for range 20 {
		addr, err := PickTCP()
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("picked %s, cannot bind it: %v", addr, err)
		}
		ln.Close()
		_, port, _ := net.SplitHostPort(addr)
		if n, _ := strconv.Atoi(port); n < 1024 || n >= low {
			t.Errorf("picked %s: want a port in 1024..%d, below the ephemeral range", addr, low-1)
		}
	}
}
