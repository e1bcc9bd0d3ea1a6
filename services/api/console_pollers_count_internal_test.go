package api

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/streams"
)

// The pollers page counts poller processes as processes and their
// execution slots apart: 2 processes of 11 slots each are "2 poller
// processes" and "22 execution slots", never "22 pollers".
func TestConsolePollersCountsProcesses(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	kv, err := r.s.deps.JS.KeyValue(ctx, streams.BucketPollers)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, proc := range []string{"host-a", "host-b"} {
		p := streams.PollerProcess{ProcessID: proc, StartedAt: now, UpdatedAt: now, Workers: 11}
		for i := range 11 {
			p.Pollers = append(p.Pollers, streams.PollerState{PollerID: proc + "." + strconv.Itoa(i), ProcessID: proc, Slot: i,
				Class: streams.ClassPolling, Status: streams.PollerFree, UpdatedAt: now})
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, proc, b); err != nil {
			t.Fatal(err)
		}
	}
	_, viewer, _ := r.user("vera", auth.Viewer)
	code, body := r.do(viewer, "GET", "/pollers", "", "", "")
	if code != http.StatusOK {
		t.Fatalf("GET /pollers = %d", code)
	}
	for _, tc := range []struct{ label, want string }{{"poller processes", "2"}, {"execution slots", "22"}} {
		m := regexp.MustCompile(`<b>(\d+)</b>` + tc.label).FindStringSubmatch(body)
		if m == nil || m[1] != tc.want {
			t.Errorf("pollers page: %q shows %v, want %s", tc.label, m, tc.want)
		}
	}
	if regexp.MustCompile(`\b22 pollers\b`).MatchString(body) {
		t.Error("pollers page calls 22 slots pollers")
	}
}
