package natsauth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/streams"
)

// peopleEnv is a server with two integrators (acme, globex), an event on
// every integrator stream and one dead letter.
func peopleEnv(t *testing.T) *jstest.Env {
	t.Helper()
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth(),
		jstest.WithIntegrator("acme"), jstest.WithIntegrator("globex", "billing"))
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for _, s := range []string{
		streams.SubjectONU("olt-1", streams.ONUDiscovered),
		streams.SubjectAlert("olt-1", streams.AlertStateFiring),
		streams.SubjectsNotify[:len(streams.SubjectsNotify)-1] + "x",
		streams.SubjectDLQ(streams.ConsumerProjectorVarbinds),
	} {
		if _, err := env.JS.Publish(ctx, s, []byte(`{}`)); err != nil {
			t.Fatalf("admin publish %s: %v", s, err)
		}
	}
	return env
}

type actor struct {
	t  *testing.T
	js jetstream.JetStream
	nc *nats.Conn
	v  violations
	// noDelete: the refused clean-up of its own ordered consumers (they
	// expire by themselves) is expected.
	noDelete bool
}

func connectAs(t *testing.T, env *jstest.Env, identity string) actor {
	v := make(violations, 64)
	nc, js := env.Connect(t, identity, v.handler())
	return actor{t: t, js: js, nc: nc, v: v, noDelete: identity == natsauth.Observer || identity == natsauth.Operator}
}

// none fails on a violation but the expected clean-up one.
func (a actor) none() {
	a.t.Helper()
	for {
		select {
		case err := <-a.v:
			if a.noDelete && strings.Contains(err.Error(), "$JS.API.CONSUMER.DELETE.") {
				continue
			}
			a.t.Fatalf("unexpected permissions violation: %v", err)
		default:
			return
		}
	}
}

// may runs what the identity may do: it succeeds with no violation.
func (a actor) may(what string, do func(ctx context.Context, js jetstream.JetStream) error) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := do(ctx, a.js); err != nil {
		a.t.Errorf("%s: %v", what, err)
	}
	a.none()
}

// mayNot runs what the identity may not do: it fails and the server
// reports the violation on subject.
func (a actor) mayNot(what, subject string, do func(ctx context.Context, js jetstream.JetStream) error) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := do(ctx, a.js); err == nil {
		a.t.Errorf("%s: allowed", what)
		return
	}
	a.v.next(a.t, subject)
}

func readOrdered(stream string) func(ctx context.Context, js jetstream.JetStream) error {
	return func(ctx context.Context, js jetstream.JetStream) error {
		c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
		if err != nil {
			return err
		}
		_, err = c.Next(jetstream.FetchMaxWait(bound))
		return err
	}
}

func createDurable(stream, name string) func(ctx context.Context, js jetstream.JetStream) error {
	return func(ctx context.Context, js jetstream.JetStream) error {
		_, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy})
		return err
	}
}

func deleteConsumer(stream, name string) func(ctx context.Context, js jetstream.JetStream) error {
	return func(ctx context.Context, js jetstream.JetStream) error { return js.DeleteConsumer(ctx, stream, name) }
}

func listing(ctx context.Context, js jetstream.JetStream) error {
	n := 0
	sl := js.ListStreams(ctx)
	for range sl.Info() {
		n++
	}
	if sl.Err() != nil {
		return sl.Err()
	}
	names := js.StreamNames(ctx)
	for range names.Name() {
	}
	if names.Err() != nil {
		return names.Err()
	}
	if n < 8 {
		return errors.New("stream list: fewer streams than provisioned")
	}
	s, err := js.Stream(ctx, streams.StreamConfig)
	if err != nil {
		return err
	}
	found := false
	cl := s.ListConsumers(ctx)
	for ci := range cl.Info() {
		found = found || ci.Name == streams.ConsumerProjectorConfig
	}
	if cl.Err() != nil {
		return cl.Err()
	}
	cn := s.ConsumerNames(ctx)
	for range cn.Name() {
	}
	if cn.Err() != nil {
		return cn.Err()
	}
	if !found {
		return errors.New("consumer list: no projector-config")
	}
	_, err = s.Consumer(ctx, streams.ConsumerProjectorConfig) // consumer info
	return err
}

func consumerExists(t *testing.T, env *jstest.Env, stream, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, err := env.JS.Consumer(ctx, stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// The observer reads everything with ordered consumers and lists streams
// and consumers; it deletes nothing and creates no durable it does not own
// (Facho's, an integrator's).
func TestObserverIdentity(t *testing.T) {
	env := peopleEnv(t)
	acme := connectAs(t, env, "integrator:acme")
	acme.may("acme creates its durable", createDurable(streams.StreamONU, "acme-1"))

	obs := connectAs(t, env, natsauth.Observer)
	obs.may("list streams and consumers, consumer info", listing)
	obs.may("read FACHO_ONU", readOrdered(streams.StreamONU))
	obs.may("read FACHO_DLQ", readOrdered(streams.StreamDLQ))
	obs.may("consumer info of an integrator's durable", func(ctx context.Context, js jetstream.JetStream) error {
		_, err := js.Consumer(ctx, streams.StreamONU, "acme-1")
		return err
	})
	obs.may("get a message", func(ctx context.Context, js jetstream.JetStream) error {
		s, err := js.Stream(ctx, streams.StreamONU)
		if err != nil {
			return err
		}
		_, err = s.GetMsg(ctx, 1)
		return err
	})

	obs.mayNot("delete an integrator's durable", "$JS.API.CONSUMER.DELETE.FACHO_ONU.acme-1", deleteConsumer(streams.StreamONU, "acme-1"))
	obs.mayNot("take over an integrator's durable", "$JS.API.CONSUMER.CREATE.FACHO_ONU.acme-1", createDurable(streams.StreamONU, "acme-1"))
	obs.mayNot("create an integrator's durable", "$JS.API.CONSUMER.CREATE.FACHO_ALERT.acme-2", createDurable(streams.StreamAlert, "acme-2"))
	obs.mayNot("create Facho's durable", "$JS.API.CONSUMER.CREATE.FACHO_CONFIG.projector-config", createDurable(streams.StreamConfig, streams.ConsumerProjectorConfig))
	obs.mayNot("delete a Facho durable", "$JS.API.CONSUMER.DELETE.FACHO_CONFIG.projector-config", deleteConsumer(streams.StreamConfig, streams.ConsumerProjectorConfig))
	obs.mayNot("legacy durable create", "$JS.API.CONSUMER.DURABLE.CREATE.FACHO_ONU.mine", func(ctx context.Context, js jetstream.JetStream) error {
		_, err := obs.nc.RequestWithContext(ctx, "$JS.API.CONSUMER.DURABLE.CREATE.FACHO_ONU.mine", []byte(`{"stream_name":"FACHO_ONU","config":{"durable_name":"mine"}}`))
		return err
	})
	obs.mayNot("steal from an integrator's durable", "$JS.API.CONSUMER.MSG.NEXT.FACHO_ONU.acme-1", func(ctx context.Context, js jetstream.JetStream) error {
		_, err := obs.nc.RequestWithContext(ctx, "$JS.API.CONSUMER.MSG.NEXT.FACHO_ONU.acme-1", []byte(`{"batch":1,"no_wait":true}`))
		return err
	})
	var ordered string
	obs.may("an ordered consumer of its own", func(ctx context.Context, js jetstream.JetStream) error {
		c, err := js.OrderedConsumer(ctx, streams.StreamONU, jetstream.OrderedConsumerConfig{})
		if err != nil {
			return err
		}
		if _, err := c.Next(jetstream.FetchMaxWait(bound)); err != nil {
			return err
		}
		ordered = c.CachedInfo().Name
		return nil
	})
	obs.mayNot("delete even its own consumer", "$JS.API.CONSUMER.DELETE.FACHO_ONU."+ordered, deleteConsumer(streams.StreamONU, ordered))
	obs.mayNot("purge", "$JS.API.STREAM.PURGE.FACHO_ONU", func(ctx context.Context, js jetstream.JetStream) error {
		s, err := js.Stream(ctx, streams.StreamONU)
		if err != nil {
			return err
		}
		return s.Purge(ctx)
	})
	obs.mayNot("step down", "$JS.API.STREAM.LEADER.STEPDOWN.FACHO_ONU", func(ctx context.Context, js jetstream.JetStream) error {
		_, err := obs.nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN.FACHO_ONU", nil)
		return err
	})
	if !consumerExists(t, env, streams.StreamONU, "acme-1") || !consumerExists(t, env, streams.StreamConfig, streams.ConsumerProjectorConfig) {
		t.Fatal("a durable is gone")
	}
	if consumerExists(t, env, streams.StreamAlert, "acme-2") {
		t.Fatal("the observer created acme-2")
	}
}

// The operator is the observer plus leader step-downs and advisories.
func TestOperatorIdentity(t *testing.T) {
	env := peopleEnv(t)
	op := connectAs(t, env, natsauth.Operator)
	op.may("list streams and consumers, consumer info", listing)
	op.may("read the dead letters", readOrdered(streams.StreamDLQ))
	op.may("ask a stream leader to step down", func(ctx context.Context, js jetstream.JetStream) error {
		// A single server answers (not clustered): answered means allowed.
		_, err := op.nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN.FACHO_ONU", nil)
		return err
	})
	op.may("ask a consumer leader to step down", func(ctx context.Context, js jetstream.JetStream) error {
		_, err := op.nc.RequestWithContext(ctx, "$JS.API.CONSUMER.LEADER.STEPDOWN.FACHO_CONFIG.projector-config", nil)
		return err
	})
	op.may("watch advisories", func(ctx context.Context, js jetstream.JetStream) error {
		sub, err := op.nc.SubscribeSync("$JS.EVENT.ADVISORY.>")
		if err != nil {
			return err
		}
		defer func() { _ = sub.Unsubscribe() }()
		if err := op.nc.Flush(); err != nil {
			return err
		}
		if _, err := env.JS.CreateOrUpdateConsumer(ctx, streams.StreamONU, jetstream.ConsumerConfig{Name: "advisory-trigger"}); err != nil {
			return err
		}
		_, err = sub.NextMsg(bound)
		return err
	})
	op.mayNot("delete a consumer", "$JS.API.CONSUMER.DELETE.FACHO_CONFIG.projector-config", deleteConsumer(streams.StreamConfig, streams.ConsumerProjectorConfig))
	op.mayNot("delete a message", "$JS.API.STREAM.MSG.DELETE.FACHO_DLQ", func(ctx context.Context, js jetstream.JetStream) error {
		s, err := js.Stream(ctx, streams.StreamDLQ)
		if err != nil {
			return err
		}
		return s.DeleteMsg(ctx, 1)
	})
	op.mayNot("republish a dead letter", streams.SubjectDLQ(streams.ConsumerProjectorVarbinds), func(ctx context.Context, js jetstream.JetStream) error {
		_, err := js.Publish(ctx, streams.SubjectDLQ(streams.ConsumerProjectorVarbinds), []byte(`{}`))
		return err
	})
	op.mayNot("create Facho's durable", "$JS.API.CONSUMER.CREATE.FACHO_CONFIG.projector-config", createDurable(streams.StreamConfig, streams.ConsumerProjectorConfig))
	if n := msgs(t, env.JS, streams.StreamDLQ); n != 1 {
		t.Fatalf("FACHO_DLQ holds %d messages, want 1", n)
	}
}

// An integrator creates, reads, acks and deletes its own durables on the
// ONU, alert and notification streams, and nothing else; its durables are
// deleted by nobody but itself and the admin.
func TestIntegratorIdentity(t *testing.T) {
	env := peopleEnv(t)
	acme := connectAs(t, env, "integrator:acme")
	for _, stream := range natsauth.IntegratorStreams() {
		acme.may("create acme-1 on "+stream, createDurable(stream, "acme-1"))
		acme.may("fetch and ack on "+stream, func(ctx context.Context, js jetstream.JetStream) error {
			c, err := js.Consumer(ctx, stream, "acme-1")
			if err != nil {
				return err
			}
			b, err := c.Fetch(1, jetstream.FetchMaxWait(bound))
			if err != nil {
				return err
			}
			for m := range b.Messages() {
				return m.DoubleAck(ctx)
			}
			return errors.Join(errors.New("no message"), b.Error())
		})
		acme.may("stream info of "+stream, func(ctx context.Context, js jetstream.JetStream) error {
			s, err := js.Stream(ctx, stream)
			if err != nil {
				return err
			}
			_, err = s.Info(ctx)
			return err
		})
	}
	acme.may("create acme-2", createDurable(streams.StreamONU, "acme-2"))
	acme.may("delete acme-2", deleteConsumer(streams.StreamONU, "acme-2"))

	acme.mayNot("a durable it did not declare", "$JS.API.CONSUMER.CREATE.FACHO_ONU.acme-x", createDurable(streams.StreamONU, "acme-x"))
	acme.mayNot("another integrator's durable", "$JS.API.CONSUMER.CREATE.FACHO_ONU.globex-billing", createDurable(streams.StreamONU, "globex-billing"))
	acme.mayNot("its durable on another stream", "$JS.API.CONSUMER.CREATE.FACHO_CONFIG.acme-1", createDurable(streams.StreamConfig, "acme-1"))
	acme.mayNot("read another stream", "$JS.API.CONSUMER.CREATE.FACHO_CONFIG", readOrdered(streams.StreamConfig))
	acme.mayNot("an ordered consumer", "$JS.API.CONSUMER.CREATE.FACHO_ONU", readOrdered(streams.StreamONU))
	acme.mayNot("list streams", "$JS.API.STREAM.LIST", func(ctx context.Context, js jetstream.JetStream) error {
		l := js.ListStreams(ctx)
		for range l.Info() {
		}
		return l.Err()
	})
	acme.mayNot("publish", "facho.onu.olt-1.discovered", func(ctx context.Context, js jetstream.JetStream) error {
		_, err := js.Publish(ctx, streams.SubjectONU("olt-1", streams.ONUDiscovered), []byte(`{}`))
		return err
	})
	acme.mayNot("purge", "$JS.API.STREAM.PURGE.FACHO_ONU", func(ctx context.Context, js jetstream.JetStream) error {
		_, err := acme.nc.RequestWithContext(ctx, "$JS.API.STREAM.PURGE.FACHO_ONU", nil)
		return err
	})

	globex := connectAs(t, env, "integrator:globex")
	globex.may("create globex-billing", createDurable(streams.StreamAlert, "globex-billing"))
	globex.mayNot("delete acme's durable", "$JS.API.CONSUMER.DELETE.FACHO_ONU.acme-1", deleteConsumer(streams.StreamONU, "acme-1"))
	globex.mayNot("read from acme's durable", "$JS.API.CONSUMER.MSG.NEXT.FACHO_ONU.acme-1", func(ctx context.Context, js jetstream.JetStream) error {
		_, err := globex.nc.RequestWithContext(ctx, "$JS.API.CONSUMER.MSG.NEXT.FACHO_ONU.acme-1", []byte(`{"batch":1,"no_wait":true}`))
		return err
	})
	// Every identity but the admin and acme: acme's durable stays.
	for _, id := range natsauth.Names() {
		if id == natsauth.Admin {
			continue
		}
		t.Run("delete as "+id, func(t *testing.T) {
			a := connectAs(t, env, id)
			a.mayNot("delete acme's durable", "$JS.API.CONSUMER.DELETE.FACHO_ONU.acme-1", deleteConsumer(streams.StreamONU, "acme-1"))
		})
	}
	if !consumerExists(t, env, streams.StreamONU, "acme-1") {
		t.Fatal("acme-1 was deleted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := env.JS.DeleteConsumer(ctx, streams.StreamONU, "acme-1"); err != nil {
		t.Fatalf("admin deletes acme-1: %v", err)
	}
	acme.may("delete acme-1 on FACHO_ALERT", deleteConsumer(streams.StreamAlert, "acme-1"))
}

// A push consumer delivers to any subject someone subscribes to, whoever
// created it: people may not subscribe to the event subjects, so the
// observer cannot make the server write FACHO_ONU's events into
// FACHO_CONFIG (deliver subject facho.config.olt.evil) and read them
// there; nor can an integrator with nobody listening.
func TestPeopleCannotWriteThroughAPushConsumer(t *testing.T) {
	env := peopleEnv(t)
	for _, tc := range []struct{ identity, consumer string }{
		{natsauth.Observer, "evil-push"},
		{natsauth.Operator, "evil-push-2"},
		{"integrator:acme", "acme-3"},
	} {
		a := connectAs(t, env, tc.identity)
		// The server refuses the subscription (asynchronously) for
		// everyone: only the admin may subscribe to event subjects.
		if _, err := a.nc.SubscribeSync(streams.SubjectOLT("evil")); err == nil {
			a.v.next(t, streams.SubjectOLT("evil"))
		}
		before := msgs(t, env.JS, streams.StreamConfig)
		a.may("create a push consumer delivering into another stream's subject", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.CreateOrUpdateConsumer(ctx, streams.StreamONU, jetstream.ConsumerConfig{Durable: tc.consumer, DeliverSubject: streams.SubjectOLT("evil")})
			return err
		})
		time.Sleep(time.Second)
		if after := msgs(t, env.JS, streams.StreamConfig); after != before {
			t.Fatalf("%s: FACHO_CONFIG holds %d messages, %d before: a push consumer wrote into it", tc.identity, after, before)
		}
	}
}

// An integrator's durables deliver by push too: to a subject under its
// own inbox prefix (the only subjects it may subscribe to), with acks,
// flow control and heartbeats; another integrator cannot subscribe there.
func TestIntegratorPushDelivery(t *testing.T) {
	env := peopleEnv(t)
	acme := connectAs(t, env, "integrator:acme")
	deliver := natsauth.InboxPrefix("integrator:acme") + ".push.acme-2"
	for _, stream := range natsauth.IntegratorStreams() {
		acme.may("push durable acme-2 on "+stream+", receive and ack", func(ctx context.Context, js jetstream.JetStream) error {
			pc, err := js.CreateOrUpdatePushConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "acme-2", DeliverSubject: deliver + "." + stream,
				AckPolicy: jetstream.AckExplicitPolicy, FlowControl: true, IdleHeartbeat: time.Second})
			if err != nil {
				return err
			}
			got := make(chan error, 1)
			cc, err := pc.Consume(func(m jetstream.Msg) {
				select {
				case got <- m.DoubleAck(ctx):
				default:
				}
			})
			if err != nil {
				return err
			}
			defer cc.Stop()
			select {
			case err := <-got:
				if err != nil {
					return err
				}
			case <-ctx.Done():
				return ctx.Err()
			}
			info, err := pc.Info(ctx)
			if err != nil {
				return err
			}
			if info.AckFloor.Stream < 1 {
				return errors.New("the ack did not reach the server")
			}
			return nil
		})
	}
	globex := connectAs(t, env, "integrator:globex")
	if _, err := globex.nc.SubscribeSync(deliver + "." + streams.StreamONU); err == nil {
		globex.v.next(t, deliver+"."+streams.StreamONU)
	}
	acme.may("delete its push durable", deleteConsumer(streams.StreamONU, "acme-2"))
}
