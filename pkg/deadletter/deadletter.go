// Package deadletter moves messages a consumer cannot process to the
// consumer's dead-letter subject, with the reason, so nothing is lost and
// the consumer carries on.
package deadletter

import (
	"context"
	"fmt"
	"time"

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
	dl := streams.DeadLetter{
		Consumer:   consumer,
		Stream:     meta.Stream,
		StreamSeq:  meta.Sequence.Stream,
		Subject:    msg.Subject(),
		Reason:     reason,
		Payload:    msg.Data(),
		ReceivedAt: time.Now().UTC(),
	}
	id := streams.MsgID("dlq", consumer, meta.Stream, meta.Sequence.Stream)
	b, err := streams.EncodeWithID(id, source, time.Now(), dl)
	if err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	if _, err := js.Publish(ctx, streams.SubjectDLQ(consumer), b, jetstream.WithMsgID(id)); err != nil {
		return fmt.Errorf("dead letter %s seq %d: %w", consumer, meta.Sequence.Stream, err)
	}
	if err := msg.TermWithReason(reason); err != nil {
		return fmt.Errorf("dead letter: term seq %d: %w", meta.Sequence.Stream, err)
	}
	return nil
}
