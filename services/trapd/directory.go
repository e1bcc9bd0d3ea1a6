package trapd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// oltEntry is what the receiver knows of one OLT: its id, its community
// (opened: it is compared with each trap's, never logged) and the trap
// decoder of its vendor profile (nil: no profile, traps are kept raw).
type oltEntry struct {
	id        string
	community []byte
	decoder   *profiles.TrapDecoder
}

// snapshot is an immutable view of the configured OLTs by source address;
// the readers load it without a lock.
type snapshot struct {
	byIP map[netip.Addr][]*oltEntry
	olts int
}

// lookup returns the OLTs at addr.
func (s *snapshot) lookup(addr netip.Addr) []*oltEntry {
	if s == nil {
		return nil
	}
	return s.byIP[addr.Unmap()]
}

// directory folds the configuration stream into snapshots.
type directory struct {
	box     *secret.Box
	cat     *profiles.Catalogue
	log     zerolog.Logger
	cur     atomic.Pointer[snapshot]
	olts    map[string]streams.OLTUpserted
	brands  map[string]streams.BrandUpserted
	opened  map[string]openedCommunity // by OLT id
	onBuild func(olts int)
}

type openedCommunity struct {
	sealed string
	plain  []byte
}

func newDirectory(box *secret.Box, cat *profiles.Catalogue, log zerolog.Logger) *directory {
	d := &directory{box: box, cat: cat, log: log, olts: map[string]streams.OLTUpserted{},
		brands: map[string]streams.BrandUpserted{}, opened: map[string]openedCommunity{}}
	d.cur.Store(&snapshot{byIP: map[netip.Addr][]*oltEntry{}})
	return d
}

// apply folds one configuration event; it reports whether the directory
// changed.
func (d *directory) apply(subject string, data []byte) bool {
	env, err := streams.DecodeEnvelope(data)
	if err != nil {
		d.log.Warn().Err(err).Str("subject", subject).Msg("configuration event skipped")
		return false
	}
	switch env.Type {
	case streams.TypeOLTUpserted:
		var o streams.OLTUpserted
		if err := streams.DecodeData(env, &o); err != nil || o.ID == "" {
			d.log.Warn().Err(err).Str("subject", subject).Msg("olt.upserted skipped")
			return false
		}
		d.olts[o.ID] = o
	case streams.TypeOLTDeleted:
		var o streams.OLTDeleted
		if err := streams.DecodeData(env, &o); err != nil {
			return false
		}
		delete(d.olts, o.ID)
		delete(d.opened, o.ID)
	case streams.TypeBrandUpserted:
		var b streams.BrandUpserted
		if err := streams.DecodeData(env, &b); err != nil || b.ID == "" {
			d.log.Warn().Err(err).Str("subject", subject).Msg("brand.upserted skipped")
			return false
		}
		d.brands[b.ID] = b
	case streams.TypeBrandDeleted:
		var b streams.BrandDeleted
		if err := streams.DecodeData(env, &b); err != nil {
			return false
		}
		delete(d.brands, b.ID)
	default:
		return false
	}
	return true
}

// build makes a new snapshot from the folded configuration and swaps it
// in. An OLT whose community cannot be opened or whose address is not an
// IP address is left out (logged, without the community).
func (d *directory) build() {
	s := &snapshot{byIP: map[netip.Addr][]*oltEntry{}}
	decoders := map[string]*profiles.TrapDecoder{}
	for id, o := range d.olts {
		addr, err := netip.ParseAddr(o.IP)
		if err != nil {
			d.log.Warn().Str(telemetry.KeyOLT, id).Str("ip", o.IP).Msg("OLT address is not an IP address: its traps cannot be matched")
			continue
		}
		oc, ok := d.opened[id]
		if !ok || oc.sealed != o.CommunityEnc {
			plain, err := d.box.Open(o.CommunityEnc)
			if err != nil {
				d.log.Warn().Str(telemetry.KeyOLT, id).Msg("cannot open the OLT's sealed community: its traps are dropped")
				delete(d.opened, id)
				continue
			}
			oc = openedCommunity{sealed: o.CommunityEnc, plain: []byte(plain)}
			d.opened[id] = oc
		}
		e := &oltEntry{id: id, community: oc.plain}
		if pid := d.profileOf(o.BrandID); pid != "" {
			dec, ok := decoders[pid]
			if !ok {
				if p, found := d.cat.Get(pid); found && len(p.Traps) > 0 {
					dec = p.TrapDecoder()
				}
				decoders[pid] = dec
			}
			e.decoder = dec
		}
		addr = addr.Unmap()
		s.byIP[addr] = append(s.byIP[addr], e)
		s.olts++
	}
	d.cur.Store(s)
	if d.onBuild != nil {
		d.onBuild(s.olts)
	}
}

// profileOf is the vendor profile of a brand: the one it was made from,
// else a profile of the brand's id.
func (d *directory) profileOf(brandID string) string {
	b, ok := d.brands[brandID]
	if !ok {
		return ""
	}
	if b.Profile != "" {
		return b.Profile
	}
	if _, ok := d.cat.Get(b.ID); ok {
		return b.ID
	}
	return ""
}

// follow replays the OLTs and brands of the configuration stream into the
// directory, then keeps it current until ctx ends. ready is closed once
// the replay caught up (the receiver opens its socket then: a trap from a
// configured OLT is not dropped because its configuration was not read
// yet).
func (d *directory) follow(ctx context.Context, js jetstream.JetStream, ready chan<- struct{}) error {
	cons, err := js.OrderedConsumer(ctx, streams.StreamConfig, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.SubjectOLT("*"), streams.SubjectBrand("*")},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("trapd: follow the configuration: %w", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("trapd: configuration consumer info: %w", err)
	}
	caughtUp := info.NumPending == 0
	if caughtUp {
		d.build()
		close(ready)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("trapd: read the configuration: %w", err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			d.log.Warn().Err(err).Msg("read the configuration stream")
			t := time.NewTimer(200 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			continue
		}
		changed := d.apply(msg.Subject(), msg.Data())
		pending := uint64(1)
		if meta, err := msg.Metadata(); err == nil {
			pending = meta.NumPending
		}
		switch {
		case !caughtUp && pending == 0:
			caughtUp = true
			d.build()
			d.log.Info().Int("olts", d.cur.Load().olts).Msg("configuration replayed: receiving traps")
			close(ready)
		case caughtUp && changed:
			d.build()
		}
	}
}
