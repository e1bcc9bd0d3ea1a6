package poller

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// Upgrading a deployed system: its pre-class `poller` durable (filter
// facho.schedule.due.>) holds a NodeDue on facho.schedule.due.<olt>.
// Provisioning narrows the durable's filter in place to the pre-class
// subjects and keeps what it held; a poller drains it.
func TestPreClassConsumerMigrates(t *testing.T) {
	opts := streams.Options{Storage: jetstream.MemoryStorage}
	e := newTestEnv(t, opts, huaweiOLT("olt-a", oltsim.Faults{}))
	c, err := e.JS.Consumer(e.ctx, streams.StreamSchedule, streams.ConsumerPoller)
	if err != nil {
		t.Fatal(err)
	}
	old := c.CachedInfo().Config
	old.FilterSubject = streams.SubjectsNodeDue // as deployed before classes
	if _, err := e.JS.UpdateConsumer(e.ctx, streams.StreamSchedule, old); err != nil {
		t.Fatal(err)
	}
	e.publishNodeDue(t, e.nodeDue("olt-a", "exec-old", "job-walk"))

	if err := streams.Provision(e.ctx, e.JS, opts); err != nil {
		t.Fatalf("provision over the pre-class consumer: %v", err)
	}
	c, err = e.JS.Consumer(e.ctx, streams.StreamSchedule, streams.ConsumerPoller)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.FilterSubject != streams.SubjectsNodeDueLegacy || info.NumPending != 1 {
		t.Fatalf("after provisioning: filter %q, %d pending; want %q, 1", info.Config.FilterSubject, info.NumPending, streams.SubjectsNodeDueLegacy)
	}
	e.startPoller(t, Config{PollerID: "p1"})
	waitFor(t, 30*time.Second, "the pre-class NodeDue run", func() bool {
		return len(e.execEvents(t, "olt-a", "exec-old").succeeded) == 1
	})
}
