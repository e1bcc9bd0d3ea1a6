package projector

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/streams"
)

// rig is one test's JetStream, database and projector.
type rig struct {
	t    *testing.T
	env  *jstest.Env
	js   jetstream.JetStream
	pool *pgxpool.Pool
	reg  *prometheus.Registry
	// strict: the projector applies only dispatched work (trust.go).
	strict bool
}

func newRig(t *testing.T) *rig {
	t.Helper()
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	return &rig{t: t, env: env, js: env.JS, pool: pgtest.New(t), reg: prometheus.NewRegistry()}
}

// start runs the projector; the returned func stops it and waits.
func (r *rig) start() (stop func()) {
	r.t.Helper()
	return r.startWith(Config{})
}

// startWith runs the projector with cfg (test timings filled in).
func (r *rig) startWith(cfg Config) (stop func()) {
	r.t.Helper()
	return r.runProjector(cfg, r.reg)
}

// runProjector runs a projector on the rig's database and streams with
// cfg (test timings filled in) and registry reg: a second one, with a
// registry of its own, stands by beside the first.
func (r *rig) runProjector(cfg Config, reg *prometheus.Registry) (stop func()) {
	r.t.Helper()
	cfg.NackDelay, cfg.FetchWait = 100*time.Millisecond, 100*time.Millisecond
	// Most tests publish work without its NodeDue; the trust tests
	// (trust_test.go) set strict.
	cfg.acceptUndispatched = !r.strict
	// Most tests publish work without its NodeDue; the trust tests
	// (trust_test.go) set strict.
	cfg.acceptUndispatched = !r.strict
	ctx, cancel := context.WithCancel(context.Background())
	if hook := cfg.afterCommit; hook != nil {
		cfg.afterCommit = func() { hook(); cancel() }
	}
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, cfg, Deps{JS: r.js, DB: r.pool, Log: zerolog.Nop(), Registry: reg}) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-errc; err != nil {
			r.t.Errorf("Run: %v", err)
		}
	}
	r.t.Cleanup(stop)
	return stop
}

// publish sends one event and returns its stream sequence.
func (r *rig) publish(subject string, payload streams.Event) uint64 {
	r.t.Helper()
	b, err := streams.Encode("test", time.Now(), payload)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.publishRaw(subject, b)
}

func (r *rig) publishRaw(subject string, b []byte) uint64 {
	r.t.Helper()
	ack, err := r.js.Publish(context.Background(), subject, b)
	if err != nil {
		r.t.Fatal(err)
	}
	return ack.Sequence
}

// waitCheckpoint waits until consumer applied (or skipped) seq and every
// message before it.
func (r *rig) waitCheckpoint(consumer string, seq uint64) {
	r.t.Helper()
	r.eventually(fmt.Sprintf("%s checkpoint %d", consumer, seq), func() bool {
		c, err := r.consumerCheckpoint(consumer)
		return err == nil && c >= seq
	})
}

// consumerCheckpoint is consumer's own checkpoint: every message up to it
// ended. (projection.Checkpoint is how far anything was applied: the
// varbind projection's per-OLT checkpoints run ahead of it, one worker's
// OLTs ahead of the other's.)
func (r *rig) consumerCheckpoint(consumer string) (uint64, error) {
	var last int64
	err := r.pool.QueryRow(context.Background(), `SELECT COALESCE((SELECT last_seq FROM checkpoints WHERE consumer = $1), 0)`, consumer).Scan(&last)
	return uint64(last), err
}

// waitAckFloor waits until the durable consumer acknowledged seq.
func (r *rig) waitAckFloor(stream, consumer string, seq uint64) {
	r.t.Helper()
	r.eventually(fmt.Sprintf("%s ack floor %d", consumer, seq), func() bool {
		c, err := r.js.Consumer(context.Background(), stream, consumer)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.AckFloor.Stream >= seq && info.NumAckPending == 0
	})
}

func (r *rig) eventually(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *rig) streamMsgs(stream string) uint64 {
	r.t.Helper()
	s, err := r.js.Stream(context.Background(), stream)
	if err != nil {
		r.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return info.State.Msgs
}

func (r *rig) lastSeq(stream string) uint64 {
	r.t.Helper()
	s, err := r.js.Stream(context.Background(), stream)
	if err != nil {
		r.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return info.State.LastSeq
}

// onuRow is an onu_data row as tests compare it.
type onuRow struct {
	PonIndex, ONUID             int64
	Serial, Description, Status string
	RxPowerDBm                  *float64
}

func (r *rig) onus(oltID string) map[ONUKey]onuRow {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), `SELECT pon_index, onu_id, serial, description, status, rx_power_dbm FROM onu_data WHERE olt_id = $1`, oltID)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	out := map[ONUKey]onuRow{}
	for rows.Next() {
		var o onuRow
		if err := rows.Scan(&o.PonIndex, &o.ONUID, &o.Serial, &o.Description, &o.Status, &o.RxPowerDBm); err != nil {
			r.t.Fatal(err)
		}
		out[ONUKey{o.PonIndex, o.ONUID}] = o
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// onuEvents returns the ONU-change events in the ONU stream.
func (r *rig) onuEvents() []streams.ONUChanged {
	r.t.Helper()
	s, err := r.js.Stream(context.Background(), streams.StreamONU)
	if err != nil {
		r.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	var out []streams.ONUChanged
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(context.Background(), seq)
		if err != nil {
			r.t.Fatal(err)
		}
		_, ev, err := streams.Decode[streams.ONUChanged](m.Data)
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
