package main

import (
	"context"
	"fmt"
	"time"

	"github.com/facho-olt/facho/services/oltsim"
)

// one: a single Huawei OLT with 4,096 ONUs (16 ports x 256).
func (b *bench) one(ctx context.Context) error {
	f, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "big", Listen: "127.0.0.1:0",
		Community: "public", Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 16, ONUsPerPort: 256}, Seed: 1}}}, b.log)
	if err != nil {
		return err
	}
	defer f.Close()
	o := f.OLT("big")
	fmt.Fprintf(b.out, "\n# one OLT, %d ONUs, walking %s (9 columns), max-repetitions %d, %d walkers\n", len(o.ONUs()), huaweiONUTable, b.o.maxRep, b.o.walkers)
	pick := func(int, int) *oltsim.OLT { return o }
	r, err := b.gosnmpWalk(ctx, "gosnmp BulkWalk (client in-process)", pick)
	if err != nil {
		return err
	}
	r.print(b.out, b)
	r, err = b.netsnmpWalk(ctx, "snmpbulkwalk (separate processes)", pick)
	if err != nil {
		return err
	}
	if r.name != "" {
		r.print(b.out, b)
	}
	rec := o.Record()
	fmt.Fprintf(b.out, "record: %d requests, %d responses, max concurrent %d, %.1f MB out\n", rec.Requests, rec.Responses, rec.MaxConcurrent, float64(rec.BytesOut)/1e6)
	return nil
}

// fleet: many OLTs of 1,024 ONUs each; a sample of them is walked.
func (b *bench) fleet(ctx context.Context) error {
	var cfg oltsim.FleetConfig
	for i := 0; i < b.o.fleetOLTs; i++ {
		cfg.OLTs = append(cfg.OLTs, oltsim.OLTConfig{Name: fmt.Sprintf("olt-%04d", i), Listen: "127.0.0.1:0",
			Community: "public", Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 4, ONUsPerPort: 256}, Seed: int64(i)})
	}
	s0, _ := cpu()
	start := time.Now()
	f, err := oltsim.Start(ctx, cfg, b.log)
	if err != nil {
		return err
	}
	defer f.Close()
	s1, _ := cpu()
	olts := f.OLTs()
	sample := min(b.o.fleetSample, len(olts))
	step := max(1, len(olts)/max(1, sample))
	fmt.Fprintf(b.out, "\n# fleet of %d OLTs x 1,024 ONUs: started in %v (%.2f CPU-s); walking a sample of %d OLTs round-robin, %d walkers\n",
		len(olts), time.Since(start).Round(time.Millisecond), (s1 - s0).Seconds(), sample, b.o.walkers)
	pick := func(w, round int) *oltsim.OLT {
		return olts[((round*b.o.walkers+w)%sample*step)%len(olts)]
	}
	// Tables are encoded on first use; warm the sample so the walks below
	// measure steady state.
	w0 := time.Now()
	for i := 0; i < sample; i++ {
		g, err := newClient(olts[i*step%len(olts)].Addr(), b.o.maxRep)
		if err != nil {
			return err
		}
		_, err = g.Get([]string{".1.3.6.1.2.1.1.5.0"})
		_ = g.Conn.Close()
		if err != nil {
			return fmt.Errorf("warm up: %w", err)
		}
	}
	fmt.Fprintf(b.out, "warm-up (first request builds the OLT's view): %v for %d OLTs\n", time.Since(w0).Round(time.Millisecond), sample)
	r, err := b.gosnmpWalk(ctx, "gosnmp BulkWalk (client in-process)", pick)
	if err != nil {
		return err
	}
	r.print(b.out, b)
	r, err = b.netsnmpWalk(ctx, "snmpbulkwalk (separate processes)", pick)
	if err != nil {
		return err
	}
	if r.name != "" {
		r.print(b.out, b)
	}
	walked, maxc := 0, 0
	for _, o := range olts {
		if rec := o.Record(); rec.Requests > 0 {
			walked++
			maxc = max(maxc, rec.MaxConcurrent)
		}
	}
	fmt.Fprintf(b.out, "OLTs walked: %d, highest per-OLT concurrency %d\n", walked, maxc)
	return nil
}
