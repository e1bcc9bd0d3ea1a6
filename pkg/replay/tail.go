package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/streams"
)

// Tail classes: what an operator can follow live.
const (
	ClassONU    = "onu"    // ONU changes (facho.onu.<olt>.<kind>)
	ClassExec   = "exec"   // execution lifecycle (facho.exec.<olt>.<phase>)
	ClassNotify = "notify" // notifications: violations, disabled OLTs, repeated failures
)

// TailFilter selects live events: an OLT id and a kind, both optional. A
// kind is a class (onu, exec, notify), an ONU change kind (discovered,
// status, updated), an execution phase (started, succeeded, failed,
// skipped, interrupted) or a notification kind (quota_violation,
// olt_disabled, repeated_failures).
type TailFilter struct {
	OLT  string
	Kind string
}

// TailEvent is one live event, with a one-line summary.
type TailEvent struct {
	Class   string          `json:"class"`
	Stream  string          `json:"stream"`
	Seq     uint64          `json:"seq"`
	Subject string          `json:"subject"`
	Time    time.Time       `json:"time"`
	OLT     string          `json:"olt_id"`
	Kind    string          `json:"kind"`
	Summary string          `json:"summary"`
	Data    json.RawMessage `json:"data"`
}

var (
	onuKinds  = []string{streams.ONUDiscovered, streams.ONUStatusChanged, streams.ONUUpdated}
	execKinds = []string{streams.PhaseStarted, streams.PhaseSucceeded, streams.PhaseFailed, streams.PhaseSkipped, streams.PhaseInterrupted}
)

// tailSource is one stream a tail follows, with its subject filter.
type tailSource struct {
	class, stream, subject string
}

// sources returns the streams and subject filters of f.
func (f TailFilter) sources() ([]tailSource, error) {
	olt := f.OLT
	if olt == "" {
		olt = "*"
	} else if strings.ContainsAny(olt, ".*> \t") {
		return nil, fmt.Errorf("olt %q: not a subject token", olt)
	}
	onu := tailSource{ClassONU, streams.StreamONU, "facho.onu." + olt + ".*"}
	exec := tailSource{ClassExec, streams.StreamExec, "facho.exec." + olt + ".*"}
	notify := tailSource{ClassNotify, streams.StreamNotify, "facho.notify.*." + olt}
	switch k := f.Kind; {
	case k == "":
		return []tailSource{onu, exec, notify}, nil
	case k == ClassONU:
		return []tailSource{onu}, nil
	case k == ClassExec:
		return []tailSource{exec}, nil
	case k == ClassNotify:
		return []tailSource{notify}, nil
	case slices.Contains(onuKinds, k):
		onu.subject = "facho.onu." + olt + "." + k
		return []tailSource{onu}, nil
	case slices.Contains(execKinds, k):
		exec.subject = "facho.exec." + olt + "." + k
		return []tailSource{exec}, nil
	case slices.Contains(streams.NotifyKinds(), k):
		notify.subject = "facho.notify." + k + "." + olt
		return []tailSource{notify}, nil
	}
	return nil, fmt.Errorf("kind %q: want onu, exec, notify, %s, %s or %s", f.Kind,
		strings.Join(onuKinds, ", "), strings.Join(execKinds, ", "), strings.Join(streams.NotifyKinds(), ", "))
}

// Validate checks the filter.
func (f TailFilter) Validate() error {
	_, err := f.sources()
	return err
}

// Tail calls fn with every new event matching f (from now on) until ctx
// ends (then it returns nil) or fn fails. ready, when set, is called once
// the consumers exist: every event published after it is delivered.
// Events of different streams arrive in the order each stream delivers
// them; fn is called from one goroutine at a time. A stream that does not
// exist (an older deployment without notifications) is left out of an
// unfiltered tail.
func Tail(ctx context.Context, js jetstream.JetStream, f TailFilter, ready func(), fn func(TailEvent) error) error {
	var r func(TailStart)
	if ready != nil {
		r = func(TailStart) { ready() }
	}
	return TailFrom(ctx, js, f, nil, 0, r, fn)
}

// TailStart is where a tail begins: the position of each stream it
// follows (the last sequence already seen, so delivery starts after it)
// and the gaps it could not replay.
type TailStart struct {
	Cursor TailCursor
	Gaps   []TailGap
}

// TailGap is a range of a stream's sequences a resumed tail does not
// replay (older than its bound, or gone from the stream): events of the
// filter among them are missed.
type TailGap struct {
	Stream string `json:"stream"`
	From   uint64 `json:"from_seq"`
	To     uint64 `json:"to_seq"`
}

// TailFrom is Tail resumed after from (a cursor of an earlier tail with
// the same filter; nil: from now on). Each stream of the filter starts
// after its position in from, but at most maxBack messages back from the
// stream's last one (0: no limit): what lies further back, or was
// removed from the stream, is reported in the TailStart's gaps. A stream
// absent from from starts at its end (new events only); a position past a
// stream's end (a stream recreated) too. ready, when set, is called once
// the consumers exist with the starting cursor: every event after it is
// delivered, none before it.
func TailFrom(ctx context.Context, js jetstream.JetStream, f TailFilter, from TailCursor, maxBack uint64, ready func(TailStart), fn func(TailEvent) error) error {
	srcs, err := f.sources()
	if err != nil {
		return err
	}
	type follower struct {
		src tailSource
		it  jetstream.MessagesContext
	}
	var fol []follower
	defer func() {
		for _, x := range fol {
			x.it.Stop()
		}
	}()
	start := TailStart{Cursor: TailCursor{}}
	for _, s := range srcs {
		st, err := js.Stream(ctx, s.stream)
		if err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) && s.class == ClassNotify && len(srcs) > 1 {
				continue
			}
			return fmt.Errorf("tail %s: %w", s.stream, err)
		}
		state := st.CachedInfo().State
		after, gap := resumeAt(state.FirstSeq, state.LastSeq, from, s.stream, maxBack)
		if gap != nil {
			start.Gaps = append(start.Gaps, *gap)
		}
		start.Cursor[s.stream] = after
		cons, err := js.OrderedConsumer(ctx, s.stream, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{s.subject}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: after + 1,
		})
		if err != nil {
			return fmt.Errorf("tail %s: %w", s.stream, err)
		}
		// Messages creates the consumer on the server before it returns.
		it, err := cons.Messages()
		if err != nil {
			return fmt.Errorf("tail %s: %w", s.stream, err)
		}
		fol = append(fol, follower{s, it})
	}
	if ready != nil {
		ready(start)
	}
	events := make(chan TailEvent, 256)
	g, gctx := errgroup.WithContext(ctx)
	for _, x := range fol {
		g.Go(func() error { return follow(gctx, x.it, x.src, events) })
	}
	g.Go(func() error {
		for {
			select {
			case <-gctx.Done():
				return nil
			case ev := <-events:
				if err := fn(ev); err != nil {
					return err
				}
			}
		}
	})
	err = g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// resumeAt is the sequence of stream a tail starts after (delivery begins
// at the next one), given the stream's first and last sequences, the
// cursor to resume from and the bound, with the gap it leaves.
func resumeAt(first, last uint64, from TailCursor, stream string, maxBack uint64) (uint64, *TailGap) {
	pos, ok := from[stream]
	if !ok || pos >= last {
		return last, nil
	}
	after := pos
	if first > 0 && after+1 < first { // removed by retention
		after = first - 1
	}
	if maxBack > 0 && last-after > maxBack {
		after = last - maxBack
	}
	if after == pos {
		return after, nil
	}
	return after, &TailGap{Stream: stream, From: pos + 1, To: after}
}

// TailCursor is the position of a tail in each stream it follows: the
// sequence of the last message delivered (or skipped by the filter before
// the start). Its text form, the id of a server-sent event, is
// "<stream>-<seq>" per stream, sorted, joined by commas.
type TailCursor map[string]uint64

// String is the text form of c.
func (c TailCursor) String() string {
	names := make([]string, 0, len(c))
	for k := range c {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + "-" + strconv.FormatUint(c[k], 10)
	}
	return strings.Join(parts, ",")
}

// maxCursorText bounds a cursor from a client (a Last-Event-ID header).
const maxCursorText = 512

// ParseTailCursor reads the text form of a cursor ("" is an empty one).
func ParseTailCursor(s string) (TailCursor, error) {
	c := TailCursor{}
	if s == "" {
		return c, nil
	}
	if len(s) > maxCursorText {
		return nil, fmt.Errorf("cursor of %d characters: at most %d", len(s), maxCursorText)
	}
	for _, part := range strings.Split(s, ",") {
		i := strings.LastIndexByte(part, '-')
		if i <= 0 {
			return nil, fmt.Errorf("cursor part %q: want <stream>-<sequence>", part)
		}
		seq, err := strconv.ParseUint(part[i+1:], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cursor part %q: want <stream>-<sequence>", part)
		}
		name := part[:i]
		if strings.IndexFunc(name, func(r rune) bool {
			return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
		}) >= 0 {
			return nil, fmt.Errorf("cursor part %q: %q is not a stream name", part, name)
		}
		c[name] = seq
	}
	return c, nil
}

func follow(ctx context.Context, it jetstream.MessagesContext, s tailSource, out chan<- TailEvent) error {
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("tail %s: %w", s.stream, err)
		}
		ev := Describe(s.class, s.stream, m)
		select {
		case out <- ev:
		case <-ctx.Done():
			return nil
		}
	}
}

// Describe makes the TailEvent of a message of class.
func Describe(class, stream string, m jetstream.Msg) TailEvent {
	ev := TailEvent{Class: class, Stream: stream, Subject: m.Subject(), Data: m.Data()}
	if meta, err := m.Metadata(); err == nil {
		ev.Seq, ev.Time = meta.Sequence.Stream, meta.Timestamp.UTC()
	}
	if !json.Valid(ev.Data) {
		ev.Data = nil
	}
	tok := strings.Split(m.Subject(), ".")
	if len(tok) == 4 {
		switch class {
		case ClassONU, ClassExec: // facho.<class>.<olt>.<kind>
			ev.OLT, ev.Kind = tok[2], tok[3]
		case ClassNotify: // facho.notify.<kind>.<olt>
			ev.Kind, ev.OLT = tok[2], tok[3]
		}
	}
	ev.Summary = summarize(class, m.Data())
	return ev
}

// summarize is the readable part of a tail line; what it cannot decode it
// leaves empty (the JSON form still has the data).
func summarize(class string, data []byte) string {
	env, err := streams.DecodeEnvelope(data)
	if err != nil {
		return ""
	}
	switch class {
	case ClassONU:
		var c streams.ONUChanged
		if streams.DecodeData(env, &c) != nil {
			return ""
		}
		s := fmt.Sprintf("onu %d/%d %s %s", c.PonIndex, c.ONUID, c.Current.Serial, c.Current.Status)
		if c.Previous != nil && c.Previous.Status != c.Current.Status {
			s = fmt.Sprintf("onu %d/%d %s %s -> %s", c.PonIndex, c.ONUID, c.Current.Serial, c.Previous.Status, c.Current.Status)
		}
		if c.Current.RxPowerDBm != nil {
			s += fmt.Sprintf(" rx %.2f dBm", *c.Current.RxPowerDBm)
		}
		return s
	case ClassExec:
		var e struct {
			ExecutionID string `json:"execution_id"`
			Attempt     int    `json:"attempt"`
			DurationMS  int64  `json:"duration_ms"`
			Varbinds    int    `json:"varbinds"`
			Error       string `json:"error"`
			Reason      string `json:"reason"`
		}
		if json.Unmarshal(env.Data, &e) != nil {
			return ""
		}
		s := "execution " + e.ExecutionID
		if e.Attempt > 0 {
			s += fmt.Sprintf(" attempt %d", e.Attempt)
		}
		if e.DurationMS > 0 {
			s += fmt.Sprintf(" %d ms", e.DurationMS)
		}
		if e.Varbinds > 0 {
			s += fmt.Sprintf(" %d varbinds", e.Varbinds)
		}
		if e.Error != "" {
			s += ": " + e.Error
		} else if e.Reason != "" {
			s += ": " + e.Reason
		}
		return s
	case ClassNotify:
		var n streams.Notification
		if streams.DecodeData(env, &n) != nil {
			return ""
		}
		return strings.TrimSpace(n.Severity + " " + n.Message)
	}
	return ""
}
