package trapd

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/streams"
)

const (
	hwStateTrap = "1.3.6.1.4.1.2011.6.128.1.1.2.0.6"
	hwDyingGasp = "1.3.6.1.4.1.2011.6.128.1.1.2.0.22"
	hwRunStatus = "1.3.6.1.4.1.2011.6.128.1.1.2.46.1.15"
	hwSerial    = "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3"
)

type env struct {
	*jstest.Env
	box  *secret.Box
	ctx  context.Context
	reg  *prometheus.Registry
	addr *net.UDPAddr // the receiver's socket
}

func newEnv(t testing.TB) *env {
	t.Helper()
	js := jstest.Start(t, streams.Options{}, jstest.WithAuth())
	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := secret.ParseKey(key)
	box, err := secret.NewBox(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &env{Env: js, box: box, ctx: ctx}
}

func (e *env) publish(t testing.TB, subject, id string, ev streams.Event) {
	t.Helper()
	b, err := streams.EncodeWithID(id, "test", time.Now(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.JS.Publish(e.ctx, subject, b, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
}

// addOLT configures an OLT of the Huawei profile at ip with community.
func (e *env) addOLT(t testing.TB, id, ip, community string) {
	t.Helper()
	cat, err := profiles.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cat.Get("huawei-ma5800")
	e.publish(t, streams.SubjectBrand(p.ID), "brand-hw", streams.BrandUpserted{ID: p.ID, Name: p.Name, IndexScheme: p.IndexScheme, Index: &p.Index, Profile: p.ID})
	enc, err := e.box.Seal(community)
	if err != nil {
		t.Fatal(err)
	}
	e.publish(t, streams.SubjectOLT(id), "olt-"+id, streams.OLTUpserted{ID: id, Name: id, IP: ip, Port: 161, BrandID: "huawei-ma5800", CommunityEnc: enc, Enabled: true})
}

// start runs the receiver as its own NATS identity on a free port.
func (e *env) start(t testing.TB, cfg Config) {
	t.Helper()
	_, js := e.Connect(t, natsauth.Trapd)
	ctx, cancel := context.WithCancel(e.ctx)
	e.reg = prometheus.NewRegistry()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	listening := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Deps{JS: js, Box: e.box, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), Registry: e.reg, Listening: func(a net.Addr) { listening <- a }})
	}()
	select {
	case a := <-listening:
		e.addr = a.(*net.UDPAddr)
	case err := <-done:
		t.Fatalf("run: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the receiver did not open its socket")
	}
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("the receiver did not stop")
			}
		})
	})
}

// sendFrom sends a datagram from a socket bound to fromIP.
func (e *env) sendFrom(t testing.TB, fromIP string, pkt []byte) {
	t.Helper()
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(fromIP)}, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(pkt); err != nil {
		t.Fatal(err)
	}
}

// v2cTrap builds an SNMPv2c trap (or inform) of trapOID with vbs.
func v2cTrap(t testing.TB, community, trapOID string, inform bool, vbs ...gosnmp.SnmpPDU) []byte {
	t.Helper()
	typ := gosnmp.SNMPv2Trap
	if inform {
		typ = gosnmp.InformRequest
	}
	p := &gosnmp.SnmpPacket{Version: gosnmp.Version2c, Community: community, PDUType: typ, RequestID: 4242,
		Variables: append([]gosnmp.SnmpPDU{
			{Name: ".1.3.6.1.2.1.1.3.0", Type: gosnmp.TimeTicks, Value: uint32(1234)},
			{Name: ".1.3.6.1.6.3.1.1.4.1.0", Type: gosnmp.ObjectIdentifier, Value: "." + trapOID},
		}, vbs...)}
	b, err := p.MarshalMsg()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func intVB(oid string, v int) gosnmp.SnmpPDU {
	return gosnmp.SnmpPDU{Name: "." + oid, Type: gosnmp.Integer, Value: v}
}

// trapEvents reads every event of the trap stream.
func (e *env) trapEvents(t testing.TB) []streams.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	s, err := e.JS.Stream(ctx, streams.StreamTrap)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []streams.Envelope
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		env, err := streams.DecodeEnvelope(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// waitFor polls cond until it holds (a bound, not a timed assertion).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) dropped(reason string) float64 {
	return testutil.ToFloat64(mustCounter(e.reg, "facho_trapd_dropped_total", "reason", reason))
}

// mustCounter finds a labelled counter in reg (testutil needs the
// collector: gather and pick the series instead).
func mustCounter(reg *prometheus.Registry, name, label, value string) prometheus.Collector {
	return gathered{reg: reg, name: name, label: label, value: value}
}

type gathered struct {
	reg                *prometheus.Registry
	name, label, value string
}

func (g gathered) Describe(ch chan<- *prometheus.Desc) {
	ch <- prometheus.NewDesc(g.name+"_pick", "picked series", nil, nil)
}

func (g gathered) Collect(ch chan<- prometheus.Metric) {
	mfs, _ := g.reg.Gather()
	v := 0.0
	for _, mf := range mfs {
		if mf.GetName() != g.name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == g.label && l.GetValue() == g.value {
					v = m.GetCounter().GetValue()
				}
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(g.name+"_pick", "picked series", nil, nil), prometheus.CounterValue, v)
}

func decodeData[T any](t testing.TB, env streams.Envelope) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(env.Data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
