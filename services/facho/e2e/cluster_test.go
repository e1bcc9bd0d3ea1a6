//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// TestJetStreamCluster runs the pipeline (3 pollers, projector, auditor,
// planner, api as processes) on a 3-node JetStream cluster of nats-server
// processes with every stream, consumer and KV bucket on 3 replicas
// (FACHO_STREAM_REPLICAS=3, as deploy/nats-cluster is run), the services
// given all three URLs. While walks are running it kills -9 the node most
// pollers are connected to, keeps it down until the pipeline made progress
// without it (at least 10 s) and brings it back: the services reconnect and
// nothing is lost (onu_data equals the simulator's truth, every execution
// ended, every success audited, no duplicate ONU event, never two
// operations on one OLT). About 70 s, up to 30 s of it waiting while a
// projection consumer whose leader died holds its one unacknowledged
// message until AckWait (see the figures).
func TestJetStreamCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three nats-server processes and the services (about 70 s)")
	}
	began := time.Now()
	s := startChaosStack(t, chaosConfig{
		Nodes: 3, Replicas: 3, OLTs: 20, Pollers: 3,
		Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 4, ONUsPerPort: 16},
		Faults: func(int) oltsim.Faults {
			return oltsim.Faults{Latency: 2 * time.Millisecond, Jitter: 8 * time.Millisecond}
		},
		// Every OLT every 10 s: about two executions a second.
		IntervalSeconds: 10,
	})
	startup := time.Since(began)
	ctx := s.ctx

	// Streams really have three replicas.
	for _, name := range []string{streams.StreamExec, streams.StreamVarbinds, "KV_" + streams.BucketLeases} {
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := s.js.Stream(ictx, name)
		if err != nil {
			cancel()
			t.Fatalf("stream %s: %v", name, err)
		}
		info, err := st.Info(ictx)
		cancel()
		if err != nil {
			t.Fatalf("stream %s info: %v", name, err)
		}
		if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			t.Fatalf("stream %s: %d replicas configured, cluster %+v; want 3 (a leader and 2 peers)", name, info.Config.Replicas, info.Cluster)
		}
	}

	if _, err := s.waitProgress(ctx, began, 45*time.Second); err != nil {
		t.Fatalf("before the kill: %v", err)
	}
	// Under load: kill while walks are running (executions come in waves,
	// one per interval).
	time.Sleep(3 * time.Second)
	running := chaosWaitRunning(t, s, 30*time.Second)

	// Kill the node most pollers are connected to (the leader of the
	// execution stream among equals) and keep it down a while.
	leader := chaosStreamLeader(t, s, streams.StreamExec)
	var victim *chaosNode
	best := -1
	for _, n := range s.nodes {
		k := 2 * strings.Count(chaosConnectedClients(n), "facho-poller")
		if n.serverName == leader {
			k++
		}
		if k > best {
			victim, best = n, k
		}
	}
	const minDown, maxDown = 10 * time.Second, 45 * time.Second
	clients := chaosConnectedClients(victim)
	victim.setPaused(true)
	killAt := time.Now()
	if err := victim.kill9(); err != nil {
		t.Fatal(err)
	}
	t.Logf("kill -9 %s (%s; %s leads %s) with %d executions running; its clients: %s", victim.name, victim.serverName, leader, streams.StreamExec, running, clients)

	// While it is down the two others carry on: executions are projected
	// (projector) and logged (auditor). The node stays down at least
	// minDown, and until both were seen (at most maxDown).
	down := chaosWatchDown(s, killAt, minDown, maxDown)
	newLeader := chaosStreamLeader(t, s, streams.StreamExec)
	restartAt := time.Now()
	victim.setPaused(false)
	if err := victim.waitHealthy(ctx, 60*time.Second); err != nil {
		t.Errorf("killed node back: %v", err)
	}
	rejoined := time.Since(restartAt)
	if err := s.waitAllHealthy(30 * time.Second); err != nil {
		t.Errorf("services after the node came back: %v", err)
	}
	reconnected := time.Since(restartAt)
	progressBack, errBack := s.waitProgress(ctx, time.Now(), 60*time.Second)
	loadEnd := time.Now()

	// Settle and check.
	settled := time.Now()
	var execProblems, onuProblems []string
	var byStatus map[string]int
	var compared int
	for {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		var err1, err2 error
		execProblems, byStatus, err1 = s.checkExecutionsEnded(cctx, loadEnd)
		audit, errA := s.checkAudited(cctx, loadEnd)
		execProblems = append(execProblems, audit...)
		err1 = errors.Join(err1, errA)
		onuProblems, compared, err2 = s.checkONUData(cctx)
		cancel()
		if err1 != nil {
			execProblems = append(execProblems, err1.Error())
		}
		if err2 != nil {
			onuProblems = append(onuProblems, err2.Error())
		}
		if len(execProblems)+len(onuProblems) == 0 || time.Since(settled) > 40*time.Second {
			break
		}
		time.Sleep(time.Second)
	}
	settleTime := time.Since(settled)
	if down.exec.IsZero() || down.log.IsZero() {
		t.Errorf("no progress while %s was down for %s: first execution ended %s, first coordinator log %s after the kill",
			victim.name, down.downFor.Round(time.Second), chaosSince(killAt, down.exec), chaosSince(killAt, down.log))
	}
	if errBack != nil {
		t.Errorf("no progress after %s came back: %v", victim.name, errBack)
	}
	if len(execProblems) > 0 {
		t.Errorf("executions not ended:%s", chaosLines(execProblems))
	}
	if len(onuProblems) > 0 {
		t.Errorf("onu_data is not the simulator's truth:%s", chaosLines(onuProblems))
	}
	overlap, requests := s.checkNoOverlap()
	if len(overlap) > 0 {
		t.Errorf("an OLT ran two operations at once:%s", chaosLines(overlap))
	}
	onuEvents, checked, err := s.checkONUEvents(ctx)
	if err != nil {
		t.Errorf("read the ONU events: %v", err)
	}
	if len(onuEvents) > 0 {
		t.Errorf("duplicate ONU events:%s", chaosLines(onuEvents))
	}
	// The restarted node caught up: its replica of the execution stream
	// is current.
	if lag := chaosReplicaLag(t, s, streams.StreamExec, victim.serverName); lag != "" {
		t.Errorf("%s after the restart: %s", victim.name, lag)
	}
	ps, exits := s.stopAll(30 * time.Second)
	if len(ps) > 0 {
		t.Errorf("at shutdown:%s", chaosLines(ps))
	}

	var fig strings.Builder
	fmt.Fprintf(&fig, "cluster figures\n")
	fmt.Fprintf(&fig, "  build %s, start-up %s, total %s\n", s.built.Round(100*time.Millisecond), (startup - s.built).Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
	fmt.Fprintf(&fig, "  killed %s with %d executions running; leader of %s before %s, after %s\n", victim.serverName, running, streams.StreamExec, leader, newLeader)
	fmt.Fprintf(&fig, "  clients connected to it (they reconnect to the others): %s\n", clients)
	fmt.Fprintf(&fig, "  with the node down: first execution ended (projector) %s, first coordinator log (auditor) %s after the kill\n", chaosSince(killAt, down.exec), chaosSince(killAt, down.log))
	fmt.Fprintf(&fig, "  durable consumers 8 s after the kill: %s\n", down.behind)
	fmt.Fprintf(&fig, "  node restarted after %s down: healthy (JetStream current) after %s, every service healthy after %s\n", down.downFor.Round(100*time.Millisecond), rejoined.Round(10*time.Millisecond), reconnected.Round(10*time.Millisecond))
	if errBack == nil {
		fmt.Fprintf(&fig, "  progress after the restart: %s after it\n", progressBack.Sub(restartAt).Round(10*time.Millisecond))
	}
	fmt.Fprintf(&fig, "  settle %s; executions by status %v\n", settleTime.Round(100*time.Millisecond), byStatus)
	fmt.Fprintf(&fig, "  checked: %d ONUs against the simulator, %d ONU events, %d SNMP requests\n", compared, checked, requests)
	if len(exits) > 0 {
		fmt.Fprintf(&fig, "  exits not caused by the test (restarted by the supervisor):%s\n", chaosLines(exits))
	}
	t.Log(fig.String())
}

// chaosStreamLeader names the server leading a stream's replicas.
func chaosStreamLeader(t *testing.T, s *chaosStack, stream string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
		st, err := s.js.Stream(ctx, stream)
		if err == nil {
			info, ierr := st.Info(ctx)
			if ierr == nil && info.Cluster != nil && info.Cluster.Leader != "" {
				cancel()
				return info.Cluster.Leader
			}
			err = ierr
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("leader of %s: %v", stream, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// chaosReplicaLag reports (empty when fine) whether server's replica of stream
// is missing or not current.
func chaosReplicaLag(t *testing.T, s *chaosStack, stream, server string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
		st, err := s.js.Stream(ctx, stream)
		if err != nil {
			cancel()
			last = err.Error()
			time.Sleep(200 * time.Millisecond)
			continue
		}
		info, err := st.Info(ctx)
		cancel()
		if err != nil || info.Cluster == nil {
			last = fmt.Sprint(err)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if info.Cluster.Leader == server {
			return ""
		}
		last = "no replica on it"
		for _, r := range info.Cluster.Replicas {
			if r.Name == server {
				if r.Current && !r.Offline {
					return ""
				}
				last = fmt.Sprintf("replica current=%v offline=%v lag=%d", r.Current, r.Offline, r.Lag)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return last
}

// chaosWaitRunning waits until some execution is RUNNING and returns how many.
func chaosWaitRunning(t *testing.T, s *chaosStack, limit time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var n int
		ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
		err := s.db.QueryRow(ctx, `SELECT count(*) FROM executions WHERE status = 'RUNNING'`).Scan(&n)
		cancel()
		if err == nil && n > 0 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("no execution running within %s (%v)", limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chaosConnectedClients names the client connections of a node (its /connz).
func chaosConnectedClients(n *chaosNode) string {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(n.httpURL + "/connz")
	if err != nil {
		return "unknown: " + err.Error()
	}
	defer resp.Body.Close()
	var cz struct {
		Conns []struct {
			Name string `json:"name"`
		} `json:"connections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cz); err != nil {
		return "unknown: " + err.Error()
	}
	var names []string
	for _, c := range cz.Conns {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d (%s)", len(names), strings.Join(names, ", "))
}

// chaosDownWatch is what the pipeline did while a node was down.
type chaosDownWatch struct {
	exec, log time.Time // first execution ended / coordinator log written after the kill
	behind    string    // durable consumers with work outstanding, 8 s after the kill
	downFor   time.Duration
}

// chaosWatchDown waits, with the node down, at least minDown and until an
// execution ended and a coordinator log was written after killAt (at most
// maxDown).
func chaosWatchDown(s *chaosStack, killAt time.Time, minDown, maxDown time.Duration) chaosDownWatch {
	var w chaosDownWatch
	for time.Since(killAt) < maxDown {
		e, l, err := s.progress(s.ctx, killAt)
		if err == nil && e > 0 && w.exec.IsZero() {
			w.exec = time.Now()
		}
		if err == nil && l > 0 && w.log.IsZero() {
			w.log = time.Now()
		}
		if w.behind == "" && time.Since(killAt) > 8*time.Second {
			ctx, cancel := context.WithTimeout(s.ctx, 15*time.Second)
			b, err := s.consumersBehind(ctx)
			cancel()
			switch {
			case err != nil:
				w.behind = "unknown: " + err.Error()
			case len(b) == 0:
				w.behind = "all caught up"
			default:
				w.behind = strings.Join(b, ", ")
			}
		}
		if !w.exec.IsZero() && !w.log.IsZero() && w.behind != "" && time.Since(killAt) >= minDown {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	w.downFor = time.Since(killAt)
	return w
}

func chaosSince(from, at time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return at.Sub(from).Round(10 * time.Millisecond).String()
}
