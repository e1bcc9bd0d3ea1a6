package planner

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// A get reads the ONUs its OLT's discoveries found (the poller folds the
// projector's onu.changed "discovered" events into the OLT's ONU set). Run
// before any is known, it has nothing to read: it would fail
// no_onus_known, and the OLT's first readings would wait for the get's
// next run, an interval later. So the planner holds a get node of an OLT
// with no ONU known in its OLT's queue (Queues.SetHold): the OLT's other
// nodes, its discovery first, go ahead of it, and the get is dispatched at
// the first tick after the OLT's first ONU is known, that is after its
// first discovery succeeded and the projector folded it (one second at
// most, Config.ONUKnownRecheck, after the first discovered event).
//
// "Known" is read where the poller reads it: the OLT's ONU set in
// streams.BucketOLTSNMP (written by the gets, it outlives the stream), or
// a discovered event of the OLT in FACHO_ONU (the last message of its
// subject: an index lookup, no consumer). Once known, an OLT stays known
// for the term (an OLT that loses every ONU later is read empty, and
// says so: empty_read); not known, it is looked up again at most every
// ONUKnownRecheck.
//
// The hold is bounded: only while ONUs are coming (see holdGet), and at
// most the get's interval past its scheduled time; then it is dispatched
// and fails no_onus_known if still nothing is known (an OLT whose
// discovery failed, or found nothing: profile_mismatch), so a get that
// cannot read is seen failing instead of silently never running. Manual
// runs are never held.

// holdGet says whether d, a waiting node, is a get to hold because its
// OLT has no ONU known yet and one is coming: the OLT's first discovery
// has not ended (never run, waiting, running or between its retries),
// its last run was skipped (nothing read), or it has just succeeded and
// the projector is folding it (for Config.ONUFoldWait). An OLT without a discovery node, or whose
// discovery ended without success, has none coming: its gets run (and
// fail no_onus_known, visibly).
func (p *planner) holdGet(ctx context.Context, d DueNode, now time.Time) bool {
	if d.Manual || d.Spec.Kind != streams.KindGet {
		return false
	}
	if now.Sub(d.ScheduledAt) >= d.Spec.Interval() {
		return false // held long enough: it runs, and fails if still nothing is known
	}
	olt := d.Key.OLTID
	if p.known[olt] {
		return false
	}
	has, firstPending, lastRun, lastStatus := p.sched.Discoveries(olt)
	// A skipped discovery (stale behind a backlog, or its OLT
	// unavailable) read nothing and ended nothing: the next one is as
	// much to come as a first that never ran.
	coming := has && (firstPending || lastStatus == statusSkipped ||
		(lastStatus == statusSuccess && now.Sub(lastRun) < p.cfg.ONUFoldWait))
	if !coming {
		return false
	}
	return !p.onusKnown(ctx, olt, now, lastStatus == statusSuccess)
}

// idleRecheckFactor: while no discovery of a held get's OLT has just
// succeeded (its first one waiting or running, or skipped), its ONUs are
// looked up only every idleRecheckFactor x Config.ONUKnownRecheck (30 s
// by default). Nothing but a discovery brings them (or a manual run), and
// a lookup is a few JetStream requests: a fleet's first discovery holds
// thousands of gets at once, and looking each up every second was
// thousands of requests a second on NATS and a busy planner.
const idleRecheckFactor = 30

// onusKnown says whether the OLT has an ONU known to its gets (see above).
// folding: a discovery of the OLT has just succeeded, so its ONUs are
// being folded and are looked up every Config.ONUKnownRecheck. The first
// lookup of an OLT is at once (a planner that restarts finds the OLTs
// known before).
func (p *planner) onusKnown(ctx context.Context, olt string, now time.Time, folding bool) bool {
	if p.known[olt] {
		return true
	}
	if at, ok := p.knownChecked[olt]; ok && now.Sub(at) >= 0 {
		wait := p.cfg.ONUKnownRecheck
		if !folding {
			wait *= idleRecheckFactor
		}
		if now.Sub(at) < wait {
			return false
		}
	}
	p.knownChecked[olt] = now
	p.m.onuLookups.Inc()
	lctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
	defer cancel()
	known, err := p.lookupONUs(lctx, olt)
	if err != nil {
		// Not known for now: looked up again at the next recheck; the
		// hold is bounded anyway.
		p.log.Warn().Err(err).Str(telemetry.KeyOLT, olt).Msg("look up the known ONUs of the OLT")
		return false
	}
	if known {
		p.known[olt] = true
		delete(p.knownChecked, olt)
		p.log.Info().Str(telemetry.KeyOLT, olt).Msg("first ONUs of the OLT known: its gets run")
	}
	return known
}

// lookupONUs reads whether olt has an ONU in its ONU set or a discovered
// event in FACHO_ONU.
func (p *planner) lookupONUs(ctx context.Context, olt string) (bool, error) {
	// The handles are bound once (each bind is a request for the stream's
	// info); a bucket not created yet is looked for again next time.
	if p.onuKV == nil {
		kv, err := p.js.KeyValue(ctx, streams.BucketOLTSNMP)
		if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return false, err
		}
		p.onuKV = kv
	}
	if kv := p.onuKV; kv != nil {
		e, err := kv.Get(ctx, streams.KeyONUSet(olt))
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return false, err
		default:
			var set streams.ONUSet
			if json.Unmarshal(e.Value(), &set) == nil && len(set.PONs) > 0 {
				return true, nil
			}
		}
	}
	if p.onuStream == nil {
		st, err := p.js.Stream(ctx, streams.StreamONU)
		if err != nil {
			return false, err
		}
		p.onuStream = st
	}
	_, err := p.onuStream.GetLastMsgForSubject(ctx, streams.SubjectONU(olt, streams.ONUDiscovered))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	return err == nil, err
}

// forgetONUs drops what the planner knows of olt's ONUs (the OLT was
// deleted: a new OLT of the same id starts with none).
func (p *planner) forgetONUs(olt string) {
	delete(p.known, olt)
	delete(p.knownChecked, olt)
}
