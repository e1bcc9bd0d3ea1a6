package poller

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// syncBuffer collects a subprocess's output for the failure message.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A real facho-poller process is SIGKILLed while it holds an OLT's lease in
// the middle of a walk: it cannot release anything. Its lease must expire
// after the TTL, its attempt must end INTERRUPTED, and an in-process poller
// must then complete the work, as attempt 2 under a newer lease revision.
func TestKilledHolderLosesLeaseAndAnotherPollerProceeds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the facho-poller binary")
	}
	const leaseTTL, ackWait = 2 * time.Second, 3 * time.Second
	// File storage: the subprocess provisions the same streams with its
	// defaults and may not change their storage type.
	e := newTestEnv(t, streams.Options{LeaseTTL: leaseTTL, PollerAckWait: ackWait},
		huaweiOLT("olt-a", oltsim.Faults{Latency: 150 * time.Millisecond}))

	bin := filepath.Join(t.TempDir(), "facho-poller")
	build := exec.Command("go", "build", "-o", bin, "./cmd/facho-poller")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build facho-poller: %v\n%s", err, out)
	}
	var output syncBuffer
	proc := exec.Command(bin, "-poller-id", "doomed", "-http", "", "-workers", "1",
		"-lease-ttl", leaseTTL.String(), "-ack-wait", ackWait.String(),
		"-max-repetitions", "2", "-batch-size", "8", "-row-buffer-varbinds", "8", "-log-level", "debug")
	proc.Env = append(os.Environ(), "FACHO_NATS_URL="+e.URL, "FACHO_SECRET_KEY="+e.key)
	proc.Stdout, proc.Stderr = &output, &output
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = proc.Process.Kill()
			_ = proc.Wait()
		}
		if t.Failed() {
			t.Logf("facho-poller output:\n%s", output.String())
		}
	})

	e.publishNodeDue(t, e.nodeDue("olt-a", "exec-1", "job-disc"))
	// Mid-walk: started, some batches out, lease held by the subprocess.
	waitFor(t, 60*time.Second, "the subprocess to be mid-walk", func() bool {
		ev := e.execEvents(t, "olt-a", "exec-1")
		return len(ev.started) == 1 && ev.started[0].PollerID == "doomed" && len(e.batches(t, "olt-a", "exec-1")) >= 2
	})
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	killed = true
	if out := output.String(); strings.Contains(out, testCommunity) || !strings.Contains(out, `"execution started"`) {
		t.Fatalf("subprocess log leaks the community or lacks the start line:\n%s", out)
	}
	doomed := e.execEvents(t, "olt-a", "exec-1").started[0]
	if v, held := e.leaseHolder(t, "olt-a"); !held || !strings.Contains(v, `"doomed"`) {
		t.Fatalf("right after the kill the lease should still be the dead holder's: %q held=%v", v, held)
	}
	if len(e.execEvents(t, "olt-a", "exec-1").succeeded) != 0 {
		t.Fatal("the walk finished before the kill; make the OLT slower")
	}

	e.fleet.OLT("olt-a").SetFaults(oltsim.Faults{Latency: time.Millisecond})
	e.fleet.OLT("olt-a").ResetRecord()
	_, reg := e.startPoller(t, Config{PollerID: "survivor", Workers: 2, LeaseBusyDelay: 200 * time.Millisecond})
	// Another job due now meets the dead holder's lease until it expires.
	e.publishNodeDue(t, e.nodeDue("olt-a", "exec-2", "job-status"))

	// The NodeDue comes back after AckWait (no more heartbeats), finds the
	// dead holder's lease until it expires, then runs.
	ev := e.waitEnded(t, "olt-a", "exec-1", 60*time.Second)
	if len(ev.failed) != 0 || len(ev.succeeded) != 1 {
		t.Fatalf("events after the kill: %+v", ev)
	}
	ok := ev.succeeded[0]
	if ok.PollerID != "survivor" || ok.Attempt != 2 || ok.LeaseRevision <= doomed.LeaseRevision {
		t.Fatalf("succeeded %+v after dead holder's %+v", ok, doomed)
	}
	if len(ev.started) != 2 || ev.started[1].Attempt != 2 {
		t.Fatalf("started events %+v", ev.started)
	}
	// The dead attempt ended: its expired lease made it INTERRUPTED (the
	// survivor's lease watch, or its start-up sweep), exactly once.
	waitFor(t, 60*time.Second, "the dead attempt to be interrupted", func() bool {
		ev = e.execEvents(t, "olt-a", "exec-1")
		return len(ev.interrupted) > 0
	})
	if in := ev.interrupted; len(in) != 1 || in[0].Attempt != 1 || in[0].LeaseRevision != doomed.LeaseRevision ||
		in[0].PollerID != "doomed" || in[0].DetectedBy != "survivor" || ev.interruptedMsgIDs[0] != "exec-1:1:interrupted" {
		t.Fatalf("interrupted events %+v (ids %v) of dead holder %+v", in, ev.interruptedMsgIDs, doomed)
	}
	// The new attempt read the whole table under the new revision.
	n := 0
	for _, b := range e.batches(t, "olt-a", "exec-1") {
		if b.LeaseRevision == ok.LeaseRevision {
			n += b.VarbindCount()
		}
	}
	if n != 32*len(huaweiColumns) || ok.Varbinds != n {
		t.Fatalf("survivor published %d varbinds (succeeded says %d)", n, ok.Varbinds)
	}
	if ev2 := e.waitEnded(t, "olt-a", "exec-2", 60*time.Second); len(ev2.succeeded) != 1 || ev2.started[0].Attempt != 1 {
		t.Fatalf("second job: %+v", ev2)
	}
	busy := counter(t, reg, "facho_poller_lease_busy_total")
	if busy < 1 {
		t.Fatal("the second job never found the dead holder's lease")
	}
	t.Logf("lease busy %v times before the dead holder's lease expired", busy)
	if mc := e.fleet.OLT("olt-a").Record().MaxConcurrent; mc != 1 {
		t.Fatalf("max concurrent after the kill %d, want 1", mc)
	}
}
