// Package deadletter moves messages a consumer cannot process to the
// consumer's dead-letter subject (facho.dlq.<consumer>), with the reason,
// so nothing is lost and the consumer carries on.
//
// Dead-lettering must always succeed, whatever the message: a dead letter
// does not embed the original (a message near the server's maximum
// payload would not fit in one), it points at it. The original stays in
// its stream (LimitsPolicy) at the recorded stream sequence; the dead
// letter carries its size, its SHA-256 and a bounded excerpt, a bounded
// reason, and, when the original is a parseable envelope, its event type,
// olt_id and execution_id. See streams.DeadLetter for the bounds.
package deadletter

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// Publish records msg as a dead letter of consumer with reason, then
// terminates it so it is not redelivered. The dead letter's id is derived
// from the stream sequence, so a crash between publish and term cannot
// record it twice.
func Publish(ctx context.Context, js jetstream.JetStream, consumer, source string, msg jetstream.Msg, reason string) error {
	meta, err := msg.Metadata()
	if err != nil {
		return fmt.Errorf("dead letter: metadata: %w", err)
	}
	dl := Record(Original{
		Consumer:   consumer,
		Stream:     meta.Stream,
		StreamSeq:  meta.Sequence.Stream,
		Subject:    msg.Subject(),
		MsgID:      msg.Headers().Get(jetstream.MsgIDHeader),
		Deliveries: meta.NumDelivered,
		Data:       msg.Data(),
	}, reason, time.Now())
	id := streams.MsgID("dlq", consumer, meta.Stream, meta.Sequence.Stream)
	b, err := streams.EncodeWithID(id, source, time.Now(), dl)
	if err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	if _, err := js.Publish(ctx, streams.SubjectDLQ(consumer), b, jetstream.WithMsgID(id)); err != nil {
		return fmt.Errorf("dead letter %s seq %d: %w", consumer, meta.Sequence.Stream, err)
	}
	if err := msg.TermWithReason(dl.Reason); err != nil {
		return fmt.Errorf("dead letter: term seq %d: %w", meta.Sequence.Stream, err)
	}
	return nil
}

// Original is the message being dead-lettered.
type Original struct {
	Consumer   string
	Stream     string
	StreamSeq  uint64
	Subject    string
	MsgID      string
	Deliveries uint64
	Data       []byte
}

// Record builds the dead letter of o: every text field bounded, the
// payload summarised (size, SHA-256, excerpt), the event type, olt_id and
// execution_id copied when o.Data is an envelope.
func Record(o Original, reason string, now time.Time) streams.DeadLetter {
	sum := sha256.Sum256(o.Data)
	excerpt, truncated := Excerpt(o.Data, streams.DeadLetterExcerptBytes)
	dl := streams.DeadLetter{
		Consumer:         Bound(o.Consumer, streams.DeadLetterFieldBytes),
		Stream:           Bound(o.Stream, streams.DeadLetterFieldBytes),
		StreamSeq:        o.StreamSeq,
		Subject:          Bound(o.Subject, streams.DeadLetterFieldBytes),
		Reason:           Bound(reason, streams.DeadLetterReasonBytes),
		Deliveries:       o.Deliveries,
		MsgID:            Bound(o.MsgID, streams.DeadLetterFieldBytes),
		PayloadSize:      len(o.Data),
		PayloadSHA256:    hex.EncodeToString(sum[:]),
		PayloadExcerpt:   excerpt,
		PayloadTruncated: truncated,
		ReceivedAt:       now.UTC(),
	}
	if env, err := streams.DecodeEnvelope(o.Data); err == nil {
		dl.OriginalType = Bound(env.Type, streams.DeadLetterFieldBytes)
		var ids struct {
			OLTID       any `json:"olt_id"`
			ExecutionID any `json:"execution_id"`
		}
		// Best effort: data that is not an object, or ids that are not
		// strings, leave the fields empty.
		if json.Unmarshal(env.Data, &ids) == nil {
			dl.OLTID = Bound(str(ids.OLTID), streams.DeadLetterFieldBytes)
			dl.ExecutionID = Bound(str(ids.ExecutionID), streams.DeadLetterFieldBytes)
		}
	}
	return dl
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// Excerpt returns the first max bytes of b (cut before a split UTF-8
// sequence) as text that any JSON encoder and Postgres text column take:
// invalid UTF-8 and NUL become U+FFFD. truncated says b was longer.
func Excerpt(b []byte, max int) (excerpt string, truncated bool) {
	if len(b) > max {
		b, truncated = b[:max], true
		// Drop a rune cut in the middle rather than turn it into U+FFFD.
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	b = bytes.ReplaceAll(b, []byte{0}, []byte("\uFFFD"))
	return strings.ToValidUTF8(string(b), "\uFFFD"), truncated
}

// Bound cuts s to at most max bytes on a rune boundary, marking the cut
// with "…", and makes it valid UTF-8 without NUL.
func Bound(s string, max int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
	if len(s) <= max {
		return s
	}
	const mark = "…"
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
