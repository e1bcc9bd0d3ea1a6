package natsauth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/streams"
)

// bound is the most any single step may take; a step that hits it fails.
const bound = 10 * time.Second

// violations collects the permission violations the server reports to a
// connection.
type violations chan error

func (v violations) handler() nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			select {
			case v <- err:
			default:
			}
		}
	})
}

// next waits for the violation on subject.
func (v violations) next(t *testing.T, subject string) {
	t.Helper()
	deadline := time.After(bound)
	for {
		select {
		case err := <-v:
			if strings.Contains(err.Error(), subject) {
				return
			}
		case <-deadline:
			t.Fatalf("no permissions violation reported for %s", subject)
		}
	}
}

func (v violations) none(t *testing.T) {
	t.Helper()
	select {
	case err := <-v:
		t.Fatalf("unexpected permissions violation: %v", err)
	default:
	}
}

func msgs(t *testing.T, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestAnonymousAndUnknownConnectionsAreRefused(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	if nc, err := env.Dial(""); err == nil {
		nc.Close()
		t.Fatal("anonymous connection accepted")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("anonymous connection: %v, want an authorization violation", err)
	}
	stranger, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := stranger.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(env.URL, nats.Nkey(pub, stranger.Sign))
	if err == nil {
		nc.Close()
		t.Fatal("a key the server does not know was accepted")
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("unknown key: %v, want an authorization violation", err)
	}
}

// A forged publish is refused by the server and nothing lands in the
// stream: no identity writes what another one owns.
func TestForgedPublishIsRefused(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	for _, tc := range []struct {
		identity, subject, stream string
	}{
		{natsauth.API, "facho.varbinds.olt-1", streams.StreamVarbinds},
		{natsauth.Poller, "facho.config.brand.x", streams.StreamConfig},
		{natsauth.Poller, "facho.schedule.due.olt-1", streams.StreamSchedule},
		{natsauth.Projector, "facho.exec.olt-1.succeeded", streams.StreamExec},
		{natsauth.Planner, "facho.onu.olt-1.discovered", streams.StreamONU},
		{natsauth.Auditor, "facho.audit.planner", streams.StreamAudit},
		{natsauth.Auditor, "facho.dlq.projector-varbinds", streams.StreamDLQ},
		{natsauth.Observer, "facho.config.olt.olt-1", streams.StreamConfig},
		{natsauth.API, "$KV.facho_leases.olt.olt-1", "KV_" + streams.BucketLeases},
		// The API reads the poller states, only pollers write them.
		{natsauth.API, "$KV.facho_pollers.p1", "KV_" + streams.BucketPollers},
		{natsauth.Projector, "$KV.facho_pollers.p1", "KV_" + streams.BucketPollers},
		{natsauth.API, "$KV.facho_schedule.j1.olt-1", "KV_" + streams.BucketSchedule},
		{natsauth.API, "facho.config.olt_disabled.olt-1", streams.StreamConfig},
		{natsauth.API, "facho.audit.api", streams.StreamAudit},
		{natsauth.Planner, "facho.config.olt.olt-1", streams.StreamConfig},
		{natsauth.Planner, "facho.exec.olt-1.succeeded", streams.StreamExec},
		{natsauth.Poller, "facho.schedule.manual.olt-1", streams.StreamSchedule},
	} {
		t.Run(tc.identity+" "+tc.subject, func(t *testing.T) {
			v := make(violations, 16)
			_, js := env.Connect(t, tc.identity, v.handler())
			before := msgs(t, env.JS, tc.stream)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if _, err := js.Publish(ctx, tc.subject, []byte(`{"forged":true}`)); err == nil {
				t.Fatal("forged publish acknowledged")
			}
			v.next(t, tc.subject)
			if after := msgs(t, env.JS, tc.stream); after != before {
				t.Fatalf("%s holds %d messages after the forged publish, %d before", tc.stream, after, before)
			}
		})
	}
}

// What only the admin may do: create, change, delete and purge streams,
// delete messages, touch durable consumers; and nobody reads another
// service's durable consumer.
func TestAdministrationIsRefused(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if _, err := env.JS.Publish(ctx, "facho.config.brand.b1", []byte(`{}`)); err != nil {
		t.Fatalf("admin publish: %v", err)
	}
	for _, tc := range []struct {
		name, identity, subject string
		do                      func(ctx context.Context, js jetstream.JetStream) error
	}{
		{"delete stream", natsauth.Poller, "$JS.API.STREAM.DELETE.FACHO_CONFIG", func(ctx context.Context, js jetstream.JetStream) error {
			return js.DeleteStream(ctx, streams.StreamConfig)
		}},
		{"purge stream", natsauth.API, "$JS.API.STREAM.PURGE.FACHO_CONFIG", func(ctx context.Context, js jetstream.JetStream) error {
			s, err := js.Stream(ctx, streams.StreamConfig)
			if err != nil {
				return nil // reported below as "allowed"
			}
			return s.Purge(ctx)
		}},
		{"delete message", natsauth.API, "$JS.API.STREAM.MSG.DELETE.FACHO_CONFIG", func(ctx context.Context, js jetstream.JetStream) error {
			s, err := js.Stream(ctx, streams.StreamConfig)
			if err != nil {
				return nil
			}
			return s.DeleteMsg(ctx, 1)
		}},
		{"update stream", natsauth.Planner, "$JS.API.STREAM.UPDATE.FACHO_CONFIG", func(ctx context.Context, js jetstream.JetStream) error {
			cfg := streams.StreamConfigs(streams.Options{Storage: jetstream.MemoryStorage})[0]
			cfg.MaxAge = time.Second
			_, err := js.UpdateStream(ctx, cfg)
			return err
		}},
		{"create stream", natsauth.Projector, "$JS.API.STREAM.CREATE.EVIL", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"evil.>"}, Storage: jetstream.MemoryStorage})
			return err
		}},
		{"delete a durable", natsauth.Projector, "$JS.API.CONSUMER.DELETE.FACHO_SCHEDULE.poller", func(ctx context.Context, js jetstream.JetStream) error {
			return js.DeleteConsumer(ctx, streams.StreamSchedule, streams.ConsumerPoller)
		}},
		{"steal another service's work", natsauth.Planner, "$JS.API.CONSUMER.MSG.NEXT.FACHO_CONFIG.projector-config", func(ctx context.Context, js jetstream.JetStream) error {
			c, err := js.Consumer(ctx, streams.StreamConfig, streams.ConsumerProjectorConfig)
			if err != nil {
				return err
			}
			b, err := c.Fetch(1, jetstream.FetchMaxWait(900*time.Millisecond))
			if err != nil {
				return err
			}
			for range b.Messages() {
				return nil // a message was handed out: allowed
			}
			if b.Error() != nil {
				return b.Error()
			}
			return errors.New("no message")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := make(violations, 16)
			_, js := env.Connect(t, tc.identity, v.handler())
			// A refused request is never answered: the error is the
			// timeout, the proof the server's violation report.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := tc.do(ctx, js); err == nil {
				t.Fatalf("%s as %s: allowed", tc.name, tc.identity)
			}
			v.next(t, tc.subject)
		})
	}
	// Nothing changed.
	ctx, cancel = context.WithTimeout(context.Background(), bound)
	defer cancel()
	if n := msgs(t, env.JS, streams.StreamConfig); n != 1 {
		t.Fatalf("FACHO_CONFIG holds %d messages, want 1", n)
	}
	if _, err := env.JS.Stream(ctx, "EVIL"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream EVIL: %v, want not found", err)
	}
	if _, err := env.JS.Consumer(ctx, streams.StreamSchedule, streams.ConsumerPoller); err != nil {
		t.Fatalf("poller consumer: %v", err)
	}
}

// Each identity's own work passes, with no permissions violation: the
// same JetStream calls the services make.
func TestLegitimateWorkPasses(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := func(identity string) (jetstream.JetStream, violations) {
		v := make(violations, 16)
		_, js := env.Connect(t, identity, v.handler())
		return js, v
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	fetchAck := func(js jetstream.JetStream, stream, durable string) jetstream.Msg {
		t.Helper()
		c, err := js.Consumer(ctx, stream, durable)
		must("consumer "+durable, err)
		b, err := c.Fetch(1, jetstream.FetchMaxWait(bound))
		must("fetch "+durable, err)
		for m := range b.Messages() {
			must("in progress "+durable, m.InProgress())
			must("ack "+durable, m.DoubleAck(ctx))
			return m
		}
		t.Fatalf("fetch %s: no message (%v)", durable, b.Error())
		return nil
	}

	// api: publishes configuration, reads it back by subject.
	api, apiV := conn(natsauth.API)
	_, err := api.Publish(ctx, streams.SubjectBrand("b1"), []byte(`{}`))
	must("api publish", err)
	cfgStream, err := api.Stream(ctx, streams.StreamConfig)
	must("api stream", err)
	_, err = cfgStream.GetLastMsgForSubject(ctx, streams.SubjectBrand("b1"))
	must("api last msg", err)
	_, err = api.Publish(ctx, streams.SubjectManualRun("olt-1"), []byte(`{}`))
	must("api manual run", err)

	// planner: replays the configuration, publishes NodeDue and audit.
	planner, plannerV := conn(natsauth.Planner)
	ps, err := planner.Stream(ctx, streams.StreamConfig)
	must("planner stream", err)
	_, err = ps.Info(ctx)
	must("planner stream info", err)
	oc, err := ps.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{streams.SubjectsConfig}})
	must("planner ordered consumer", err)
	_, err = oc.Next(jetstream.FetchMaxWait(bound))
	must("planner replay", err)
	_, err = planner.Publish(ctx, streams.SubjectNodeDue("olt-1"), []byte(`{}`))
	must("planner node due", err)
	_, err = planner.Publish(ctx, streams.SubjectAudit("planner"), []byte(`{}`))
	must("planner audit", err)
	_, err = planner.Publish(ctx, streams.SubjectOLTDisabled("olt-1"), []byte(`{}`))
	must("planner auto-disable", err)
	_, err = planner.Publish(ctx, streams.SubjectExec("olt-1", streams.PhaseAborted), []byte(`{}`))
	must("planner aborted manual run", err)
	for _, st := range []struct{ stream, filter string }{
		{streams.StreamExec, streams.SubjectExec("*", streams.PhaseAborted)},
		{streams.StreamSchedule, streams.SubjectsManualRun},
	} {
		c, err := planner.OrderedConsumer(ctx, st.stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{st.filter}})
		must("planner ordered consumer on "+st.stream, err)
		_, err = c.Next(jetstream.FetchMaxWait(bound))
		must("planner read "+st.stream, err)
	}
	for _, bucket := range []string{streams.BucketSchedule, streams.BucketCancel, streams.BucketPlannerLeader} {
		pkv, err := planner.KeyValue(ctx, bucket)
		must("planner kv "+bucket, err)
		_, err = pkv.Put(ctx, "x1.olt-1", []byte(`{}`))
		must("planner kv put "+bucket, err)
		keys, err := pkv.ListKeys(ctx)
		must("planner kv keys "+bucket, err)
		for range keys.Keys() {
		}
	}

	// planner: watches the pollers' slots (the capacity per queue class).
	pkv, err := planner.KeyValue(ctx, streams.BucketPollers)
	must("planner kv "+streams.BucketPollers, err)
	_, err = pkv.Status(ctx)
	must("planner kv status "+streams.BucketPollers, err)
	pw, err := pkv.WatchAll(ctx)
	must("planner watch "+streams.BucketPollers, err)
	select {
	case <-pw.Updates(): // the first value or the end-of-initial marker
	case <-time.After(bound):
		t.Fatalf("planner watch %s: nothing within %s", streams.BucketPollers, bound)
	}
	must("planner watch stop", pw.Stop())

	// api: reads the persisted schedule and the queue report.
	for _, bucket := range []string{streams.BucketSchedule, streams.BucketPlannerLeader} {
		akv, err := api.KeyValue(ctx, bucket)
		must("api kv "+bucket, err)
		_, err = akv.Get(ctx, "x1.olt-1")
		must("api kv get "+bucket, err)
	}
	akv, err := api.KeyValue(ctx, streams.BucketSchedule)
	must("api kv", err)
	lister, err := akv.ListKeysFiltered(ctx, "*.olt-1")
	must("api kv list", err)
	for range lister.Keys() {
	}

	// poller: takes the NodeDue, holds the lease, publishes the execution,
	// scans FACHO_EXEC, dead-letters.
	poller, pollerV := conn(natsauth.Poller)
	fetchAck(poller, streams.StreamSchedule, streams.ConsumerPoller)
	kv, err := poller.KeyValue(ctx, streams.BucketLeases)
	must("poller kv", err)
	_, err = kv.Status(ctx)
	must("poller kv status", err)
	rev, err := kv.Create(ctx, "olt.olt-1", []byte(`{}`))
	must("poller lease create", err)
	_, err = kv.Get(ctx, "olt.olt-1")
	must("poller lease get", err)
	rev, err = kv.Update(ctx, "olt.olt-1", []byte(`{"renewed":true}`), rev)
	must("poller lease renew", err)
	w, err := kv.WatchAll(ctx)
	must("poller lease watch", err)
	must("poller lease watch stop", w.Stop())
	must("poller lease release", kv.Delete(ctx, "olt.olt-1", jetstream.LastRevision(rev)))
	ckv, err := poller.KeyValue(ctx, streams.BucketCancel)
	must("poller cancel kv", err)
	_, err = ckv.Get(ctx, "x1.olt-1")
	must("poller cancel get", err)
	cw, err := ckv.Watch(ctx, "exec.*", jetstream.UpdatesOnly())
	must("poller cancel watch", err)
	must("poller cancel watch stop", cw.Stop())
	_, err = poller.Publish(ctx, streams.SubjectExec("olt-1", streams.PhaseStarted), []byte(`{}`))
	must("poller exec", err)
	_, err = poller.Publish(ctx, streams.SubjectVarbinds("olt-1"), []byte(`{}`))
	must("poller varbinds", err)
	es, err := poller.Stream(ctx, streams.StreamExec)
	must("poller exec stream", err)
	_, err = es.GetLastMsgForSubject(ctx, streams.SubjectExec("olt-1", streams.PhaseStarted))
	must("poller last started", err)
	scan, err := poller.OrderedConsumer(ctx, streams.StreamExec, jetstream.OrderedConsumerConfig{FilterSubjects: []string{streams.SubjectExec("olt-1", streams.PhaseStarted)}})
	must("poller scan", err)
	b, err := scan.FetchNoWait(10)
	must("poller scan fetch", err)
	for range b.Messages() {
	}
	must("poller scan delete", poller.DeleteConsumer(ctx, streams.StreamExec, scan.CachedInfo().Name))
	_, err = poller.Publish(ctx, streams.SubjectDLQ(streams.ConsumerPoller), []byte(`{}`))
	must("poller dead letter", err)

	// projector: projects, publishes ONU changes asynchronously.
	projector, projectorV := conn(natsauth.Projector)
	fetchAck(projector, streams.StreamConfig, streams.ConsumerProjectorConfig)
	fetchAck(projector, streams.StreamVarbinds, streams.ConsumerProjectorVarbinds)
	f, err := projector.PublishAsync(streams.SubjectONU("olt-1", streams.ONUDiscovered), []byte(`{}`))
	must("projector async publish", err)
	select {
	case <-f.Ok():
	case err := <-f.Err():
		t.Fatalf("projector async publish: %v", err)
	case <-ctx.Done():
		t.Fatal("projector async publish: no ack")
	}
	_, err = projector.Publish(ctx, streams.SubjectDLQ(streams.ConsumerProjectorVarbinds), []byte(`{}`))
	must("projector dead letter", err)

	// auditor: reads executions and audit events.
	auditor, auditorV := conn(natsauth.Auditor)
	fetchAck(auditor, streams.StreamExec, streams.ConsumerAuditorExec)
	fetchAck(auditor, streams.StreamAudit, streams.ConsumerAuditorAudit)

	// observer: tails ONU changes live and replays them, through
	// JetStream.
	_, observer := env.Connect(t, natsauth.Observer)
	onu, err := observer.Stream(ctx, streams.StreamONU)
	must("observer stream", err)
	onuInfo, err := onu.Info(ctx)
	must("observer stream info", err)
	live, err := observer.OrderedConsumer(ctx, streams.StreamONU, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: onuInfo.State.LastSeq + 1})
	must("observer live consumer", err)
	oo, err := observer.OrderedConsumer(ctx, streams.StreamONU, jetstream.OrderedConsumerConfig{})
	must("observer ordered consumer", err)
	_, err = oo.Next(jetstream.FetchMaxWait(bound))
	must("observer replay", err)
	_, err = projector.Publish(ctx, streams.SubjectONU("olt-1", streams.ONUUpdated), []byte(`{}`))
	must("projector publish", err)
	_, err = live.Next(jetstream.FetchMaxWait(bound))
	must("observer live tail", err)

	for name, v := range map[string]violations{"api": apiV, "planner": plannerV, "poller": pollerV, "projector": projectorV, "auditor": auditorV} {
		t.Run(name, v.none)
	}
}

// With TLS verifying clients: a service connects with its nkey and a
// client certificate; a client without a certificate, or without TLS, is
// refused.
func TestTLS(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth(), jstest.WithTLS(true))
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, js := env.Connect(t, natsauth.API)
	if _, err := js.Publish(ctx, streams.SubjectBrand("b1"), []byte(`{}`)); err != nil {
		t.Fatalf("publish over tls: %v", err)
	}
	noCert := env.Client(natsauth.API)
	noCert.TLSCert, noCert.TLSKey = "", ""
	opts, err := noCert.Options(natsauth.API)
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(env.URL, opts...); err == nil {
		nc.Close()
		t.Fatal("a client without a certificate was accepted")
	}
	plain := env.Client(natsauth.API)
	plain.TLSCA, plain.TLSCert, plain.TLSKey = "", "", ""
	if opts, err = plain.Options(natsauth.API); err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(env.URL, opts...); err == nil {
		nc.Close()
		t.Fatal("a client without TLS was accepted")
	}
}
