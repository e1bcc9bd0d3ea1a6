package trapd

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/streams"
)

// publisher publishes trap events asynchronously (the readers never wait
// for JetStream) and settles their acknowledgements on its own goroutine:
// a failed publish is retried under the same Nats-Msg-Id, so the stream
// stores it once.
type publisher struct {
	js      jetstream.JetStream
	source  string
	timeout time.Duration
	log     zerolog.Logger
	m       *metrics
	pending chan pendingTrap
}

// pendingTrap is one trap's events awaiting their acknowledgement.
type pendingTrap struct {
	msgs    []outMsg
	futures []jetstream.PubAckFuture
	ack     []byte
	sendAck func([]byte)
}

type outMsg struct {
	typ, subject, id string
	data             []byte
}

// trap publishes v's events; sendAck sends an inform's acknowledgement
// once they are stored.
func (p *publisher) trap(ctx context.Context, v verdict, sendAck func([]byte)) {
	pt := pendingTrap{ack: v.ack, sendAck: sendAck}
	subject := streams.SubjectTrap(v.olt)
	if b, err := streams.EncodeWithID(v.trapID, p.source, v.received.ReceivedAt, *v.received); err == nil {
		pt.msgs = append(pt.msgs, outMsg{typ: streams.TypeTrapReceived, subject: subject, id: v.trapID, data: b})
	}
	if v.decoded != nil {
		id := v.trapID + ":decoded"
		if b, err := streams.EncodeWithID(id, p.source, v.decoded.At, *v.decoded); err == nil {
			pt.msgs = append(pt.msgs, outMsg{typ: streams.TypeTrapDecoded, subject: subject, id: id, data: b})
		}
	}
	for _, m := range pt.msgs {
		f, err := p.js.PublishAsync(m.subject, m.data, jetstream.WithMsgID(m.id))
		if err != nil {
			f = nil // settled synchronously below
		}
		pt.futures = append(pt.futures, f)
	}
	select {
	case p.pending <- pt:
	case <-ctx.Done():
	}
}

// settle waits for each pending trap's acknowledgements until ctx ends.
func (p *publisher) settle(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case pt := <-p.pending:
			ok := true
			for i, m := range pt.msgs {
				if !p.wait(ctx, pt.futures[i], m) {
					ok = false
				}
			}
			if ok && pt.ack != nil && pt.sendAck != nil {
				pt.sendAck(pt.ack)
			}
		}
	}
}

// wait settles one message: its future, else up to three synchronous
// retries under the same id.
func (p *publisher) wait(ctx context.Context, f jetstream.PubAckFuture, m outMsg) bool {
	if f != nil {
		t := time.NewTimer(p.timeout)
		select {
		case <-f.Ok():
			t.Stop()
			p.m.published.WithLabelValues(m.typ).Inc()
			return true
		case <-f.Err():
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
	var err error
	for attempt := range 3 {
		pctx, cancel := context.WithTimeout(ctx, p.timeout)
		_, err = p.js.Publish(pctx, m.subject, m.data, jetstream.WithMsgID(m.id))
		cancel()
		if err == nil {
			p.m.published.WithLabelValues(m.typ).Inc()
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	p.m.drop(dropPublish)
	p.log.Warn().Err(err).Str("event_id", m.id).Msg("trap event not published")
	return false
}
