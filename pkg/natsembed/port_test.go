package natsembed

import (
	"net"
	"strconv"
	"testing"
)

// A taken client port is named at once, not reported as "not ready" after
// the start-up wait.
func TestStartNamesATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	srv, err := Start(Config{Port: port, StoreDir: t.TempDir()})
	if err == nil {
		srv.Shutdown()
		t.Fatal("started on a taken port")
	}
	if want := "embedded nats: port " + strconv.Itoa(port) + " in use"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}

	// Once the port is released the server starts there.
	ln.Close()
	srv, err = Start(Config{Port: port, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("start on the released port: %v", err)
	}
	srv.Shutdown()
}
