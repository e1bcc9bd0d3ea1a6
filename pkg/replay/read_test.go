package replay

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/streams"
)

// TestReadEndsWhenTheServerIsGone: a read whose server goes away in the
// middle fails with an error once its consumer cannot be made again
// (ResetAttempts), instead of waiting for the server without end (a
// consumer re-creation does not watch the read's context). The backstop
// is generous: one attempt takes up to 10 s.
func TestReadEndsWhenTheServerIsGone(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx := context.Background()
	for i := 0; i < 300; i++ {
		if _, err := env.JS.Publish(ctx, streams.SubjectExec("olt-1", streams.PhaseStarted), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	read := 0
	done := make(chan error, 1)
	go func() {
		_, err := Read(ctx, env.JS, Range{Stream: streams.StreamExec, Batch: 50, ResetAttempts: 1}, func(jetstream.Msg) error {
			read++
			if read == 1 {
				env.Server.Shutdown()
			}
			return nil
		})
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("the read still waits for the server after 90 s")
	}
	if err == nil {
		t.Fatalf("read ended without error after %d of 300 messages, the server gone", read)
	}
	if read >= 300 {
		t.Fatalf("read all %d messages: the server was not gone", read)
	}
	t.Logf("after %d messages: %v", read, err)
}
