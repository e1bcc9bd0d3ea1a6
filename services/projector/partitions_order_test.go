package projector

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/streams"
)

// After the partition count changed (2 or 1 to 3), the ONU events the
// former partitions committed and never published reach facho.onu.>
// before the newer events of the same ONUs, whichever partition now
// applies their OLT and however late partition 0's leader comes; each
// exactly once.
func TestPartitionCountChangeKeepsONUEventOrder(t *testing.T) {
	for _, from := range []int{2, 1} {
		t.Run(fmt.Sprintf("from %d", from), func(t *testing.T) { testPartitionCountChangeOrder(t, from) })
	}
}

func testPartitionCountChangeOrder(t *testing.T, from int) {
	r := newRig(t)
	r.widePool(Config{Partitions: 3, Workers: 8}.WithDefaults().DBConns())
	// Two OLTs per partition of 3, each alone in its worker of its
	// partition of from: one commit per OLT before the kill (a worker
	// that held two OLTs could commit one and be killed before the other).
	const workers = 8
	var olts []string
	per := map[int]int{}
	slots := map[[2]int]bool{}
	for i := 0; len(olts) < 6; i++ {
		if i > 10000 {
			t.Fatal("no OLT ids spread over 3 partitions and the workers")
		}
		o := fmt.Sprintf("olt-n%d", i)
		p, slot := streams.VarbindPartition(o, 3), [2]int{streams.VarbindPartition(o, from), workerOf(o, workers)}
		if per[p] < 2 && !slots[slot] {
			per[p]++
			slots[slot] = true
			olts = append(olts, o)
		}
	}
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	const onuCount = 4
	onus := make([]huaweiONU, onuCount)
	for i := range onus {
		onus[i] = huaweiONU{id: int64(i), serial: uint32(i + 1), desc: fmt.Sprintf("c%d", i), online: true, rx: -2000}
	}
	for _, o := range olts {
		r.publish(streams.SubjectVarbinds(o), batch(o, "e1", 1, t0, onus...))
	}

	// from partitions, on a NATS connection of their own that dies once
	// every OLT's batch is committed and before any event is published: a
	// projector killed between commit and publish.
	r.runKilledAfterCommits(Config{Partitions: from, Workers: workers}, len(olts))
	left := r.pendingByOLT()
	for _, o := range olts {
		if left[o] != onuCount {
			t.Fatalf("pending events by OLT %v, want %d for each of %v", left, onuCount, olts)
		}
	}
	if n := r.streamMsgs(streams.StreamONU); n != 0 {
		t.Fatalf("%d onu events published before the kill, want 0", n)
	}

	// 3 partitions; partition 0's leader comes late (its lock held here).
	lockConn, err := r.pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lockConn.Release()
	p0 := advisoryLockKey("facho:" + streams.ConsumerProjectorVarbindsPartition(0, 3))
	if _, err := lockConn.Exec(context.Background(), `SELECT pg_advisory_lock($1)`, p0); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	r.runProjector(Config{Partitions: 3}, reg)
	r.eventually("partitions 1 and 2 led", func() bool { return gaugeOf(t, reg, "facho_projector_varbind_leader") == 2 })
	for i := range onus {
		onus[i].online = false
	}
	for _, o := range olts {
		r.publish(streams.SubjectVarbinds(o), batch(o, "e2", 1, t0.Add(5*time.Minute), onus...))
	}
	last := r.lastSeq(streams.StreamVarbinds)
	for i := 1; i < 3; i++ {
		r.waitCheckpoint(streams.ConsumerProjectorVarbindsPartition(i, 3), last)
	}
	// Give partitions 1 and 2 time to publish whatever they would.
	time.Sleep(500 * time.Millisecond)
	if _, err := lockConn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, p0); err != nil {
		t.Fatal(err)
	}
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, last)
	want := len(olts) * onuCount * 2
	r.eventually(fmt.Sprintf("%d onu events", want), func() bool { return r.streamMsgs(streams.StreamONU) >= uint64(want) })
	r.eventually("pending events cleared", func() bool {
		return r.count(`SELECT count(*) FROM pending_events WHERE events IS NOT NULL`) == 0
	})
	time.Sleep(300 * time.Millisecond) // a late copy would land by now

	type onuKey struct {
		olt     string
		pon, id int64
	}
	got := map[onuKey][]string{}
	msgIDs := map[string]bool{}
	for _, m := range r.onuStreamMsgs() {
		_, ev, err := streams.Decode[streams.ONUChanged](m.Data)
		if err != nil {
			t.Fatal(err)
		}
		id := m.Header.Get(jetstream.MsgIDHeader)
		if msgIDs[id] {
			t.Errorf("event %s published twice", id)
		}
		msgIDs[id] = true
		// onu:<olt>:<varbind seq>:<pon>:<onu>: the change's sequence.
		parts := strings.Split(id, ":")
		if len(parts) != 5 {
			t.Fatalf("msg id %q", id)
		}
		k := onuKey{ev.OLTID, ev.PonIndex, ev.ONUID}
		got[k] = append(got[k], parts[2]+"/"+ev.ExecutionID)
	}
	if len(got) != len(olts)*onuCount {
		t.Errorf("events of %d ONUs, want %d", len(got), len(olts)*onuCount)
	}
	for k, seqs := range got {
		if len(seqs) != 2 || !strings.HasSuffix(seqs[0], "/e1") || !strings.HasSuffix(seqs[1], "/e2") || seqNum(t, seqs[0]) >= seqNum(t, seqs[1]) {
			t.Errorf("ONU %v (partition %d of 3): events %v in stream order, want its e1 change then its e2 change", k, streams.VarbindPartition(k.olt, 3), seqs)
		}
	}
}

func seqNum(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s[:strings.IndexByte(s, '/')])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// runKilledAfterCommits runs a projector with cfg on a NATS connection of
// its own until commits groups committed, then closes that connection
// before their events are published and stops it.
func (r *rig) runKilledAfterCommits(cfg Config, commits int) {
	r.t.Helper()
	nc, err := nats.Connect(r.env.URL)
	if err != nil {
		r.t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	n := 0
	all := make(chan struct{})
	var kill sync.Once
	cfg.NackDelay, cfg.FetchWait = 100*time.Millisecond, 100*time.Millisecond
	cfg.acceptUndispatched = !r.strict // batches without a NodeDue
	cfg.afterCommit = func() {
		mu.Lock()
		n++
		if n == commits {
			close(all)
		}
		mu.Unlock()
		// Ends at the last of the commits, or after 20s (the test then
		// finds events missing from pending_events).
		select {
		case <-all:
		case <-time.After(20 * time.Second):
		}
		kill.Do(func() {
			nc.Close()
			cancel()
		})
	}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Deps{JS: js, DB: r.pool, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
	}()
	select {
	case <-ctx.Done():
	case <-time.After(120 * time.Second): // generous: the suite runs packages side by side on 2 cores
		r.t.Fatal("the projector to kill committed nothing")
	}
	<-done // its connection is gone: an error is what a killed process would log
}

// pendingByOLT counts the unpublished events in pending_events by OLT.
func (r *rig) pendingByOLT() map[string]int {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), `SELECT events FROM pending_events WHERE events IS NOT NULL`)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var blob []byte
		if err := rows.Scan(&blob); err != nil {
			r.t.Fatal(err)
		}
		evs, err := decodePending(blob)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, e := range evs {
			out[streams.OLTOfONUSubject(e.Subject)]++
		}
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// onuStreamMsgs are the messages of the ONU stream, in stream order.
func (r *rig) onuStreamMsgs() []*jetstream.RawStreamMsg {
	r.t.Helper()
	s, err := r.js.Stream(context.Background(), streams.StreamONU)
	if err != nil {
		r.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(context.Background(), seq)
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}
