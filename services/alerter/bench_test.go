package alerter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/services/alerter"
	"github.com/facho-olt/facho/streams"
)

// BenchmarkAlertLatency prints the time from an onu.changed (the poll that
// saw an ONU at -31.5 dBm, as the projector publishes it) to the alert
// being held by a real Alertmanager (GET /api/v2/alerts), p50 and p99:
//
//	go test -run '^$' -bench AlertLatency -benchtime 200x ./services/alerter/
func BenchmarkAlertLatency(b *testing.B) {
	rcv := newReceiver(b)
	amURL := startAlertmanager(b, rcv)
	env := jstest.Start(b, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	_, ajs := env.Connect(b, natsauth.Alerter)
	db := pgtest.New(b)
	now := time.Now().UTC()
	n := b.N
	for i := 0; i < n; i++ {
		onu(b, env.JS, int64(1+i/128), int64(i%128), "ONLINE", fp(-20), now)
	}
	run := startAlerter(b, ajs, db, nil, amURL)
	defer run.stop()
	waitCaughtUp(b, env.JS, db, streams.StreamONU, streams.ConsumerAlerterONU)
	lat := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		pon, id := int64(1+i/128), int64(i%128)
		start := time.Now()
		onu(b, env.JS, pon, id, "ONLINE", fp(-31.5), start.UTC())
		for deadline := start.Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
			if amHas(b, amURL, "onu_rx_low", strconv.FormatInt(id, 10), fmt.Sprintf("0/1/%d", pon)) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("alert %d not in Alertmanager after 30s", i)
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	b.ReportMetric(float64(p(0.5).Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99_ms")
	b.Logf("poll -> Alertmanager over %d alerts: p50 %s, p99 %s, max %s", len(lat), p(0.5), p(0.99), lat[len(lat)-1])
}

func amHas(b testing.TB, amURL, rule, onuID, pon string) bool {
	resp, err := http.Get(amURL + "/api/v2/alerts?filter=" + "alertname%3D%22" + rule + "%22&filter=onu_id%3D%22" + onuID + "%22&filter=pon%3D%22" + pon + "%22")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var alerts []json.RawMessage
	if json.NewDecoder(resp.Body).Decode(&alerts) != nil {
		return false
	}
	return len(alerts) > 0
}

// BenchmarkScale feeds real onu.changed events through JetStream to an
// alerter holding OLTs x 1,024 ONUs (8 PONs of 128; the fleet seeded
// through the alerter's own evaluation and persistence, SeedState), in
// cycles in which 10 % of the ONUs change status, and prints the consumer
// lag p50 and p99 (from each event's observed_at, its publish time, to its
// evaluation committed; histogram bucket bounds), events/s and the CPU of
// this process (the alerter and the embedded NATS server; Postgres not
// counted) per event. FACHO_ALERT_BENCH_OLTS sets the OLTs (default 100;
// the target is 1000), FACHO_ALERT_BENCH_CYCLES the cycles (default 3),
// FACHO_ALERT_BENCH_INTERVAL spreads each cycle over that time OLT by OLT
// as polls spread over a job's interval (0, the default: each cycle is one
// burst, the worst case). A spread run ends with one more cycle as a
// single burst and prints the alerter's throughput over it as a ratio to
// the spread arrival rate (capacity_ratio):
//
//	FACHO_ALERT_BENCH_OLTS=1000 FACHO_ALERT_BENCH_INTERVAL=5m go test -run '^$' -bench Scale -benchtime 1x -timeout 60m ./services/alerter/
func BenchmarkScale(b *testing.B) {
	olts := 100
	if v := os.Getenv("FACHO_ALERT_BENCH_OLTS"); v != "" {
		olts, _ = strconv.Atoi(v)
	}
	var interval time.Duration
	if v := os.Getenv("FACHO_ALERT_BENCH_INTERVAL"); v != "" {
		interval, _ = time.ParseDuration(v)
	}
	const perOLT, pons = 1024, 8
	cycles := 3
	if v := os.Getenv("FACHO_ALERT_BENCH_CYCLES"); v != "" {
		cycles, _ = strconv.Atoi(v)
	}
	env := jstest.Start(b, streams.Options{Storage: jetstream.FileStorage}, jstest.WithAuth())
	_, ajs := env.Connect(b, natsauth.Alerter)
	db := pgtest.New(b)
	ctx := context.Background()
	at := time.Now().UTC()
	pub := func(olt string, pon, id int64, status string, at time.Time) {
		ev := streams.ONUChanged{OLTID: olt, PonIndex: pon, ONUID: id, Change: streams.ONUStatusChanged,
			Current: streams.ONUState{Serial: fmt.Sprintf("HWTC%08d", id), Status: status, RxPowerDBm: fp(-20 - float64(id%5))}, ExecutionID: "e", ObservedAt: at}
		data, err := streams.Encode("bench", at, ev)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := env.JS.PublishAsync(streams.SubjectONU(olt, streams.ONUStatusChanged), data); err != nil {
			b.Fatal(err)
		}
	}
	flush := func() {
		select {
		case <-env.JS.PublishAsyncComplete():
		case <-time.After(5 * time.Minute):
			b.Fatal("publish stalled")
		}
	}
	// The starting fleet goes straight into the alerter's persisted state
	// through its own evaluation and persistence (alerter.SeedState), not
	// through the stream: consuming a million seed events one group at a
	// time took longer than the cycles measured.
	seedStart := time.Now()
	fleet := func(yield func(streams.ONUChanged) bool) {
		for o := 0; o < olts; o++ {
			for i := 0; i < perOLT; i++ {
				id := int64(i / pons)
				if !yield(streams.ONUChanged{OLTID: fmt.Sprintf("olt-%d", o), PonIndex: int64(i % pons), ONUID: id, Change: streams.ONUStatusChanged,
					Current: streams.ONUState{Serial: fmt.Sprintf("HWTC%08d", id), Status: "ONLINE", RxPowerDBm: fp(-20 - float64(id%5))}, ExecutionID: "e", ObservedAt: at}) {
					return
				}
			}
		}
	}
	if n, err := alerter.SeedState(ctx, db, fleet, 20000); err != nil || n != 0 {
		b.Fatalf("seed: %d transitions, %v", n, err)
	}
	seeded := time.Since(seedStart)
	reg := prometheus.NewRegistry()
	loadStart := time.Now()
	run := startAlerterWith(b, ajs, db, nil, "", reg)
	defer run.stop()
	// One event through the stream: the alerter has loaded the fleet and
	// is consuming before the cycles start.
	pub("olt-0", 0, 0, "ONLINE", time.Now().UTC())
	flush()
	waitCaughtUp(b, env.JS, db, streams.StreamONU, streams.ConsumerAlerterONU)
	b.Logf("seeded %d ONUs in %s (%.0f ONUs/s); alerter loaded them and caught up in %s", olts*perOLT, seeded.Round(time.Millisecond), float64(olts*perOLT)/seeded.Seconds(), time.Since(loadStart).Round(time.Millisecond))

	rng := rand.New(rand.NewSource(1))
	down := map[[3]int64]bool{}
	// cycle publishes one cycle: 10 % of each OLT's ONUs change status,
	// OLT after OLT, spread over spread (0: one burst).
	cycle := func(spread time.Duration) int {
		events := 0
		now := time.Now().UTC()
		for o := 0; o < olts; o++ {
			for k := 0; k < perOLT/10; k++ {
				i := rng.Intn(perOLT)
				key := [3]int64{int64(o), int64(i % pons), int64(i / pons)}
				st := "OFFLINE"
				if down[key] {
					st = "ONLINE"
				}
				down[key] = !down[key]
				pub(fmt.Sprintf("olt-%d", o), key[1], key[2], st, time.Now().UTC())
				events++
				if events%2000 == 0 {
					flush()
				}
			}
			if spread > 0 {
				flush()
				time.Sleep(time.Until(now.Add(time.Duration(o+1) * spread / time.Duration(olts))))
			}
		}
		flush()
		return events
	}
	lagBefore := histogram(b, reg, "facho_alerter_onu_lag_seconds")
	evalBefore := histogram(b, reg, "facho_alerter_eval_seconds")
	cpu0 := cpuTime()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	events := 0
	b.ResetTimer()
	start := time.Now()
	for c := 0; c < cycles; c++ {
		events += cycle(interval)
	}
	waitCaughtUp(b, env.JS, db, streams.StreamONU, streams.ConsumerAlerterONU)
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	lag := histogram(b, reg, "facho_alerter_onu_lag_seconds")
	p50, p99 := quantile(lag, lagBefore, 0.5), quantile(lag, lagBefore, 0.99)
	// eval: a group's wait for the engine's lock, evaluation and
	// transaction (the other consumers' messages included).
	eval := histogram(b, reg, "facho_alerter_eval_seconds")
	e50, e99 := quantile(eval, evalBefore, 0.5), quantile(eval, evalBefore, 0.99)
	var firing int
	_ = db.QueryRow(ctx, `SELECT count(*) FROM alerter_state WHERE kind = 'alert'`).Scan(&firing)
	rate := float64(events) / elapsed.Seconds()
	b.ReportMetric(p50, "lag_p50_s")
	b.ReportMetric(p99, "lag_p99_s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(events), "cpu_us/event")
	b.ReportMetric(rate, "events/s")
	b.Logf("%d OLTs x %d ONUs, %d cycles of 10 %% status changes (%d events, cycle spread over %s) in %s: %.0f events/s, consumer lag p50 <= %.3f s, p99 <= %.3f s, CPU %.1f us/event (alerter + embedded NATS; Postgres not counted), %d alerts active or held; lock + evaluation + transaction p50 <= %.4f s, p99 <= %.4f s",
		olts, perOLT, cycles, events, interval, elapsed.Round(time.Millisecond), rate, p50, p99, float64(cpu.Microseconds())/float64(events), firing, e50, e99)
	if mfs, err := reg.Gather(); err == nil {
		byState := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() == "facho_alerter_transitions_total" {
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "state" {
							byState[l.GetValue()] += m.GetCounter().GetValue()
						}
					}
				}
			}
		}
		b.Logf("alert events decided since start: %v", byState)
	}
	b.Logf("Go runtime over the cycles: %d garbage collections, %.1f %% of the CPU in the collector since start, heap %d MiB at the end",
		ms1.NumGC-ms0.NumGC, 100*ms1.GCCPUFraction, ms1.HeapAlloc>>20)
	// The alerts read model (another consumer of the same process): how
	// far behind it is when the evaluation has caught up.
	alertsBehind := streamLast(b, env.JS, streams.StreamAlert)
	if cp, err := projection.Checkpoint(ctx, db, streams.ConsumerAlerterAlerts); err == nil {
		alertsBehind -= cp
	}
	waitStart := time.Now()
	waitCaughtUp(b, env.JS, db, streams.StreamAlert, streams.ConsumerAlerterAlerts)
	b.Logf("alerts read model: %d alert events behind when the evaluation caught up, caught up %s later", alertsBehind, time.Since(waitStart).Round(time.Millisecond))
	if interval <= 0 {
		return
	}
	// Capacity: one more cycle as a single burst; the alerter's throughput
	// over it against the spread cycles' arrival rate.
	burstStart := time.Now()
	bcpu0 := cpuTime()
	n := cycle(0)
	waitCaughtUp(b, env.JS, db, streams.StreamONU, streams.ConsumerAlerterONU)
	bt := float64(n) / time.Since(burstStart).Seconds()
	b.ReportMetric(bt/rate, "capacity_ratio")
	b.Logf("capacity: a burst cycle of %d events evaluated at %.0f events/s (CPU %.1f us/event) = %.2f x the spread arrival rate of %.0f events/s",
		n, bt, float64((cpuTime()-bcpu0).Microseconds())/float64(n), bt/rate, rate)
}

func streamLast(b testing.TB, js jetstream.JetStream, stream string) uint64 {
	b.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return info.State.LastSeq
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitCaughtUp waits until consumer's checkpoint reaches the stream's last
// sequence.
func waitCaughtUp(b testing.TB, js jetstream.JetStream, db *pgxpool.Pool, stream, consumer string) {
	b.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	last := info.State.LastSeq
	for deadline := time.Now().Add(30 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if cp, err := projection.Checkpoint(ctx, db, consumer); err == nil && cp >= last {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s did not reach seq %d", consumer, last)
		}
	}
}

type bucket struct {
	le    float64
	count uint64
}

func histogram(b testing.TB, reg *prometheus.Registry, name string) []bucket {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			h := mf.GetMetric()[0].GetHistogram()
			var out []bucket
			for _, bk := range h.GetBucket() {
				out = append(out, bucket{bk.GetUpperBound(), bk.GetCumulativeCount()})
			}
			return append(out, bucket{-1, h.GetSampleCount()})
		}
	}
	return nil
}

// quantile is the upper bound of the bucket holding quantile q of the
// samples added between before and after.
func quantile(after, before []bucket, q float64) float64 {
	if len(after) == 0 {
		return -1
	}
	sub := func(i int) uint64 {
		if i < len(before) {
			return after[i].count - before[i].count
		}
		return after[i].count
	}
	total := sub(len(after) - 1)
	for i := 0; i < len(after)-1; i++ {
		if float64(sub(i)) >= q*float64(total) {
			return after[i].le
		}
	}
	return after[len(after)-2].le
}
