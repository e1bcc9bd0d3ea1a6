// Package replay reads Facho's streams back: Read walks a range of one
// stream in order (an ephemeral ordered consumer, nothing acked, nothing
// changed on the server), and Rebuild replays a registered read model
// (projection.ReadModel) into a shadow schema, compares it with the live
// tables and swaps it in while the live projections run (see Rebuild).
//
// The facho command's replay, rebuild, export and tail subcommands are
// built on it; an observer identity is enough for everything but the
// database part.
package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Position is where a read starts: a stream sequence, or the first message
// at or after a time. The zero Position is the stream's first message.
type Position struct {
	Seq  uint64
	Time time.Time
}

// IsZero reports whether p is the stream's start.
func (p Position) IsZero() bool { return p.Seq == 0 && p.Time.IsZero() }

func (p Position) String() string {
	switch {
	case p.Seq > 0:
		return fmt.Sprintf("seq %d", p.Seq)
	case !p.Time.IsZero():
		return p.Time.UTC().Format(time.RFC3339Nano)
	}
	return "start"
}

// Range is a slice of one stream.
type Range struct {
	Stream string
	From   Position
	// To is the last message read: a sequence (inclusive) or a time (the
	// first message after it ends the read). Zero: the stream's last
	// message when the read starts; a live stream does not keep it going.
	To Position
	// Subjects filters the messages (NATS wildcards); none: every subject.
	Subjects []string
	// Batch is how many messages one pull asks for (default 1024).
	Batch int
	// ResetAttempts bounds how often the read's ordered consumer is made
	// again when making it fails (the server or the connection is gone),
	// after 1, 2, 4, 8, then 10 s each: past them the read fails with the
	// error instead of waiting for the server (nats.go's default) without
	// end. 0: DefaultResetAttempts.
	ResetAttempts int
}

// DefaultResetAttempts is Range.ResetAttempts' default: 25 s of backoff
// and up to 10 s per attempt, so a read gives up on a lost server within
// about a minute and a half.
const DefaultResetAttempts = 6

// Stats says what a read did.
type Stats struct {
	Messages uint64
	Bytes    uint64
	FirstSeq uint64
	LastSeq  uint64
}

// End returns the last sequence a read of r stops at (To.Seq, or the
// stream's last sequence now) and the stream's first sequence.
func End(ctx context.Context, js jetstream.JetStream, r Range) (first, last uint64, err error) {
	s, err := js.Stream(ctx, r.Stream)
	if err != nil {
		return 0, 0, fmt.Errorf("stream %s: %w", r.Stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("stream %s info: %w", r.Stream, err)
	}
	last = info.State.LastSeq
	if r.To.Seq > 0 && r.To.Seq < last {
		last = r.To.Seq
	}
	return info.State.FirstSeq, last, nil
}

// Read calls fn for each message of r in stream order, until the end of r
// or ctx ends (then it returns ctx's error). fn's error stops the read and
// is returned. The message is only valid during the call (ordered
// consumers need no ack).
func Read(ctx context.Context, js jetstream.JetStream, r Range, fn func(jetstream.Msg) error) (Stats, error) {
	return ReadMeta(ctx, js, r, func(m jetstream.Msg, _ *jetstream.MsgMetadata) error { return fn(m) })
}

// ReadMeta is Read for a caller that needs each message's metadata
// (sequence, time): fn gets it parsed once, with the message.
func ReadMeta(ctx context.Context, js jetstream.JetStream, r Range, fn func(jetstream.Msg, *jetstream.MsgMetadata) error) (Stats, error) {
	var st Stats
	_, end, err := End(ctx, js, r)
	if err != nil {
		return st, err
	}
	if end == 0 || (r.From.Seq > 0 && r.From.Seq > end) {
		return st, nil
	}
	attempts := r.ResetAttempts
	if attempts <= 0 {
		attempts = DefaultResetAttempts
	}
	// The ordered consumer is made again at each pull (nats.go), so a lost
	// server shows at the next pull, as a failed re-creation.
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: r.Subjects, ReplayPolicy: jetstream.ReplayInstantPolicy, MaxResetAttempts: attempts}
	switch {
	case r.From.Seq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, r.From.Seq
	case !r.From.Time.IsZero():
		t := r.From.Time
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	default:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	cons, err := js.OrderedConsumer(ctx, r.Stream, cfg)
	if err != nil {
		return st, fmt.Errorf("ordered consumer on %s: %w", r.Stream, err)
	}
	defer func() {
		// Ephemeral, but deleted now rather than left to the server's
		// inactivity threshold.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if info := cons.CachedInfo(); info != nil {
			_ = js.DeleteConsumer(dctx, r.Stream, info.Name)
		}
	}()
	batch := r.Batch
	if batch <= 0 {
		batch = 1024
	}
	// handle reports whether the read is over after m.
	handle := func(m jetstream.Msg) (bool, error) {
		meta, err := m.Metadata()
		if err != nil {
			return true, fmt.Errorf("message metadata on %s: %w", r.Stream, err)
		}
		seq := meta.Sequence.Stream
		if seq > end || (!r.To.Time.IsZero() && meta.Timestamp.After(r.To.Time)) {
			return true, nil
		}
		if err := fn(m, meta); err != nil {
			return true, err
		}
		st.Messages++
		st.Bytes += uint64(len(m.Data()))
		if st.FirstSeq == 0 {
			st.FirstSeq = seq
		}
		st.LastSeq = seq
		// NumPending is what matched after m when it was delivered: zero
		// means nothing older than now is left (a filter may match no
		// message up to end).
		return seq >= end || meta.NumPending == 0, nil
	}
	// Pulls that do not wait: an empty pull is the end of what the
	// stream holds (a range past it, or a filter matching nothing more).
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		b, err := cons.FetchNoWait(batch)
		if err != nil {
			return st, fmt.Errorf("read %s: %w", r.Stream, err)
		}
		got := 0
		for m := range b.Messages() {
			got++
			done, err := handle(m)
			if err != nil || done {
				// Drain what this pull already holds.
				for range b.Messages() {
				}
				return st, err
			}
		}
		if err := b.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return st, fmt.Errorf("read %s: %w", r.Stream, err)
		}
		if got == 0 {
			return st, nil
		}
	}
}
