package oltsim

import (
	"math/rand/v2"
	"time"
)

// lifeEnabled tells whether any Life rate is set.
func (l Life) enabled() bool {
	return l.OfflinePercent > 0 || l.OnlinePercent > 0 || l.RxDriftDBm > 0 ||
		l.AddPercent > 0 || l.RemovePercent > 0 || l.RebootPercent > 0
}

// startLife starts automatic ticks when the OLT's Life has an Interval.
func (o *OLT) startLife() {
	if o.prof == nil || o.cfg.Life.Interval <= 0 || !o.cfg.Life.enabled() {
		return
	}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		t := time.NewTicker(o.cfg.Life.Interval)
		defer t.Stop()
		for {
			select {
			case <-o.ctx.Done():
				return
			case <-t.C:
				o.Tick()
			}
		}
	}()
}

// Tick advances the OLT's simulated life by one step using its Life rates.
// Step k draws from an RNG seeded with (Seed, k), so the sequence of states
// is the same on every run. It returns the tick number reached. Recordings
// do not change.
func (o *OLT) Tick() uint64 {
	if o.prof == nil {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tick++
	o.mutableONUs()
	l := o.cfg.Life
	rng := rand.New(rand.NewPCG(uint64(o.cfg.Seed), 0x6c696665<<32|o.tick))
	pct := func(p float64) bool { return p > 0 && rng.Float64()*100 < p }
	for i := range o.onus {
		s := &o.onus[i]
		switch {
		case s.online && pct(l.OfflinePercent):
			s.online = false
			s.downCause = [2]uint8{2, 13}[rng.IntN(2)]
			o.onuChanged(s)
		case !s.online && pct(l.OnlinePercent):
			s.online = true
			o.onuChanged(s)
		}
		if s.online && l.RxDriftDBm > 0 {
			d := int((rng.Float64()*2 - 1) * l.RxDriftDBm * 100)
			s.rxCenti = int16(min(-800, max(-2800, int(s.rxCenti)+d)))
		}
	}
	if l.AddPercent > 0 || l.RemovePercent > 0 {
		for _, pp := range o.prof.ports(o.cfg.Shape) {
			if pct(l.RemovePercent) {
				o.removeOne(rng, pp)
			}
			if pct(l.AddPercent) {
				o.addOne(rng, pp)
			}
		}
		sortONUs(o.onus)
	}
	if pct(l.RebootPercent) {
		o.boot.Store(time.Now().UnixNano())
	}
	o.mib.Store(nil) // rebuilt from the new state on the next request
	return o.tick
}

func (o *OLT) removeOne(rng *rand.Rand, pp ponPort) {
	var idx []int
	for i := range o.onus {
		if o.onus[i].Slot() == pp.slot && o.onus[i].Port() == pp.port {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	k := idx[rng.IntN(len(idx))]
	o.onus = append(o.onus[:k], o.onus[k+1:]...)
}

func (o *OLT) addOne(rng *rand.Rand, pp ponPort) {
	used := make(map[int]bool)
	for i := range o.onus {
		if o.onus[i].Slot() == pp.slot && o.onus[i].Port() == pp.port {
			used[o.onus[i].ID()] = true
		}
	}
	for id := o.prof.firstONU; id < o.prof.firstONU+256; id++ {
		if !used[id] {
			o.onus = append(o.onus, newONUState(rng, pp.slot, pp.port, id))
			return
		}
	}
}

// Reboot restarts the simulated agent's uptime from zero.
func (o *OLT) Reboot() { o.boot.Store(time.Now().UnixNano()) }
