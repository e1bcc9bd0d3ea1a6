package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/streams"
)

// sample is what the bench saw of the varbind stream and the projector's
// consumer at one instant: the projector acks a batch after its commit,
// so ackFloor is "committed up to".
type sample struct {
	t        time.Time
	lastSeq  uint64
	ackFloor uint64
	bytes    uint64
	firstSeq uint64
	lag      float64 // seconds since the oldest unacked batch was published (0: none)
	// cpu is every process's CPU seconds so far (a cycle's CPU is the
	// difference between the samples around it).
	cpu map[string]float64
	// rss is every process's resident memory at the sample (bytes).
	rss map[string]int64
}

// execRow is one executions row.
type execRow struct {
	job, olt, status             string
	scheduled, started, finished *time.Time
	varbinds                     int64
}

type monitor struct {
	r   *run
	res *Result
	api *devstack.Client
	// realigned[k]: the jobs were disabled and enabled after cycle k, so
	// cycle k+1 fell due together (BurstEveryCycle).
	realigned map[int]bool

	mu      sync.Mutex
	samples []sample

	profWG        sync.WaitGroup
	profiles      map[string]string // service -> profile file
	postmasterPID int               // set before the sampler starts (0: unknown)
	profMu        sync.Mutex
}

// measure waits for Cycles complete cycles (or the timeout), sampling
// the projector's progress, then computes the figures.
// startSampler samples the stream and every process's CPU every 0.5 s
// until the returned stop (idempotent) is called. It starts before the
// fleet is configured: with many OLTs the first runs start meanwhile.
func (m *monitor) startSampler(ctx context.Context) (stop func()) {
	m.postmasterPID = m.r.postmaster(ctx)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.sampler(sctx)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

func (m *monitor) measure(ctx context.Context, configured time.Time, stopSampler func()) error {
	cfg := m.r.cfg
	m.profiles = map[string]string{}
	deadline := configured.Add(cfg.Timeout)
	profiled := false
	expected := 2 * cfg.OLTs
	var rows []execRow
	var steadyFrom alerterSnap
	steadyOK := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
		for _, p := range m.r.procs {
			if p.exited() {
				return fmt.Errorf("%s exited during the run: %v\n%s", p.name, p.err, p.logTail(20))
			}
		}
		var err error
		if rows, err = m.executions(ctx); err != nil {
			return err
		}
		if _, ok := firstScheduled(rows); !ok {
			m.r.progress.set(fmt.Sprintf("waiting for the first executions (%s)", time.Since(configured).Round(time.Second)))
			continue
		}
		win := windows(rows)
		if w := win[cfg.ProfileCycle]; !profiled && cfg.ProfileSeconds > 0 && w != nil && !w.start.IsZero() {
			profiled = true
			m.startProfiles(ctx, cfg.ProfileSeconds)
		}
		cur, walked := 0, 0
		for k := 1; k <= cfg.Cycles; k++ {
			if w := win[k]; w != nil && w.terminal >= expected && w.open == 0 {
				walked++
			} else if cur == 0 {
				cur = k
			}
		}
		// The alerter's steady figures start once it has evaluated cycle 1
		// (the first discovery's burst of new ONUs).
		if walked >= 1 && !steadyOK {
			steadyFrom, steadyOK = m.alerterCaughtUp(ctx)
		}
		last := m.lastSample()
		if cfg.BurstEveryCycle {
			if err := m.realignAfterCommitted(ctx, win, last, expected); err != nil {
				return err
			}
		}
		// Done when every cycle is walked and the projector has committed
		// everything published until the last walk of the last cycle
		// ended (later cycles keep publishing: they are not waited for).
		if walked == cfg.Cycles {
			var end time.Time
			for k := 1; k <= cfg.Cycles; k++ {
				if win[k].end.After(end) {
					end = win[k].end
				}
			}
			if target, ok := m.seqAt(end); ok && last.ackFloor >= target {
				break
			}
		}
		status := fmt.Sprintf("cycles walked %d/%d", walked, cfg.Cycles)
		if w := win[cur]; cur > 0 && w != nil {
			status += fmt.Sprintf(", cycle %d: %d/%d executions done, %d pending or running", cur, w.terminal, expected, w.open)
		}
		m.r.progress.set(fmt.Sprintf("%s; projector committed %d/%d batches, lag %.1fs; %s",
			status, last.ackFloor, last.lastSeq, last.lag, time.Since(configured).Round(time.Second)))
		if time.Now().After(deadline) {
			m.res.Incomplete = fmt.Sprintf("timeout %s reached before %d complete cycles", cfg.Timeout, cfg.Cycles)
			break
		}
	}
	m.profWG.Wait()
	m.alertingFigures(ctx, steadyFrom, steadyOK, 10*time.Minute)
	// Usage before the processes stop.
	m.usage(ctx)
	rows, err := m.executions(ctx)
	if err != nil {
		return err
	}
	stopSampler()
	if err := m.figures(ctx, rows); err != nil {
		return err
	}
	m.summariseProfile(ctx)
	return nil
}

// realignAfterCommitted makes the next cycle fall due together once a
// cycle is walked and the projector has committed everything published
// until its last walk ended (so the next cycle's figures hold its own work
// only). A cycle whose next one already started (the interval shorter than
// the cycle) is left as it is: its successor is not counted as a burst.
func (m *monitor) realignAfterCommitted(ctx context.Context, win map[int]*window, last sample, expected int) error {
	if m.realigned == nil {
		m.realigned = map[int]bool{}
	}
	for k := 1; k < m.r.cfg.Cycles; k++ {
		w := win[k]
		if m.realigned[k] || w == nil || w.terminal < expected || w.open > 0 {
			continue
		}
		if win[k+1] != nil {
			m.realigned[k] = false
			continue
		}
		if target, ok := m.seqAt(w.end); !ok || last.ackFloor < target {
			return nil
		}
		m.r.progress.line(fmt.Sprintf("cycle %d walked and committed: disabling and enabling the jobs, cycle %d falls due together", k, k+1))
		if err := realign(ctx, m.api); err != nil {
			return fmt.Errorf("realign cycle %d: %w", k+1, err)
		}
		m.realigned[k] = true
		return nil
	}
	return nil
}

// seqAt is the stream's last sequence in the first sample taken at or
// after t.
func (m *monitor) seqAt(t time.Time) (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.samples {
		if !s.t.Before(t) {
			return s.lastSeq, true
		}
	}
	return 0, false
}

func (m *monitor) lastSample() sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.samples) == 0 {
		return sample{}
	}
	return m.samples[len(m.samples)-1]
}

// sampler reads the varbind stream and the projector's consumer twice a
// second until ctx ends.
func (m *monitor) sampler(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s, err := m.sampleOnce(ctx)
		if err != nil {
			continue
		}
		s.cpu, s.rss = map[string]float64{}, map[string]int64{}
		for _, p := range m.processes(ctx) {
			s.cpu[p.Name] = p.CPUSeconds
			if p.rss > 0 {
				s.rss[p.Name] = p.rss
			}
		}
		m.mu.Lock()
		m.samples = append(m.samples, s)
		m.mu.Unlock()
	}
}

func (m *monitor) sampleOnce(ctx context.Context) (sample, error) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s := sample{t: time.Now()}
	st, err := m.r.js.Stream(qctx, streams.StreamVarbinds)
	if err != nil {
		return s, err
	}
	si, err := st.Info(qctx)
	if err != nil {
		return s, err
	}
	s.lastSeq, s.bytes, s.firstSeq = si.State.LastSeq, si.State.Bytes, si.State.FirstSeq
	// With partitions, committed up to the lowest of their ack floors.
	durables := []string{streams.ConsumerProjectorVarbinds}
	if n := m.r.cfg.ProjectorPartitions; n > 1 {
		durables = durables[:0]
		for i := range n {
			durables = append(durables, streams.ConsumerProjectorVarbindsPartition(i, n))
		}
	}
	for i, d := range durables {
		cons, err := st.Consumer(qctx, d)
		if err != nil {
			// Not created yet: nothing committed.
			s.ackFloor = 0
			return s, nil
		}
		ci, err := cons.Info(qctx)
		if err != nil {
			return s, err
		}
		if i == 0 || ci.AckFloor.Stream < s.ackFloor {
			s.ackFloor = ci.AckFloor.Stream
		}
	}
	if s.ackFloor < s.lastSeq {
		if msg, err := st.GetMsg(qctx, s.ackFloor+1); err == nil {
			s.lag = s.t.Sub(msg.Time).Seconds()
		} else if errors.Is(err, jetstream.ErrMsgNotFound) {
			s.lag = 0
		}
	}
	return s, nil
}

func (m *monitor) executions(ctx context.Context) ([]execRow, error) {
	q, err := m.r.db.Query(ctx, `SELECT job_id, olt_id, status, scheduled_at, started_at, finished_at, varbinds FROM executions`)
	if err != nil {
		// The schema may not exist yet in the first seconds.
		return nil, nil
	}
	defer q.Close()
	var out []execRow
	for q.Next() {
		var e execRow
		if err := q.Scan(&e.job, &e.olt, &e.status, &e.scheduled, &e.started, &e.finished, &e.varbinds); err != nil {
			return nil, fmt.Errorf("read executions: %w", err)
		}
		out = append(out, e)
	}
	return out, q.Err()
}

func firstScheduled(rows []execRow) (time.Time, bool) {
	var t0 time.Time
	for _, e := range rows {
		if e.scheduled != nil && (t0.IsZero() || e.scheduled.Before(t0)) {
			t0 = *e.scheduled
		}
	}
	return t0, !t0.IsZero()
}

// window is one cycle: the k-th scheduled execution of every node (job x
// OLT). Counting per node, not by clock, keeps a node in its cycle when
// the planner spreads first runs over the whole interval.
type window struct {
	terminal, open int
	varbinds       int64
	start, end     time.Time // first started, last finished
	lateness       []float64
	durations      map[string][]float64 // job -> finished - started, seconds
}

func windows(rows []execRow) map[int]*window {
	byNode := map[[2]string][]int{}
	for i, e := range rows {
		if e.scheduled != nil {
			node := [2]string{e.job, e.olt}
			byNode[node] = append(byNode[node], i)
		}
	}
	out := map[int]*window{}
	for _, idx := range byNode {
		sort.Slice(idx, func(a, b int) bool { return rows[idx[a]].scheduled.Before(*rows[idx[b]].scheduled) })
		for rank, i := range idx {
			addToWindow(out, rank+1, rows[i])
		}
	}
	return out
}

func addToWindow(out map[int]*window, k int, e execRow) {
	w := out[k]
	if w == nil {
		w = &window{}
		out[k] = w
	}
	switch e.status {
	case "PENDING", "RUNNING":
		w.open++
	default:
		w.terminal++
	}
	w.varbinds += e.varbinds
	if e.started != nil {
		if w.start.IsZero() || e.started.Before(w.start) {
			w.start = *e.started
		}
		w.lateness = append(w.lateness, e.started.Sub(*e.scheduled).Seconds())
	}
	if e.finished != nil && e.finished.After(w.end) {
		w.end = *e.finished
	}
	if e.started != nil && e.finished != nil {
		if w.durations == nil {
			w.durations = map[string][]float64{}
		}
		w.durations[e.job] = append(w.durations[e.job], e.finished.Sub(*e.started).Seconds())
	}
}

// benchProcess names the bench's own process in the results.
const benchProcess = "facho bench (embedded NATS, baseline clients)"

// startProfiles takes a CPU profile of every service and of the embedded
// NATS server, in the background.
func (m *monitor) startProfiles(ctx context.Context, seconds int) {
	dir := m.r.cfg.ProfileDir
	if dir == "" {
		dir = filepath.Join(m.r.tmp, "profiles")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	// The bench's own process: the embedded NATS server.
	if f, err := os.Create(filepath.Join(dir, "nats.pprof")); err == nil {
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
		} else {
			m.profWG.Add(1)
			go func() {
				defer m.profWG.Done()
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(seconds) * time.Second):
				}
				pprof.StopCPUProfile()
				if f.Close() == nil {
					m.profMu.Lock()
					m.profiles[benchProcess] = f.Name()
					m.profMu.Unlock()
				}
			}()
		}
	}
	for _, p := range m.r.procs {
		if p.pprofAddr == "" {
			continue
		}
		m.profWG.Add(1)
		go func() {
			defer m.profWG.Done()
			pctx, cancel := context.WithTimeout(ctx, time.Duration(seconds+30)*time.Second)
			defer cancel()
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.pprofAddr, seconds)
			body, err := fetch(pctx, url)
			if err != nil {
				return
			}
			path := filepath.Join(dir, p.name+".pprof")
			if os.WriteFile(path, body, 0o600) == nil {
				m.profMu.Lock()
				m.profiles[p.name] = path
				m.profMu.Unlock()
			}
		}()
	}
}

// usage reads CPU and peak RSS of every process before they stop.
func (m *monitor) usage(ctx context.Context) {
	m.res.Processes = append(m.res.Processes, m.processes(ctx)...)
}

// processes reads CPU and peak RSS of every process of the run.
func (m *monitor) processes(ctx context.Context) []Process {
	var out []Process
	add := func(name string, u procUsage) {
		out = append(out, Process{Name: name, CPUSeconds: u.CPUSeconds, PeakRSSBytes: u.PeakRSS, rss: u.RSS})
	}
	for _, p := range m.r.procs {
		if u, err := readUsage(p.cmd.Process.Pid, false); err == nil {
			add(p.name, u)
		}
	}
	if u, err := readUsage(m.r.sim.cmd.Process.Pid, false); err == nil {
		add("oltsim (simulator)", u)
	}
	if u, err := readUsage(os.Getpid(), false); err == nil {
		add(benchProcess, u)
	}
	// Postgres: the postmaster with its exited and live backends, since
	// the bench connected.
	if pid := m.postmasterPID; pid > 1 {
		if cpu, err := treeCPU(pid); err == nil {
			out = append(out, Process{Name: "postgres (server)", CPUSeconds: cpu - m.r.pgCPU0})
		}
	}
	return out
}

// summariseProfile runs go tool pprof -top on the profile of the service
// that used the most CPU.
func (m *monitor) summariseProfile(ctx context.Context) {
	var hot *Process
	for i := range m.res.Processes {
		p := &m.res.Processes[i]
		if _, ok := m.profiles[p.Name]; ok && (hot == nil || p.CPUSeconds > hot.CPUSeconds) {
			hot = p
		}
	}
	if hot == nil {
		return
	}
	var binPath string
	for _, p := range m.r.procs {
		if p.name == hot.Name {
			binPath = p.cmd.Path
		}
	}
	if hot.Name == benchProcess {
		binPath, _ = os.Executable()
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	m.res.ProfileService = hot.Name
	for _, sort := range []string{"-flat", "-cum"} {
		out, err := exec.CommandContext(pctx, "go", "tool", "pprof", "-top", sort, "-nodecount=25", binPath, m.profiles[hot.Name]).Output()
		if err != nil {
			m.res.ProfileTop += "go tool pprof " + sort + " failed: " + err.Error() + "\n"
			continue
		}
		m.res.ProfileTop += string(out)
	}
}
