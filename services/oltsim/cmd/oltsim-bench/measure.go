package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/services/oltsim"
)

const huaweiONUTable = ".1.3.6.1.4.1.2011.6.128.1.1.2"

type bench struct {
	o   options
	out io.Writer
	log zerolog.Logger

	echoRTTps   float64 // raw UDP echo round trips per second
	trivialVBps float64 // gosnmp GET of one scalar, varbinds per second
}

// cpu returns user+system CPU of this process and of waited-for children.
func cpu() (self, children time.Duration) {
	var ru syscall.Rusage
	conv := func(tv syscall.Timeval) time.Duration {
		return time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
	}
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = conv(ru.Utime) + conv(ru.Stime)
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		children = conv(ru.Utime) + conv(ru.Stime)
	}
	return
}

// result of one measurement.
type result struct {
	name               string
	varbinds, requests int64
	wall, cpuSelf      time.Duration
	cpuChildren        time.Duration
}

func (r result) print(w io.Writer, b *bench) {
	vbps := float64(r.varbinds) / r.wall.Seconds()
	line := fmt.Sprintf("%-44s %9d varbinds %7.2fs wall  %10.0f varbinds/s", r.name, r.varbinds, r.wall.Seconds(), vbps)
	if r.cpuSelf > 0 {
		line += fmt.Sprintf("  %10.0f varbinds/CPU-s (this process)", float64(r.varbinds)/r.cpuSelf.Seconds())
	}
	if r.cpuChildren > 0 {
		line += fmt.Sprintf(", walkers' CPU %.2fs", r.cpuChildren.Seconds())
	}
	if r.requests > 0 && b.echoRTTps > 0 {
		line += fmt.Sprintf("  | %.0f req/s = %.2f x UDP echo", float64(r.requests)/r.wall.Seconds(), float64(r.requests)/r.wall.Seconds()/b.echoRTTps)
	}
	if b.trivialVBps > 0 && r.requests > 0 {
		line += fmt.Sprintf(", %.1f x trivial-GET varbinds/s", vbps/b.trivialVBps)
	}
	fmt.Fprintln(w, line)
}

// measure runs work on o.walkers goroutines until at least o.seconds passed.
// work returns varbinds and requests done in one unit.
func (b *bench) measure(ctx context.Context, name string, walkers int, work func(ctx context.Context, worker int) (int64, int64, error)) (result, error) {
	var vbs, reqs atomic.Int64
	dl := time.Now().Add(time.Duration(b.o.seconds * float64(time.Second)))
	s0, c0 := cpu()
	start := time.Now()
	var wg sync.WaitGroup
	errc := make(chan error, walkers)
	for w := 0; w < walkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(dl) && ctx.Err() == nil {
				v, r, err := work(ctx, w)
				if err != nil {
					errc <- err
					return
				}
				vbs.Add(v)
				reqs.Add(r)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	s1, c1 := cpu()
	close(errc)
	if err := <-errc; err != nil {
		return result{}, fmt.Errorf("%s: %w", name, err)
	}
	return result{name: name, varbinds: vbs.Load(), requests: reqs.Load(), wall: wall, cpuSelf: s1 - s0, cpuChildren: c1 - c0}, nil
}

func newClient(addr *net.UDPAddr, maxRep int) (*gosnmp.GoSNMP, error) {
	g := &gosnmp.GoSNMP{Target: addr.IP.String(), Port: uint16(addr.Port), Community: "public",
		Version: gosnmp.Version2c, Timeout: 5 * time.Second, Retries: 1, MaxRepetitions: uint32(maxRep)}
	if err := g.Connect(); err != nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	return g, nil
}

// baselines measures raw UDP echo and a trivial gosnmp GET in this run.
func (b *bench) baselines(ctx context.Context) error {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return fmt.Errorf("echo listen: %w", err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, a, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteToUDPAddrPort(buf[:n], a)
		}
	}()
	conns := make([]*net.UDPConn, b.o.walkers)
	for i := range conns {
		c, err := net.DialUDP("udp", nil, pc.LocalAddr().(*net.UDPAddr))
		if err != nil {
			return fmt.Errorf("echo dial: %w", err)
		}
		defer c.Close()
		conns[i] = c
	}
	payload := make([]byte, 100)
	r, err := b.measure(ctx, "baseline: raw UDP echo 100 B", b.o.walkers, func(ctx context.Context, w int) (int64, int64, error) {
		buf := make([]byte, 2048)
		for i := 0; i < 100; i++ {
			if _, err := conns[w].Write(payload); err != nil {
				return 0, 0, err
			}
			if _, err := conns[w].Read(buf); err != nil {
				return 0, 0, err
			}
		}
		return 100, 100, nil
	})
	if err != nil {
		return err
	}
	b.echoRTTps = float64(r.requests) / r.wall.Seconds()
	fmt.Fprintf(b.out, "%-44s %9d round trips %5.2fs wall  %10.0f round trips/s (%d clients)\n", r.name, r.requests, r.wall.Seconds(), b.echoRTTps, b.o.walkers)

	f, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "trivial", Listen: "127.0.0.1:0",
		Community: "public", Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 1}}}}, b.log)
	if err != nil {
		return err
	}
	defer f.Close()
	clients := make([]*gosnmp.GoSNMP, b.o.walkers)
	for i := range clients {
		if clients[i], err = newClient(f.OLT("trivial").Addr(), b.o.maxRep); err != nil {
			return err
		}
		defer clients[i].Conn.Close()
	}
	r, err = b.measure(ctx, "baseline: gosnmp GET sysName.0", b.o.walkers, func(ctx context.Context, w int) (int64, int64, error) {
		for i := 0; i < 100; i++ {
			if _, err := clients[w].Get([]string{".1.3.6.1.2.1.1.5.0"}); err != nil {
				return 0, 0, err
			}
		}
		return 100, 100, nil
	})
	if err != nil {
		return err
	}
	b.trivialVBps = float64(r.varbinds) / r.wall.Seconds()
	r.print(b.out, &bench{})
	return nil
}

// gosnmpWalk walks table on olts chosen by pick, one client per worker.
func (b *bench) gosnmpWalk(ctx context.Context, name string, pick func(worker, round int) *oltsim.OLT) (result, error) {
	rounds := make([]int, b.o.walkers)
	return b.measure(ctx, name, b.o.walkers, func(ctx context.Context, w int) (int64, int64, error) {
		o := pick(w, rounds[w])
		rounds[w]++
		g, err := newClient(o.Addr(), b.o.maxRep)
		if err != nil {
			return 0, 0, err
		}
		defer g.Conn.Close()
		var vbs, reqs int64
		err = g.BulkWalk(huaweiONUTable, func(gosnmp.SnmpPDU) error { vbs++; return nil })
		reqs = (vbs + int64(b.o.maxRep) - 1) / int64(b.o.maxRep)
		return vbs, reqs, err
	})
}

// netsnmpWalk runs snmpbulkwalk processes, one per worker at a time.
func (b *bench) netsnmpWalk(ctx context.Context, name string, pick func(worker, round int) *oltsim.OLT) (result, error) {
	bin, err := exec.LookPath("snmpbulkwalk")
	if err != nil || !b.o.netsnmp {
		return result{}, nil
	}
	rounds := make([]int, b.o.walkers)
	return b.measure(ctx, name, b.o.walkers, func(ctx context.Context, w int) (int64, int64, error) {
		o := pick(w, rounds[w])
		rounds[w]++
		cmd := exec.CommandContext(ctx, bin, "-v2c", "-c", "public", "-On", "-Oq", fmt.Sprintf("-Cr%d", b.o.maxRep),
			fmt.Sprintf("127.0.0.1:%d", o.Addr().Port), huaweiONUTable)
		out, err := cmd.StdoutPipe()
		if err != nil {
			return 0, 0, err
		}
		if err := cmd.Start(); err != nil {
			return 0, 0, err
		}
		lines := int64(0)
		buf := make([]byte, 64<<10)
		for {
			n, err := out.Read(buf)
			for _, c := range buf[:n] {
				if c == '\n' {
					lines++
				}
			}
			if err != nil {
				break
			}
		}
		if err := cmd.Wait(); err != nil {
			return 0, 0, fmt.Errorf("snmpbulkwalk: %w", err)
		}
		return lines, (lines + int64(b.o.maxRep) - 1) / int64(b.o.maxRep), nil
	})
}
