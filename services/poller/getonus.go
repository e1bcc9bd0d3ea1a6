package poller

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// The ONUs a get reads come from events, not from a database: the
// projector publishes onu.changed "discovered" on
// facho.onu.<olt_id>.discovered when a walk first finds an ONU. The poller
// folds them into an ONUSet kept in the KV bucket streams.BucketOLTSNMP
// (key onus.<olt_id>, with the last folded stream sequence), and at each
// get reads only the events after that sequence with an ordered consumer.
//
// Why here and not in NodeDue: an OLT has thousands of ONUs; a NodeDue with
// all of them would be stored in FACHO_SCHEDULE at every run of every get
// node (and near the 1 MB payload limit on large OLTs), and the planner
// would have to follow FACHO_ONU too. Why a KV snapshot and not only the
// stream: FACHO_ONU keeps events for EventsMaxAge (30 days); an ONU
// discovered earlier would drop out of the gets silently. The snapshot
// outlives the stream and is shared by every poller replica; the lease
// makes one get per OLT at a time its only writer.

// onuInstance is one discovered ONU: its key and its row index.
type onuInstance struct {
	pon, onu int64
	index    string
}

// maxONUFold bounds the events folded in one get, so a huge backlog
// cannot hold the OLT's lease for long; the rest are folded next time.
const maxONUFold = 200000

// discoveredONUs returns the OLT's known ONUs, in (pon, onu) order, after
// folding the discovered events published since the snapshot.
func (p *poller) discoveredONUs(ctx context.Context, node streams.NodeDue) ([]onuInstance, error) {
	kv, err := p.oltKV(ctx)
	if err != nil {
		return nil, err
	}
	key := streams.KeyONUSet(node.OLTID)
	set := streams.ONUSet{PONs: map[string][]int64{}}
	entry, err := kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return nil, fmt.Errorf("read %s/%s: %w", streams.BucketOLTSNMP, key, err)
	default:
		if err := json.Unmarshal(entry.Value(), &set); err != nil {
			// A broken snapshot is rebuilt from the stream.
			p.log.Warn().Err(err).Str("key", key).Msg("onu set unreadable: rebuilding it from the stream")
			set = streams.ONUSet{PONs: map[string][]int64{}}
		}
		if set.PONs == nil {
			set.PONs = map[string][]int64{}
		}
	}
	added, err := p.foldDiscovered(ctx, node.OLTID, &set)
	if err != nil {
		return nil, err
	}
	if added > 0 {
		set.UpdatedAt = time.Now().UTC()
		b, err := json.Marshal(set)
		if err == nil {
			_, err = kv.Put(ctx, key, b)
		}
		if err != nil {
			// Only a cache: the next get folds the same events again.
			p.log.Warn().Err(err).Str("key", key).Msg("store onu set")
		}
	}
	spec, err := streams.ResolveIndex(node.IndexScheme, node.Index)
	if err != nil {
		return nil, err
	}
	return instances(spec, set)
}

// foldDiscovered adds to set the discovered events of olt after set.Seq.
func (p *poller) foldDiscovered(ctx context.Context, olt string, set *streams.ONUSet) (added int, err error) {
	st, err := p.js.Stream(ctx, streams.StreamONU)
	if err != nil {
		return 0, fmt.Errorf("read discovered onus of %s: %w", olt, err)
	}
	info := st.CachedInfo()
	if set.Seq > 0 && (!set.StreamCreated.Equal(info.Created) || set.Seq > info.State.LastSeq) {
		// The snapshot is of another FACHO_ONU (the stream was
		// recreated): fold it again from the start.
		p.log.Warn().Uint64("snapshot_seq", set.Seq).Uint64("stream_last_seq", info.State.LastSeq).Msg("onu set of a recreated FACHO_ONU: rebuilding it")
		*set = streams.ONUSet{PONs: map[string][]int64{}}
		added = 1 // store the rebuilt set even if nothing is folded
	}
	set.StreamCreated = info.Created
	subjects := []string{streams.SubjectONU(olt, streams.ONUDiscovered), streams.SubjectONU(olt, streams.ONURemoved)}
	if set.Seq > 0 {
		// Nothing of this OLT since the snapshot (the usual get): no
		// consumer. Creating one makes the server count the pending
		// messages over every block since set.Seq, whatever the OLT: at
		// 1,000 OLTs that was most of NATS's CPU in a steady cycle.
		newer, err := newerThan(ctx, st, subjects, set.Seq)
		if err != nil {
			return added, fmt.Errorf("read discovered onus of %s: %w", olt, err)
		}
		if !newer {
			return added, nil
		}
	}
	// Every event of the OLT up to here is pending for the consumer below.
	end := info.State.LastSeq
	cfg := jetstream.OrderedConsumerConfig{
		// removed: a complete walk did not find the ONU (a get stops
		// reading it); found again, it is discovered again.
		FilterSubjects: subjects,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		// Deleted below when the fold ends; this only bounds how long
		// one outlives a poller that died folding.
		InactiveThreshold: 30 * time.Second,
	}
	if set.Seq > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = set.Seq + 1
	}
	cons, err := p.js.OrderedConsumer(ctx, streams.StreamONU, cfg)
	if err != nil {
		return added, fmt.Errorf("read discovered onus of %s: %w", olt, err)
	}
	defer func() {
		// One consumer per get: left to the inactivity threshold, a
		// fleet's gets pile up thousands of them on FACHO_ONU, past the
		// server's consumer limit (every get then fails).
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if ci := cons.CachedInfo(); ci != nil && ci.Name != "" {
			_ = p.js.DeleteConsumer(dctx, streams.StreamONU, ci.Name)
		}
	}()
	ci, err := cons.Info(ctx)
	if err != nil {
		return added, fmt.Errorf("read discovered onus of %s: %w", olt, err)
	}
	left := min(int(ci.NumPending), maxONUFold)
	complete := int(ci.NumPending) <= maxONUFold
	for left > 0 {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		batch, err := cons.Fetch(min(left, 1000), jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			return added, fmt.Errorf("read discovered onus of %s: %w", olt, err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			left--
			meta, err := msg.Metadata()
			if err != nil {
				continue
			}
			set.Seq = meta.Sequence.Stream
			_, ev, err := streams.DecodeOn[streams.ONUChanged](msg.Subject(), msg.Data())
			if err != nil || ev.OLTID != olt || ev.PonIndex < 0 || ev.ONUID < 0 {
				p.log.Warn().Err(err).Uint64("stream_seq", meta.Sequence.Stream).Msg("discovered onu event skipped")
				continue
			}
			pon := strconv.FormatInt(ev.PonIndex, 10)
			ids := set.PONs[pon]
			i, found := slices.BinarySearch(ids, ev.ONUID)
			switch {
			case ev.Change == streams.ONURemoved && found:
				set.PONs[pon] = slices.Delete(ids, i, i+1)
				if len(set.PONs[pon]) == 0 {
					delete(set.PONs, pon)
				}
			case ev.Change != streams.ONURemoved && !found:
				set.PONs[pon] = slices.Insert(ids, i, ev.ONUID)
			}
			added++
		}
		err = batch.Error()
		cancel()
		if ctx.Err() != nil {
			return added, context.Cause(ctx)
		}
		if err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) {
			return added, fmt.Errorf("read discovered onus of %s: %w", olt, err)
		}
		if n == 0 {
			break // the stream's retention removed what was pending
		}
	}
	if complete && left <= 0 && end > set.Seq {
		// Folded every event of the OLT up to the stream's end as it was
		// before the consumer: the next fold starts there, not at this
		// OLT's last event (the consumer's count would cover every other
		// OLT's events since).
		set.Seq = end
		added++
	}
	return added, nil
}

// newerThan says whether one of subjects has a message after seq (the
// stream's last message per subject: an index lookup, no consumer).
func newerThan(ctx context.Context, st jetstream.Stream, subjects []string, seq uint64) (bool, error) {
	for _, subject := range subjects {
		m, err := st.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("last message of %s: %w", subject, err)
		}
		if m.Sequence > seq {
			return true, nil
		}
	}
	return false, nil
}

// instances lists the ONUs of set with their row index in scheme.
func instances(scheme streams.IndexSpec, set streams.ONUSet) ([]onuInstance, error) {
	format, err := scheme.Formatter()
	if err != nil {
		return nil, err
	}
	n := 0
	for _, ids := range set.PONs {
		n += len(ids)
	}
	out := make([]onuInstance, 0, n)
	for ponText, ids := range set.PONs {
		pon, err := strconv.ParseInt(ponText, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("onu set: pon %q: %w", ponText, err)
		}
		for _, id := range ids {
			idx, err := format(pon, id)
			if err != nil {
				return nil, err
			}
			out = append(out, onuInstance{pon: pon, onu: id, index: idx})
		}
	}
	slices.SortFunc(out, func(a, b onuInstance) int {
		if c := cmp.Compare(a.pon, b.pon); c != 0 {
			return c
		}
		return cmp.Compare(a.onu, b.onu)
	})
	return out, nil
}

// oltKV opens streams.BucketOLTSNMP once.
func (p *poller) oltKV(ctx context.Context) (jetstream.KeyValue, error) {
	p.oltKVMu.Lock()
	defer p.oltKVMu.Unlock()
	if p.oltKVBucket != nil {
		return p.oltKVBucket, nil
	}
	kv, err := p.js.KeyValue(ctx, streams.BucketOLTSNMP)
	if err != nil {
		return nil, fmt.Errorf("kv bucket %s: %w (run facho streams provision)", streams.BucketOLTSNMP, err)
	}
	p.oltKVBucket = kv
	return kv, nil
}
