package poller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

const (
	testCommunity = "s3cr3t-community"
	huaweiBase    = "1.3.6.1.4.1.2011.6.128.1.1.2"
)

// huaweiColumns are the ONU columns a Huawei discovery reads.
var huaweiColumns = []streams.OIDSpec{
	{ID: "hw-serial", OID: huaweiBase + ".43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
	{ID: "hw-desc", OID: huaweiBase + ".43.1.9", Field: streams.FieldDescription, Decoder: streams.Decoder{Kind: "string"}},
	{ID: "hw-status", OID: huaweiBase + ".46.1.15", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}},
	{ID: "hw-rx", OID: huaweiBase + ".51.1.4", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01}},
}

type testEnv struct {
	*jstest.Env
	box      *secret.Box
	key      string
	fleet    *oltsim.Fleet
	sealed   string
	ctx      context.Context
	pollerMu sync.Mutex
}

func newTestEnv(t testing.TB, opts streams.Options, olts ...oltsim.OLTConfig) *testEnv {
	t.Helper()
	env := jstest.Start(t, opts)
	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := secret.ParseKey(key)
	box, err := secret.NewBox(raw)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := box.Seal(testCommunity)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for i := range olts {
		if olts[i].Listen == "" {
			olts[i].Listen = "127.0.0.1:0"
		}
		if olts[i].Community == "" {
			olts[i].Community = testCommunity
		}
	}
	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: olts}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })
	return &testEnv{Env: env, box: box, key: key, fleet: fleet, sealed: sealed, ctx: ctx}
}

func huaweiOLT(name string, faults oltsim.Faults) oltsim.OLTConfig {
	return oltsim.OLTConfig{
		Name: name, Profile: "huawei-ma5800", Seed: 1, Faults: faults,
		Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 16},
	}
}

// nodeDue is a NodeDue for a job on the simulated OLT named olt.
func (e *testEnv) nodeDue(olt, execID, jobID string) streams.NodeDue {
	addr := e.fleet.OLT(olt).Addr()
	return streams.NodeDue{
		ExecutionID: execID, NodeID: jobID + "@" + olt, JobID: jobID, JobName: "discovery " + jobID,
		OLTID: olt, BrandID: "huawei", IndexScheme: "pon.onu", Kind: streams.KindBulkWalk,
		Target:   streams.Target{Host: addr.IP.String(), Port: addr.Port, CommunityEnc: e.sealed},
		OIDs:     huaweiColumns,
		Priority: 90, IntervalSeconds: 300, TimeoutSeconds: 60, MaxRetries: 2, RetryDelaySeconds: 300,
		ScheduledAt: time.Now().UTC(),
	}
}

func (e *testEnv) publishNodeDue(t testing.TB, n streams.NodeDue) {
	t.Helper()
	b, err := streams.EncodeWithID(n.ExecutionID, "test", time.Now(), n)
	if err != nil {
		t.Fatal(err)
	}
	e.publishRaw(t, streams.SubjectNodeDue(n.OLTID), b)
}

func (e *testEnv) publishRaw(t testing.TB, subject string, b []byte) {
	t.Helper()
	if _, err := e.JS.Publish(e.ctx, subject, b); err != nil {
		t.Fatal(err)
	}
}

// startPoller runs a poller until the test ends (or stop is called).
func (e *testEnv) startPoller(t testing.TB, cfg Config) (stop func(), reg *prometheus.Registry) {
	t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	reg = prometheus.NewRegistry()
	go func() {
		done <- Run(ctx, cfg, Deps{JS: e.JS, Log: zerolog.Nop(), Registry: reg, Box: e.box})
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("poller %s: %v", cfg.PollerID, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop, reg
}

// counter sums the samples of a counter family in reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// streamMsgs returns every message of stream whose subject starts with
// prefix, oldest first.
func (e *testEnv) streamMsgs(t testing.TB, stream, prefix string) []*jetstream.RawStreamMsg {
	t.Helper()
	s, err := e.JS.Stream(e.ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(e.ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(m.Subject, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// execEvents collects the lifecycle events of one execution.
type execEvents struct {
	started   []streams.ExecutionStarted
	succeeded []streams.ExecutionSucceeded
	failed    []streams.ExecutionFailed
	skipped   []streams.ExecutionSkipped
	// skippedMsgIDs are the Nats-Msg-Id headers of the skipped events.
	skippedMsgIDs []string
	aborted       []streams.ExecutionAborted
	// abortedMsgIDs are the Nats-Msg-Id headers of the aborted events.
	abortedMsgIDs []string
	interrupted   []streams.ExecutionInterrupted
	// interruptedMsgIDs are the Nats-Msg-Id headers of the interrupted
	// events.
	interruptedMsgIDs []string
}

func (e *testEnv) execEvents(t testing.TB, olt, execID string) execEvents {
	t.Helper()
	var ev execEvents
	for _, m := range e.streamMsgs(t, streams.StreamExec, "facho.exec."+olt+".") {
		env, err := streams.DecodeEnvelope(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		switch env.Type {
		case streams.TypeExecutionStarted:
			_, s, err := streams.Decode[streams.ExecutionStarted](m.Data)
			if err == nil && s.ExecutionID == execID {
				ev.started = append(ev.started, s)
			}
		case streams.TypeExecutionSucceeded:
			_, s, err := streams.Decode[streams.ExecutionSucceeded](m.Data)
			if err == nil && s.ExecutionID == execID {
				ev.succeeded = append(ev.succeeded, s)
			}
		case streams.TypeExecutionFailed:
			_, s, err := streams.Decode[streams.ExecutionFailed](m.Data)
			if err == nil && s.ExecutionID == execID {
				ev.failed = append(ev.failed, s)
			}
		case streams.TypeExecutionSkipped:
			_, s, err := streams.Decode[streams.ExecutionSkipped](m.Data)
			if err == nil && s.ExecutionID == execID {
				ev.skipped = append(ev.skipped, s)
				ev.skippedMsgIDs = append(ev.skippedMsgIDs, m.Header.Get(jetstream.MsgIDHeader))
			}
		case streams.TypeExecutionAborted:
			_, s, err := streams.Decode[streams.ExecutionAborted](m.Data)
			if err == nil && s.ExecutionID == execID {
				ev.aborted = append(ev.aborted, s)
				ev.abortedMsgIDs = append(ev.abortedMsgIDs, m.Header.Get(jetstream.MsgIDHeader))
			}
		case streams.TypeExecutionInterrupted:
			_, s, err := streams.Decode[streams.ExecutionInterrupted](m.Data)
			if err == nil && s.ExecutionID == execID {
				ev.interrupted = append(ev.interrupted, s)
				ev.interruptedMsgIDs = append(ev.interruptedMsgIDs, m.Header.Get(jetstream.MsgIDHeader))
			}
		}
	}
	return ev
}

func (e *testEnv) batches(t *testing.T, olt, execID string) []streams.VarbindBatch {
	t.Helper()
	var out []streams.VarbindBatch
	for _, m := range e.streamMsgs(t, streams.StreamVarbinds, streams.SubjectVarbinds(olt)) {
		_, b, err := streams.Decode[streams.VarbindBatch](m.Data)
		if err != nil {
			t.Fatal(err)
		}
		if b.ExecutionID == execID {
			out = append(out, b)
		}
	}
	return out
}

// waitEnded waits until the execution has a terminal event.
func (e *testEnv) waitEnded(t *testing.T, olt, execID string, limit time.Duration) execEvents {
	t.Helper()
	var ev execEvents
	waitFor(t, limit, "execution "+execID+" to end", func() bool {
		ev = e.execEvents(t, olt, execID)
		return len(ev.succeeded)+len(ev.failed) > 0
	})
	return ev
}

// waitFor polls cond; limit only bounds a hung test, it asserts no speed.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *testEnv) leaseHolder(t *testing.T, olt string) (string, bool) {
	t.Helper()
	kv, err := e.JS.KeyValue(e.ctx, streams.BucketLeases)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(e.ctx, "olt."+olt)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(entry.Value()), true
}

func (e *testEnv) assertNoCommunityAnywhere(t *testing.T) {
	t.Helper()
	for _, st := range []string{streams.StreamExec, streams.StreamVarbinds, streams.StreamDLQ} {
		for _, m := range e.streamMsgs(t, st, "") {
			if strings.Contains(string(m.Data), testCommunity) {
				t.Errorf("community in plaintext on %s: %s", m.Subject, m.Data)
			}
		}
	}
}
