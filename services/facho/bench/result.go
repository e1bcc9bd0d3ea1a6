package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/facho-olt/facho/streams"
)

// Result is what a bench run measured. The JSON keys are stable.
type Result struct {
	Started         time.Time `json:"started"`
	Host            string    `json:"host"`
	CPUs            int       `json:"cpus"`
	OLTs            int       `json:"olts"`
	Shape           string    `json:"shape"`
	ONUsPerOLT      int       `json:"onus_per_olt"`
	Cycles          int       `json:"cycles"`
	IntervalSeconds float64   `json:"interval_seconds"`
	// FirstRunSpreadSeconds is the planner's first-run spread (negative:
	// the fleet fell due together).
	FirstRunSpreadSeconds float64 `json:"first_run_spread_seconds"`
	// BurstEveryCycle: every cycle fell due together (the jobs disabled
	// and enabled between cycles), so steady cycles measure capacity.
	BurstEveryCycle bool `json:"burst_every_cycle,omitempty"`
	// RxDriftDBm: the simulator moved every ONU's Rx by up to this much
	// twice an interval (changes-heavy cycles); 0: quiet cycles.
	RxDriftDBm          float64 `json:"rx_drift_dbm,omitempty"`
	Pollers             int     `json:"pollers"`
	Workers             int     `json:"workers_per_poller"`
	MaxRepetitions      int     `json:"max_repetitions"`
	Projectors          int     `json:"projectors"`
	ProjectorPartitions int     `json:"projector_partitions"`
	Postgres            string  `json:"postgres"`
	// Incomplete says why fewer cycles than asked were measured.
	Incomplete string `json:"incomplete,omitempty"`

	Varbinds              int64   `json:"varbinds"`
	WalkVarbindsPerS      float64 `json:"walk_varbinds_per_s"`
	EndToEndVarbindsPerS  float64 `json:"end_to_end_varbinds_per_s"`
	CycleSeconds          float64 `json:"cycle_seconds"`
	LatenessP50Seconds    float64 `json:"lateness_p50_seconds"`
	LatenessP99Seconds    float64 `json:"lateness_p99_seconds"`
	LagP99Seconds         float64 `json:"lag_published_to_committed_p99_seconds"`
	StreamBytesPerVarbind float64 `json:"stream_bytes_per_varbind"`
	// StreamDiskBytesPerVarbind: the stream's folder in the JetStream
	// store (after its store compression) over the same varbinds.
	StreamDiskBytesPerVarbind float64 `json:"stream_disk_bytes_per_varbind"`
	PostgresBytesPerONU       float64 `json:"postgres_onu_data_bytes_per_onu"`
	PostgresDatabaseBytes     int64   `json:"postgres_database_bytes"`
	ONUs                      int64   `json:"onus_in_onu_data"`
	// HistoryRows is onu_history's rows at the end: one per field of an
	// ONU's first reading, then one per changed field per reading (the
	// changes-heavy cycles' cost in rows).
	HistoryRows          int64   `json:"onu_history_rows"`
	VarbindsPerCPUSecond float64 `json:"varbinds_per_cpu_second"`
	// SteadyVarbindsPerCPUSecond: cycles 2..K's varbinds over the CPU
	// every process but the simulator used in their busy time (0: one
	// cycle). 100k varbinds/s on 2 cores needs 50k.
	SteadyVarbindsPerCPUSecond float64    `json:"steady_varbinds_per_cpu_second,omitempty"`
	PerCycle                   []Cycle    `json:"per_cycle"`
	Processes                  []Process  `json:"processes"`
	Baselines                  []Baseline `json:"baselines"`
	Ratios                     []Ratio    `json:"ratios"`
	ProfileService             string     `json:"profile_service,omitempty"`
	ProfileTop                 string     `json:"profile_top,omitempty"`
	StreamNote                 string     `json:"stream_note,omitempty"`
	// Alerting: the alerter's evaluation of the run's ONU changes.
	Alerting *Alerting `json:"alerting,omitempty"`
}

// Cycle is one discovery+GET cycle over the fleet.
type Cycle struct {
	Cycle                int     `json:"cycle"`
	Executions           int     `json:"executions"`
	Varbinds             int64   `json:"varbinds"`
	WalkSeconds          float64 `json:"walk_seconds"`
	EndToEndSeconds      float64 `json:"end_to_end_seconds"`
	WalkVarbindsPerS     float64 `json:"walk_varbinds_per_s"`
	EndToEndVarbindsPerS float64 `json:"end_to_end_varbinds_per_s"`
	LatenessP50Seconds   float64 `json:"lateness_p50_seconds"`
	LatenessP99Seconds   float64 `json:"lateness_p99_seconds"`
	// FellDueTogether: every node of the cycle was due at the same moment
	// (cycle 1 with a negative first-run spread; later cycles with
	// BurstEveryCycle), so the cycle measures capacity, not offered load.
	FellDueTogether bool `json:"fell_due_together"`
	// Jobs: how long each job's executions of the cycle ran.
	Jobs []JobDurations `json:"jobs,omitempty"`
	// CPUSeconds: what every process but the simulator used from the
	// cycle's first start to its last commit (the busy time; idle time
	// between cycles is not counted).
	CPUSeconds           float64 `json:"cpu_seconds,omitempty"`
	VarbindsPerCPUSecond float64 `json:"varbinds_per_cpu_second,omitempty"`
	// RSSBytes: each process's highest resident memory (VmRSS) sampled
	// from the cycle's first start to its last commit; flat across
	// cycles is what a box that runs for months needs.
	RSSBytes map[string]int64 `json:"rss_bytes,omitempty"`
}

// JobDurations is finished - started of one job's executions in a cycle.
type JobDurations struct {
	Job        string  `json:"job"`
	Executions int     `json:"executions"`
	P50Seconds float64 `json:"p50_seconds"`
	P99Seconds float64 `json:"p99_seconds"`
}

// Process is one process's CPU and peak memory over the run.
type Process struct {
	Name              string  `json:"name"`
	CPUSeconds        float64 `json:"cpu_seconds"`
	PeakRSSBytes      int64   `json:"peak_rss_bytes,omitempty"`
	VarbindsPerCPUSec float64 `json:"varbinds_per_cpu_second"`
	// SteadyCPUSeconds is its CPU in the busy time of cycles 2..K (first
	// start to last commit, without the first cycle's inserts);
	// SteadyVarbindsPerCPUSec the varbinds of those cycles over it.
	SteadyCPUSeconds        float64 `json:"steady_cpu_seconds,omitempty"`
	SteadyVarbindsPerCPUSec float64 `json:"steady_varbinds_per_cpu_second,omitempty"`
	rss                     int64   // resident now (samples only)
}

// Ratio is Facho against one baseline of the same run.
type Ratio struct {
	Baseline string `json:"baseline"`
	// Walk and EndToEnd: Facho's varbinds/s over the baseline's (> 1:
	// Facho faster). PollerCPUPerVarbind: the pollers' CPU per varbind
	// over the baseline client's (< 1: Facho cheaper).
	Walk                float64 `json:"walk"`
	EndToEnd            float64 `json:"end_to_end"`
	PollerCPUPerVarbind float64 `json:"poller_cpu_per_varbind,omitempty"`
}

// figures computes the result from the executions and the samples.
func (m *monitor) figures(ctx context.Context, rows []execRow) error {
	res, cfg := m.res, m.r.cfg
	m.mu.Lock()
	samples := append([]sample(nil), m.samples...)
	m.mu.Unlock()
	if _, ok := firstScheduled(rows); !ok {
		return fmt.Errorf("no execution ran")
	}
	win := windows(rows)
	steadyCPU := map[string]float64{} // process -> CPU in cycles 2..K's busy time
	var allLate []float64
	var walkSum, e2eSum float64
	var vbSum int64
	var spanStart, spanEnd time.Time
	for k := 1; k <= cfg.Cycles; k++ {
		w := win[k]
		if w == nil || w.start.IsZero() || w.end.IsZero() {
			continue
		}
		c := Cycle{Cycle: k, Executions: w.terminal + w.open, Varbinds: w.varbinds, WalkSeconds: w.end.Sub(w.start).Seconds(),
			FellDueTogether: (k == 1 && m.r.cfg.FirstRunSpread < 0) || m.realigned[k-1]}
		// Committed: the first sample whose ack floor reaches the stream's
		// last sequence as it was when the last walk of the cycle ended.
		var target uint64
		found := false
		for _, s := range samples {
			if !s.t.Before(w.end) {
				target, found = s.lastSeq, true
				break
			}
		}
		if found {
			for _, s := range samples {
				if !s.t.Before(w.end) && s.ackFloor >= target {
					c.EndToEndSeconds = s.t.Sub(w.start).Seconds()
					c.RSSBytes = rssBetween(samples, w.start, s.t)
					busy := cpuBetween(samples, w.start, s.t)
					for name, sec := range busy {
						if !strings.HasPrefix(name, "oltsim") {
							c.CPUSeconds += sec
						}
						if k > 1 {
							steadyCPU[name] += sec
						}
					}
					if c.CPUSeconds > 0 {
						c.VarbindsPerCPUSecond = float64(c.Varbinds) / c.CPUSeconds
					}
					if spanEnd.Before(s.t) {
						spanEnd = s.t
					}
					break
				}
			}
		}
		if spanStart.IsZero() || w.start.Before(spanStart) {
			spanStart = w.start
		}
		jobs := make([]string, 0, len(w.durations))
		for job := range w.durations {
			jobs = append(jobs, job)
		}
		sort.Strings(jobs)
		for _, job := range jobs {
			d := sortedCopy(w.durations[job])
			c.Jobs = append(c.Jobs, JobDurations{Job: job, Executions: len(d), P50Seconds: percentile(d, 0.50), P99Seconds: percentile(d, 0.99)})
		}
		late := sortedCopy(w.lateness)
		c.LatenessP50Seconds, c.LatenessP99Seconds = percentile(late, 0.50), percentile(late, 0.99)
		allLate = append(allLate, w.lateness...)
		if c.WalkSeconds > 0 {
			c.WalkVarbindsPerS = float64(c.Varbinds) / c.WalkSeconds
		}
		if c.EndToEndSeconds > 0 {
			c.EndToEndVarbindsPerS = float64(c.Varbinds) / c.EndToEndSeconds
			e2eSum += c.EndToEndSeconds
			walkSum += c.WalkSeconds
			vbSum += c.Varbinds
		}
		res.PerCycle = append(res.PerCycle, c)
	}
	res.Varbinds = vbSum
	if walkSum > 0 {
		res.WalkVarbindsPerS = float64(vbSum) / walkSum
	}
	if e2eSum > 0 {
		res.EndToEndVarbindsPerS = float64(vbSum) / e2eSum
		res.CycleSeconds = e2eSum / float64(len(res.PerCycle))
	}
	late := sortedCopy(allLate)
	res.LatenessP50Seconds, res.LatenessP99Seconds = percentile(late, 0.50), percentile(late, 0.99)
	var lags []float64
	for _, s := range samples {
		if !s.t.Before(spanStart) && !s.t.After(spanEnd) {
			lags = append(lags, s.lag)
		}
	}
	res.LagP99Seconds = percentile(sortedCopy(lags), 0.99)

	// Stream bytes: everything the varbind stream holds over every
	// varbind of every execution (cycles beyond the measured ones too).
	var allVarbinds int64
	for _, e := range rows {
		allVarbinds += e.varbinds
	}
	if n := len(samples); n > 0 && allVarbinds > 0 {
		last := samples[n-1]
		res.StreamBytesPerVarbind = float64(last.bytes) / float64(allVarbinds)
		if disk := dirBytes(m.r.tmp, streams.StreamVarbinds); disk > 0 {
			res.StreamDiskBytesPerVarbind = float64(disk) / float64(allVarbinds)
		}
		if last.firstSeq > 1 {
			res.StreamNote = fmt.Sprintf("the stream's retention dropped batches 1..%d: bytes per varbind is underestimated", last.firstSeq-1)
		}
	}
	var relBytes int64
	if err := m.r.db.QueryRow(ctx, `SELECT pg_total_relation_size('onu_data'), (SELECT count(*) FROM onu_data), pg_database_size(current_database())`).Scan(&relBytes, &res.ONUs, &res.PostgresDatabaseBytes); err != nil {
		return fmt.Errorf("postgres sizes: %w", err)
	}
	if res.ONUs > 0 {
		res.PostgresBytesPerONU = float64(relBytes) / float64(res.ONUs)
	}
	if err := m.r.db.QueryRow(ctx, `SELECT count(*) FROM onu_history`).Scan(&res.HistoryRows); err != nil {
		return fmt.Errorf("onu_history rows: %w", err)
	}

	var steadyVarbinds int64
	for _, c := range res.PerCycle {
		if c.Cycle > 1 {
			steadyVarbinds += c.Varbinds
		}
	}
	var total, steadyTotal, pollerCPU float64
	for i := range res.Processes {
		p := &res.Processes[i]
		p.SteadyCPUSeconds = steadyCPU[p.Name]
		if p.CPUSeconds > 0 {
			p.VarbindsPerCPUSec = float64(allVarbinds) / p.CPUSeconds
		}
		if p.SteadyCPUSeconds > 0 && steadyVarbinds > 0 {
			p.SteadyVarbindsPerCPUSec = float64(steadyVarbinds) / p.SteadyCPUSeconds
			if !strings.HasPrefix(p.Name, "oltsim") {
				steadyTotal += p.SteadyCPUSeconds
			}
		}
		if strings.HasPrefix(p.Name, "poller-") {
			pollerCPU += p.CPUSeconds
		}
		switch {
		case strings.HasPrefix(p.Name, "oltsim"):
			// The OLTs, not Facho.
		case strings.HasPrefix(p.Name, "facho bench"):
			// The embedded NATS, less the in-process gosnmp baseline.
			total += p.CPUSeconds - gosnmpCPU(res.Baselines)
		default:
			total += p.CPUSeconds
		}
	}
	if total > 0 {
		res.VarbindsPerCPUSecond = float64(allVarbinds) / total
	}
	if steadyTotal > 0 {
		res.SteadyVarbindsPerCPUSecond = float64(steadyVarbinds) / steadyTotal
	}
	for _, b := range res.Baselines {
		if b.Skipped != "" || b.VarbindsPerS == 0 {
			continue
		}
		r := Ratio{Baseline: b.Name, Walk: res.WalkVarbindsPerS / b.VarbindsPerS, EndToEnd: res.EndToEndVarbindsPerS / b.VarbindsPerS}
		if b.CPUSeconds > 0 && allVarbinds > 0 && b.Varbinds > 0 {
			r.PollerCPUPerVarbind = (pollerCPU / float64(allVarbinds)) / (b.CPUSeconds / float64(b.Varbinds))
		}
		res.Ratios = append(res.Ratios, r)
	}
	return nil
}

// cpuBetween is every process's CPU seconds from the last sample at or
// before from to the first at or after to.
func cpuBetween(samples []sample, from, to time.Time) map[string]float64 {
	var a, b map[string]float64
	for _, s := range samples {
		if !s.t.After(from) && s.cpu != nil {
			a = s.cpu
		}
		if !s.t.Before(to) && s.cpu != nil {
			b = s.cpu
			break
		}
	}
	out := map[string]float64{}
	if a == nil || b == nil {
		return out
	}
	for name, sec := range b {
		out[name] = sec - a[name]
	}
	return out
}

// rssBetween is each process's highest sampled resident memory in
// [from, to].
func rssBetween(samples []sample, from, to time.Time) map[string]int64 {
	out := map[string]int64{}
	for _, s := range samples {
		if s.t.Before(from) || s.t.After(to) {
			continue
		}
		for name, b := range s.rss {
			out[name] = max(out[name], b)
		}
	}
	return out
}

// dirBytes is the size of the files under every folder named name
// below root (a stream's folder in the JetStream store).
func dirBytes(root, name string) int64 {
	var total int64
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(path, string(filepath.Separator)+name+string(filepath.Separator)) {
			return nil
		}
		if info, err := d.Info(); err == nil {
			total += info.Size()
		}
		return nil
	})
	return total
}

// gosnmpCPU is the CPU of the baseline that ran in the bench's process.
func gosnmpCPU(bs []Baseline) float64 {
	for _, b := range bs {
		if strings.HasPrefix(b.Name, "gosnmp") {
			return b.CPUSeconds
		}
	}
	return 0
}

// WriteJSON writes the result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable prints the result as tables.
func (r *Result) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	spread := "first runs fall due together"
	if r.BurstEveryCycle {
		spread = "every cycle falls due together: jobs disabled and enabled between cycles"
	}
	if r.FirstRunSpreadSeconds > 0 {
		spread = "first runs spread over " + time.Duration(r.FirstRunSpreadSeconds*float64(time.Second)).String()
	}
	if r.RxDriftDBm > 0 {
		spread += fmt.Sprintf("; changes-heavy: every ONU's Rx drifts up to %g dB twice an interval", r.RxDriftDBm)
	}
	if r.Alerting != nil && r.Alerting.StatusChurnPercent > 0 {
		spread += fmt.Sprintf("; %g %% of the ONUs change status every interval", r.Alerting.StatusChurnPercent)
	}
	fmt.Fprintf(tw, "facho bench: %d OLTs x %d ONUs (%s), %d cycles every %s (%s), %d pollers x %d workers, %d projectors (%d partitions), max-repetitions %d, %d CPUs\n",
		r.OLTs, r.ONUsPerOLT, r.Shape, r.Cycles, time.Duration(r.IntervalSeconds*float64(time.Second)), spread, r.Pollers, r.Workers, r.Projectors, r.ProjectorPartitions, r.MaxRepetitions, r.CPUs)
	if r.Incomplete != "" {
		fmt.Fprintf(tw, "INCOMPLETE: %s\n", r.Incomplete)
	}
	fmt.Fprintln(tw, "\nfigure\tvalue")
	fmt.Fprintf(tw, "walk (pollers)\t%.0f varbinds/s\n", r.WalkVarbindsPerS)
	fmt.Fprintf(tw, "end to end (first walk started -> last batch committed)\t%.0f varbinds/s\n", r.EndToEndVarbindsPerS)
	fmt.Fprintf(tw, "cycle time (mean, end to end)\t%.1f s\n", r.CycleSeconds)
	fmt.Fprintf(tw, "lateness started - scheduled p50 / p99\t%.2f s / %.2f s\n", r.LatenessP50Seconds, r.LatenessP99Seconds)
	fmt.Fprintf(tw, "lag published -> committed p99\t%.2f s\n", r.LagP99Seconds)
	fmt.Fprintf(tw, "stream bytes per varbind (JetStream's count / on disk)\t%.1f / %.1f\n", r.StreamBytesPerVarbind, r.StreamDiskBytesPerVarbind)
	fmt.Fprintf(tw, "onu_data bytes per ONU (%d ONUs; table, indexes, dead rows)\t%.0f\n", r.ONUs, r.PostgresBytesPerONU)
	if r.ONUs > 0 {
		fmt.Fprintf(tw, "Postgres database bytes per ONU (every table) / onu_history rows per ONU\t%.0f / %.1f\n", float64(r.PostgresDatabaseBytes)/float64(r.ONUs), float64(r.HistoryRows)/float64(r.ONUs))
	}
	fmt.Fprintf(tw, "varbinds per CPU-second (services, NATS, Postgres)\t%.0f\n", r.VarbindsPerCPUSecond)
	if r.SteadyVarbindsPerCPUSecond > 0 {
		fmt.Fprintf(tw, "  the same in the busy time of cycles 2..%d (no first-cycle inserts, no idle)\t%.0f\n", r.Cycles, r.SteadyVarbindsPerCPUSecond)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cycle\tdue\texecutions\tvarbinds\twalk s\tend-to-end s\twalk vb/s\te2e vb/s\tlate p50 s\tlate p99 s\tCPU s\tvb per CPU-s")
	for _, c := range r.PerCycle {
		due := "spread"
		if c.FellDueTogether {
			due = "together"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%.1f\t%.1f\t%.0f\t%.0f\t%.2f\t%.2f\t%.1f\t%.0f\n", c.Cycle, due, c.Executions, c.Varbinds, c.WalkSeconds, c.EndToEndSeconds, c.WalkVarbindsPerS, c.EndToEndVarbindsPerS, c.LatenessP50Seconds, c.LatenessP99Seconds, c.CPUSeconds, c.VarbindsPerCPUSecond)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cycle\tjob\texecutions\tduration p50 s\tp99 s")
	for _, c := range r.PerCycle {
		for _, j := range c.Jobs {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%.2f\t%.2f\n", c.Cycle, j.Job, j.Executions, j.P50Seconds, j.P99Seconds)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "process\tCPU s\tpeak RSS MiB\tvarbinds per CPU-s\tcycles 2..K busy: CPU s\tvarbinds per CPU-s")
	for _, p := range r.Processes {
		rss := "-"
		if p.PeakRSSBytes > 0 {
			rss = fmt.Sprintf("%.0f", float64(p.PeakRSSBytes)/(1<<20))
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%.0f\t%.1f\t%.0f\n", p.Name, p.CPUSeconds, rss, p.VarbindsPerCPUSec, p.SteadyCPUSeconds, p.SteadyVarbindsPerCPUSec)
	}
	tw.Flush()
	fmt.Fprintln(w)
	r.writeRSSByCycle(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "baseline (same simulated tables)\tOLTs\tvarbinds/s\tvarbinds per CPU-s\tFacho walk x\tFacho e2e x\tpoller CPU/varbind x")
	for _, b := range r.Baselines {
		switch {
		case b.Skipped != "":
			fmt.Fprintf(tw, "%s\tskipped: %s\n", b.Name, b.Skipped)
			continue
		case b.Error != "":
			fmt.Fprintf(tw, "%s\terror: %s\n", b.Name, b.Error)
			continue
		}
		var ra Ratio
		for _, x := range r.Ratios {
			if x.Baseline == b.Name {
				ra = x
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\n", b.Name, b.OLTs, b.VarbindsPerS, b.VarbindsPerCPUSec, ra.Walk, ra.EndToEnd, ra.PollerCPUPerVarbind)
	}
	tw.Flush()
	if r.StreamNote != "" {
		fmt.Fprintln(w, "note:", r.StreamNote)
	}
	r.Alerting.write(w)
	if r.ProfileTop != "" {
		fmt.Fprintf(w, "\nCPU profile of the hottest service (%s):\n%s", r.ProfileService, r.ProfileTop)
	}
}

// progress is the one-line progress report on stderr: rewritten in place
// on a terminal, one line every 10 s otherwise.
type progress struct {
	mu   sync.Mutex
	w    io.Writer
	tty  bool
	last time.Time
	text string
}

func (p *progress) set(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s == p.text {
		return
	}
	p.text = s
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", s)
		return
	}
	if time.Since(p.last) >= 10*time.Second || !strings.HasPrefix(s, "cycles walked") {
		p.last = time.Now()
		fmt.Fprintln(p.w, s)
	}
}

// line prints a line that stays (a skipped baseline).
func (p *progress) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s\n", s)
		p.text = ""
		return
	}
	fmt.Fprintln(p.w, s)
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func fetch(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", url, resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}

// snmpAnswers says whether the OLT at host:port answers a GETNEXT.
func snmpAnswers(ctx context.Context, host string, port int, community string) bool {
	g := &gosnmp.GoSNMP{Target: host, Port: uint16(port), Community: community, Version: gosnmp.Version2c, Timeout: 500 * time.Millisecond, Retries: 0, Context: ctx}
	if err := g.Connect(); err != nil {
		return false
	}
	defer g.Conn.Close()
	_, err := g.GetNext([]string{"1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3"})
	return err == nil
}

func numCPU() int { return runtime.NumCPU() }

// writeRSSByCycle prints each process's highest resident memory in each
// cycle's busy time: a process whose memory keeps growing shows here.
func (r *Result) writeRSSByCycle(w io.Writer) {
	if len(r.PerCycle) == 0 || len(r.PerCycle[0].RSSBytes) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "process\tRSS MiB in cycle"
	for _, c := range r.PerCycle {
		head += fmt.Sprintf("\t%d", c.Cycle)
	}
	fmt.Fprintln(tw, head)
	for _, p := range r.Processes {
		if p.Name == "postgres (server)" {
			continue
		}
		line := p.Name + "\t"
		for _, c := range r.PerCycle {
			line += fmt.Sprintf("\t%.0f", float64(c.RSSBytes[p.Name])/(1<<20))
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintln(w)
}
