package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/replay"
)

// replayLine is one message as `facho replay` prints it. Data is the
// event's envelope as published: communities travel sealed in it
// (community_enc) and nothing here unseals them.
type replayLine struct {
	Stream  string          `json:"stream"`
	Seq     uint64          `json:"seq"`
	Subject string          `json:"subject"`
	Time    time.Time       `json:"time"`
	Data    json.RawMessage `json:"data,omitempty"`
	Raw     []byte          `json:"raw,omitempty"` // base64: a payload that is not JSON
}

func runReplay(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stream := fs.String("stream", "", "stream to replay (e.g. FACHO_EXEC)")
	from := fs.String("from", "", "first message: sequence, RFC 3339 time or duration ago (default: the stream's first)")
	to := fs.String("to", "", "last message: sequence or time (default: the stream's last message when the replay starts)")
	var subjects stringList
	fs.Var(&subjects, "subject", "subject filter, NATS wildcards allowed (repeatable)")
	nf := addNATSFlags(fs, getenv)
	if ok, err := parseFlags(fs, args); !ok {
		return err
	}
	if *stream == "" {
		return fmt.Errorf("replay: --stream is required")
	}
	r := replay.Range{Stream: *stream, Subjects: subjects}
	var err error
	if r.From, err = parsePosition(*from, time.Now()); err != nil {
		return fmt.Errorf("replay --from: %w", err)
	}
	if r.To, err = parsePosition(*to, time.Now()); err != nil {
		return fmt.Errorf("replay --to: %w", err)
	}
	nc, js, err := nf.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := writeReplay(ctx, js, r, stdout, stderr); err != nil && ctx.Err() == nil {
		return err
	}
	return nil // done, or stopped (Ctrl-C): what was printed stays valid JSON lines
}

// writeReplay prints r as JSON lines on w, with a progress bar on stderr
// when it is a terminal. Reading, formatting and writing overlap: the
// stream is read in chunks (replayChunk, replayChunkBytes), formatted by
// replayFormatters goroutines (checking a large event's JSON is most of
// the work) and written in stream order.
func writeReplay(ctx context.Context, js jetstream.JetStream, r replay.Range, w, stderr io.Writer) error {
	first, last, err := replay.End(ctx, js, r)
	if err != nil {
		return err
	}
	total := uint64(0)
	if last >= max(first, r.From.Seq) && last > 0 {
		total = last - max(first, r.From.Seq) + 1
	}
	bar := newProgress(stderr, "replay "+r.Stream)
	defer bar.finish()

	type line struct {
		seq     uint64
		subject string
		at      time.Time
		data    []byte
	}
	type chunk struct {
		lines []line
		bytes int
		out   chan []byte // the formatted lines, once
	}
	work := make(chan *chunk, replayFormatters)
	ordered := make(chan *chunk, 2*replayFormatters)
	g, gctx := errgroup.WithContext(ctx)
	for range replayFormatters {
		g.Go(func() error {
			for c := range work {
				// The data, and room for each line's other fields.
				b := make([]byte, 0, c.bytes+len(c.lines)*256)
				for _, l := range c.lines {
					b = appendReplayLine(b, r.Stream, l.seq, l.subject, l.at, l.data)
				}
				c.out <- b
			}
			return nil
		})
	}
	g.Go(func() error {
		out := bufio.NewWriterSize(w, 256<<10)
		var n uint64
		var werr error
		for c := range ordered {
			var b []byte
			select {
			case b = <-c.out:
			case <-gctx.Done():
				return gctx.Err()
			}
			if werr == nil {
				_, werr = out.Write(b)
				n += uint64(len(c.lines))
				bar.update(n, total)
			}
		}
		if werr != nil {
			return werr
		}
		return out.Flush()
	})
	var cur *chunk
	send := func() error {
		if cur == nil {
			return nil
		}
		c := cur
		cur = nil
		select {
		case ordered <- c:
		case <-gctx.Done():
			return gctx.Err()
		}
		select {
		case work <- c:
		case <-gctx.Done():
			return gctx.Err()
		}
		return nil
	}
	_, err = replay.ReadMeta(gctx, js, r, func(m jetstream.Msg, meta *jetstream.MsgMetadata) error {
		if cur == nil {
			cur = &chunk{lines: make([]line, 0, replayChunk), out: make(chan []byte, 1)}
		}
		// The data stays valid: an ordered consumer's messages are not
		// reused.
		cur.lines = append(cur.lines, line{meta.Sequence.Stream, m.Subject(), meta.Timestamp.UTC(), m.Data()})
		cur.bytes += len(m.Data())
		if len(cur.lines) == replayChunk || cur.bytes >= replayChunkBytes {
			return send()
		}
		return nil
	})
	if err == nil {
		err = send()
	}
	close(work)
	close(ordered)
	if gerr := g.Wait(); err == nil {
		err = gerr
	}
	return err
}

// replayChunk is how many messages (at most replayChunkBytes of data)
// writeReplay formats at once, and replayFormatters how many goroutines
// format them.
const (
	replayChunk      = 256
	replayChunkBytes = 1 << 20
	replayFormatters = 2
)

// appendReplayLine appends one message as a JSON line: replayLine as
// encoding/json writes it (the same fields, values and order), without
// reflection and without a second pass over the data, which is already
// JSON (checked once, copied as it is; compacted only if it spans lines).
func appendReplayLine(b []byte, stream string, seq uint64, subject string, at time.Time, data []byte) []byte {
	b = append(b, `{"stream":`...)
	b = appendJSONString(b, stream)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"subject":`...)
	b = appendJSONString(b, subject)
	b = append(b, `,"time":"`...)
	b = at.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	switch {
	case len(data) == 0:
	case json.Valid(data):
		b = append(b, `,"data":`...)
		if bytes.ContainsAny(data, "\r\n") {
			buf := bytes.NewBuffer(b)
			_ = json.Compact(buf, data) // valid: cannot fail
			b = buf.Bytes()
		} else {
			b = append(b, data...)
		}
	default:
		b = append(b, `,"raw":"`...)
		b = base64.StdEncoding.AppendEncode(b, data)
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
