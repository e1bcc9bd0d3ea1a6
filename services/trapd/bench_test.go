package trapd

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// benchEnv is a receiver with n OLTs at 127.0.1.1..127.0.1.n (loopback
// aliases: each OLT its own source address) and a consumer timing when
// each trap's trap.received is stored.
type benchEnv struct {
	*env
	conns []*net.UDPConn
	mu    sync.Mutex
	seen  map[string]time.Time // marker -> when its event was read
}

func newBenchEnv(b *testing.B, n int, cfg Config) *benchEnv {
	b.Helper()
	e := &benchEnv{env: newEnv(b), seen: map[string]time.Time{}}
	for i := range n {
		e.addOLT(b, fmt.Sprintf("olt-%d", i), fmt.Sprintf("127.0.1.%d", i+1), community)
	}
	e.start(b, cfg)
	for i := range n {
		c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(fmt.Sprintf("127.0.1.%d", i+1))}, e.addr)
		if err != nil {
			b.Skipf("cannot send from 127.0.1.%d (loopback aliases): %v", i+1, err)
		}
		_ = c.SetWriteBuffer(4 << 20)
		b.Cleanup(func() { c.Close() })
		e.conns = append(e.conns, c)
	}
	cons, err := e.JS.OrderedConsumer(e.ctx, streams.StreamTrap, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.SubjectsTrap}, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		now := time.Now()
		env, err := streams.DecodeEnvelope(m.Data())
		if err != nil || env.Type != streams.TypeTrapReceived {
			return
		}
		ev := decodeData[streams.TrapReceived](b, env)
		for _, vb := range ev.Varbinds {
			if vb.OID == benchMarkerOID {
				e.mu.Lock()
				e.seen[vb.Value] = now
				e.mu.Unlock()
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cc.Stop)
	return e
}

const benchMarkerOID = "1.3.6.1.4.1.99999.1.0"

// trap is a mapped Huawei state-change trap carrying marker.
func benchTrap(b testing.TB, marker string) []byte {
	return v2cTrap(b, community, hwStateTrap, false, intVB(hwRunStatus+".4194304000.1", 2),
		gosnmp.SnmpPDU{Name: "." + benchMarkerOID, Type: gosnmp.OctetString, Value: []byte(marker)})
}

func (e *benchEnv) stored(marker string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.seen[marker]
	return t, ok
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkTrapThroughput sends 5,000 traps/s for 3 s, spread over 100
// OLTs (each its own source address), every trap mapped (2 events), and
// reports whether all were stored (lost must be 0), the rate reached, the
// time from send to trap.received stored (p50, p99), and the process's
// CPU per trap: receiver, embedded JetStream and the senders together,
// an upper bound of the receiver's own.
//
//	go test -run '^$' -bench TrapThroughput -benchtime 1x ./services/trapd/
func BenchmarkTrapThroughput(b *testing.B) {
	const olts, rate, seconds = 100, 5000, 3
	e := newBenchEnv(b, olts, Config{})
	total := rate * seconds
	for range b.N {
		e.mu.Lock()
		clear(e.seen)
		e.mu.Unlock()
		sent := make(map[string]time.Time, total)
		cpu0, t0 := cpuTime(), time.Now()
		tick := time.NewTicker(time.Millisecond)
		for i := 0; i < total; {
			<-tick.C
			due := int(time.Since(t0).Seconds()*rate) - i
			for ; due > 0 && i < total; due-- {
				m := strconv.Itoa(i)
				sent[m] = time.Now()
				if _, err := e.conns[i%olts].Write(benchTrap(b, m)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		}
		tick.Stop()
		sendDur := time.Since(t0)
		deadline := time.Now().Add(30 * time.Second)
		for {
			e.mu.Lock()
			n := len(e.seen)
			e.mu.Unlock()
			if n == total || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cpu := cpuTime() - cpu0
		var lat []time.Duration
		for m, at := range sent {
			if got, ok := e.stored(m); ok {
				lat = append(lat, got.Sub(at))
			}
		}
		b.ReportMetric(float64(total-len(lat)), "lost")
		b.ReportMetric(float64(total)/sendDur.Seconds(), "traps/s")
		b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50_stored_ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99_stored_ms")
		b.ReportMetric(float64(cpu.Microseconds())/float64(total), "cpu_us/trap")
		b.ReportMetric(e.dropped(dropRateLimited), "rate_limited")
	}
}

// BenchmarkTrapFlood: one OLT floods 50,000 traps/s for 3 s while another
// sends one trap every 20 ms; the other's latency (send to trap.received
// stored) is measured with the flood and, in the same run, without it
// (the baseline). Reports both p99s, their ratio and the other's losses
// (must be 0); the flood is shed by its source's token bucket.
//
//	go test -run '^$' -bench TrapFlood -benchtime 1x ./services/trapd/
func BenchmarkTrapFlood(b *testing.B) {
	e := newBenchEnv(b, 2, Config{})
	probe := func(ctx context.Context, tag string) (lat []time.Duration, lost int) {
		sent := map[string]time.Time{}
		for i := 0; ctx.Err() == nil; i++ {
			m := tag + strconv.Itoa(i)
			sent[m] = time.Now()
			if _, err := e.conns[1].Write(benchTrap(b, m)); err != nil {
				b.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		for m, at := range sent {
			if got, ok := e.stored(m); ok {
				lat = append(lat, got.Sub(at))
			} else {
				lost++
			}
		}
		return lat, lost
	}
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		base, _ := probe(ctx, "base-")
		cancel()

		ctx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
		var wg sync.WaitGroup
		flooded := 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			pkt := benchTrap(b, "flood")
			t0 := time.Now()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for ctx.Err() == nil {
				<-tick.C
				for due := int(time.Since(t0).Seconds()*50000) - flooded; due > 0; due-- {
					_, _ = e.conns[0].Write(pkt)
					flooded++
				}
			}
		}()
		lat, lost := probe(ctx, "flood-")
		wg.Wait()
		cancel()
		b.ReportMetric(float64(flooded)/3, "flood_traps/s")
		b.ReportMetric(float64(percentile(base, 0.99).Microseconds())/1000, "baseline_p99_ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "flooded_p99_ms")
		b.ReportMetric(float64(percentile(lat, 1).Microseconds())/1000, "flooded_max_ms")
		if p := percentile(base, 0.99); p > 0 {
			b.ReportMetric(float64(percentile(lat, 0.99))/float64(p), "p99_ratio")
		}
		b.ReportMetric(float64(lost), "other_lost")
		b.ReportMetric(e.dropped(dropRateLimited), "flood_shed")
	}
}
