package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Options sizes the streams for a deployment. Zero values take defaults.
type Options struct {
	// Replicas is the JetStream replica count (1 locally, 3 on a cluster).
	Replicas int
	// LeaseTTL is how long an OLT lease outlives a holder that stopped
	// renewing it.
	LeaseTTL time.Duration
	// PollersTTL is how long a poller process that stopped publishing its
	// state stays in BucketPollers (GET /api/v1/pollers/).
	PollersTTL time.Duration
	// VarbindsMaxAge bounds the raw varbind stream (replay window).
	VarbindsMaxAge time.Duration
	// ScheduleMaxAge bounds the NodeDue stream.
	ScheduleMaxAge time.Duration
	// EventsMaxAge bounds the execution, ONU, audit, notification and
	// dead-letter streams.
	EventsMaxAge time.Duration
	// Storage is file (default) or memory.
	Storage jetstream.StorageType
	// PollerAckWait is how long a NodeDue may stay unacknowledged before
	// redelivery; pollers send progress heartbeats while they work.
	PollerAckWait time.Duration
	// MaxBytes caps each stream but the configuration stream (the oldest
	// messages are discarded first); 0 means no cap, only the max ages.
	// facho dev sets one so the local disk stays bounded.
	MaxBytes int64
	// Compression is every stream's store compression: s2 (the default
	// with file storage) or none; see limits.go.
	Compression string
	// Streams overrides the limits of single streams by name (the
	// <STREAM>_MAX_AGE, _MAX_BYTES and _COMPRESSION variables).
	Streams map[string]StreamLimits
	// LeaderTTL is how long the active planner's leader lease outlives a
	// planner that stopped renewing it: a standby takes over within about
	// twice this.
	LeaderTTL time.Duration
}

// WithDefaults fills zero fields.
func (o Options) WithDefaults() Options {
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 30 * time.Second
	}
	if o.PollersTTL == 0 {
		o.PollersTTL = 15 * time.Second
	}
	if o.VarbindsMaxAge == 0 {
		o.VarbindsMaxAge = 7 * 24 * time.Hour
	}
	if o.ScheduleMaxAge == 0 {
		o.ScheduleMaxAge = 24 * time.Hour
	}
	if o.EventsMaxAge == 0 {
		o.EventsMaxAge = 30 * 24 * time.Hour
	}
	if o.PollerAckWait == 0 {
		o.PollerAckWait = 30 * time.Second
	}
	if o.LeaderTTL == 0 {
		o.LeaderTTL = 10 * time.Second
	}
	return o
}

// Validate checks the options after defaults.
func (o Options) Validate() error {
	var errs []error
	if o.Replicas < 1 || o.Replicas > 5 {
		errs = append(errs, fmt.Errorf("replicas %d: want 1..5", o.Replicas))
	}
	if o.LeaseTTL < time.Second {
		errs = append(errs, fmt.Errorf("lease ttl %s: want at least 1s", o.LeaseTTL))
	}
	if o.PollersTTL < 3*time.Second {
		errs = append(errs, fmt.Errorf("pollers ttl %s: want at least 3s", o.PollersTTL))
	}
	if o.LeaderTTL < time.Second {
		errs = append(errs, fmt.Errorf("planner leader ttl %s: want at least 1s", o.LeaderTTL))
	}
	if o.PollerAckWait < time.Second {
		errs = append(errs, fmt.Errorf("poller ack wait %s: want at least 1s", o.PollerAckWait))
	}
	if o.MaxBytes < 0 || (o.MaxBytes > 0 && o.MaxBytes < 1<<20) {
		errs = append(errs, fmt.Errorf("stream max bytes %d: want 0 (no cap) or at least 1 MiB", o.MaxBytes))
	}
	errs = append(errs, o.validateLimits())
	return errors.Join(errs...)
}

// streamMaxBytes is the byte cap of stream name: none (-1) for the
// configuration stream, which is the truth and is kept forever.
func (o Options) streamMaxBytes(name string) int64 {
	if name == StreamConfig || o.MaxBytes <= 0 {
		return -1
	}
	return o.MaxBytes
}

// StreamConfigs returns every stream Facho uses.
func StreamConfigs(o Options) []jetstream.StreamConfig {
	o = o.WithDefaults()
	mk := func(name, subj, desc string, maxAge time.Duration) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name:        name,
			Description: desc,
			Subjects:    []string{subj},
			Retention:   jetstream.LimitsPolicy,
			Storage:     o.Storage,
			Replicas:    o.Replicas,
			MaxAge:      maxAge,
			Duplicates:  2 * time.Minute,
			Discard:     jetstream.DiscardOld,
			MaxBytes:    o.streamMaxBytes(name),
		}
	}
	return o.withLimits([]jetstream.StreamConfig{
		mk(StreamConfig, SubjectsConfig, "configuration events: brands, OIDs, OLTs, jobs, assignments (kept forever)", 0),
		mk(StreamSchedule, SubjectsSchedule, "NodeDue: planner says a job is due on an OLT", o.ScheduleMaxAge),
		mk(StreamExec, SubjectsExec, "execution lifecycle: started, succeeded, failed, skipped, aborted, interrupted", o.EventsMaxAge),
		mk(StreamVarbinds, SubjectsVarbinds, "raw varbind batches read from OLTs", o.VarbindsMaxAge),
		mk(StreamONU, SubjectsONU, "ONU-change events for integrators", o.EventsMaxAge),
		mk(StreamAudit, SubjectsAudit, "audit events: coordinator decisions", o.EventsMaxAge),
		mk(StreamDLQ, SubjectsDLQ, "dead letters: messages a consumer could not process, with the reason", o.EventsMaxAge),
		mk(StreamOLT, SubjectsOLT, "OLT state events: availability", o.EventsMaxAge),
		mk(StreamAlert, SubjectsAlert, "alerts: firing, resolved, acknowledged", o.EventsMaxAge),
		mk(StreamTrap, SubjectsTrap, "SNMP traps of the OLTs: raw and decoded", o.EventsMaxAge),
		mk(StreamNotify, SubjectsNotify, "notifications: quota violations, disabled OLTs, repeated failures (also sent to webhooks)", o.EventsMaxAge),
	})
}

// Delivery bounds. No consumer redelivers a message without bound, and
// every message it gives up on ends in facho.dlq.<consumer> (see
// pkg/jsrouter for the rule of the router consumers).
const (
	// MaxFailedDeliveries: a router consumer dead-letters a message whose
	// handling failed on this many deliveries while the dependency's health
	// check passed ("gave up after N deliveries: <last error>"). Failures
	// during an outage (health check failing) do not count: the router
	// holds the message and retries it once the dependency is back.
	MaxFailedDeliveries = 5
	// MaxDeliveries: a router consumer dead-letters, before handling it, a
	// message delivered more often than this, whatever the reason (a
	// message that crashes its consumer is redelivered without ever
	// failing).
	MaxDeliveries = 20
	// PollerMaxDeliveries: a NodeDue still waiting (OLT busy, transient
	// failures) on this delivery is dead-lettered instead of NAKed again.
	PollerMaxDeliveries = 1000
)

// ConsumerDef binds a durable consumer to its stream.
type ConsumerDef struct {
	Stream string
	Config jetstream.ConsumerConfig
}

// ProjectionAckWait is the AckWait of the ordered (projection) consumers.
// With one message pending at a time, a message delivered to a process
// that died holds its consumer this long, so it is short; a live handler
// keeps its message with in-progress acks (pkg/jsrouter's
// InProgressEvery, a third of it).
const ProjectionAckWait = 10 * time.Second

// ProjectionGroupMaxMessages is the MaxAckPending of a grouped projection
// consumer: the most messages one group (one fetch) may hold.
const ProjectionGroupMaxMessages = 4096

// ConsumerConfigs returns every durable consumer Facho uses.
func ConsumerConfigs(o Options) []ConsumerDef {
	o = o.WithDefaults()
	mk := func(stream, name, filter, desc string, ackWait time.Duration, maxDeliver int) ConsumerDef {
		return ConsumerDef{Stream: stream, Config: jetstream.ConsumerConfig{
			Durable:       name,
			Description:   desc,
			FilterSubject: filter,
			AckPolicy:     jetstream.AckExplicitPolicy,
			DeliverPolicy: jetstream.DeliverAllPolicy,
			AckWait:       ackWait,
			MaxDeliver:    maxDeliver,
			MaxAckPending: 1000,
			Replicas:      o.Replicas,
		}}
	}
	// Projections skip sequences at or below their checkpoint, so they
	// must see a consumer's messages strictly in stream order: one message
	// pending at a time (a NAKed or crashed message holds back the next,
	// across replicas too). The server's MaxDeliver stays unlimited: it
	// cannot tell a database outage (wait, lose nothing) from a message
	// that fails on its own, and would drop the message silently and let
	// later ones overtake it. pkg/jsrouter bounds the deliveries instead
	// (MaxFailedDeliveries, MaxDeliveries) and ends every message it gives
	// up on in the dead letters.
	ordered := func(d ConsumerDef) ConsumerDef {
		d.Config.MaxAckPending = 1
		d.Config.MaxDeliver = -1
		return d
	}
	grouped := func(d ConsumerDef) ConsumerDef {
		d.Config.MaxAckPending = ProjectionGroupMaxMessages
		d.Config.MaxDeliver = -1
		return d
	}
	// A NodeDue whose OLT is busy is NAKed with a delay until the lease
	// frees: that is waiting, not failing, hence the high bound. The poller
	// ends a NodeDue on its PollerMaxDeliveries-th delivery itself (dead
	// letter) instead of NAKing it again; the server's MaxDeliver is one
	// more, a backstop that is never reached. One durable per queue class
	// (ConsumerPollerClass): a flood of discoveries does not hold back the
	// polls. The pre-class durable ConsumerPoller is kept, filtered to the
	// pre-class subjects only, so a deployed system drains the NodeDue it
	// held when it was upgraded (an existing consumer's filter is updated
	// in place by CreateOrUpdateConsumer).
	defs := []ConsumerDef{
		mk(StreamSchedule, ConsumerPoller, SubjectsNodeDueLegacy, "pollers drain due nodes published before queue classes", o.PollerAckWait, PollerMaxDeliveries+1),
	}
	for _, c := range Classes() {
		defs = append(defs, mk(StreamSchedule, ConsumerPollerClass(c), SubjectsNodeDueClass(c), "pollers take due nodes of class "+c, o.PollerAckWait, PollerMaxDeliveries+1))
	}
	return append(defs,
		ordered(mk(StreamConfig, ConsumerProjectorConfig, SubjectsConfig, "projector: configuration read model", ProjectionAckWait, 10)),
		ordered(mk(StreamSchedule, ConsumerProjectorSchedule, SubjectsNodeDue, "projector: PENDING executions", ProjectionAckWait, 10)),
		ordered(mk(StreamExec, ConsumerProjectorExec, SubjectsExec, "projector: executions and attempts", ProjectionAckWait, 10)),
		// The varbind projection fetches many messages and hands each to
		// the worker of its OLT, which applies what it holds in one
		// transaction (services/projector varbindloop.go, pipeline.go):
		// one holder at a time (a Postgres advisory lock), an OLT in one
		// worker with a FIFO queue, and at start the messages a previous
		// holder left unacked are applied first, so each OLT's batches
		// are still applied in stream order.
		grouped(mk(StreamVarbinds, ConsumerProjectorVarbinds, SubjectsVarbinds, "projector: onu_data and onu_history", ProjectionAckWait, 10)),
		// The auditor's coordinator_logs are a projection too (checkpointed).
		ordered(mk(StreamExec, ConsumerAuditorExec, SubjectsExec, "auditor: coordinator logs of executions", ProjectionAckWait, 10)),
		ordered(mk(StreamAudit, ConsumerAuditorAudit, SubjectsAudit, "auditor: coordinator logs of audit events", ProjectionAckWait, 10)),
		// Dead-lettered varbind batches: their execution is not SUCCESS.
		ordered(mk(StreamDLQ, ConsumerProjectorDLQ, SubjectDLQ(ConsumerProjectorVarbinds), "projector: executions whose varbind batches were dead-lettered", ProjectionAckWait, 10)),
		// The auditor's hourly quota trackers and violations.
		ordered(mk(StreamSchedule, ConsumerAuditorSchedule, SubjectsNodeDue, "auditor: quota trackers (what is due in each hour)", ProjectionAckWait, 10)),
		ordered(mk(StreamExec, ConsumerAuditorQuotaExec, SubjectsExec, "auditor: quota trackers (what each execution came to), failure streaks", ProjectionAckWait, 10)),
		ordered(mk(StreamConfig, ConsumerAuditorConfig, SubjectsConfigOLT, "auditor: quotas of OLTs disabled or deleted mid-hour are INTERRUPTED", ProjectionAckWait, 10)),
		ordered(mk(StreamAudit, ConsumerAuditorQuotaAudit, SubjectsAudit, "auditor: OLT_DISABLED interrupts quotas and is notified", ProjectionAckWait, 10)),
		ordered(mk(StreamNotify, ConsumerAuditorNotify, SubjectsNotifyQuotaViolation, "auditor: quota_violations", ProjectionAckWait, 10)),
		ordered(mk(StreamNotify, ConsumerAuditorNotifyLog, SubjectsNotifyQuotaViolation, "auditor: QUOTA_VIOLATION coordinator logs", ProjectionAckWait, 10)),
		// The alerter: its evaluation state and outbox move with each
		// consumer's checkpoint; the alerts read model.
		// Grouped: the alerter evaluates what is waiting in one transaction.
		grouped(mk(StreamONU, ConsumerAlerterONU, SubjectsONU, "alerter: ONU rules", ProjectionAckWait, 10)),
		ordered(mk(StreamOLT, ConsumerAlerterOLT, SubjectsOLTAvailability, "alerter: OLT unreachable", ProjectionAckWait, 10)),
		ordered(mk(StreamExec, ConsumerAlerterExec, SubjectsExec, "alerter: empty reads", ProjectionAckWait, 10)),
		ordered(mk(StreamNotify, ConsumerAlerterNotify, SubjectsNotify, "alerter: quota violations, auto-disabled OLTs", ProjectionAckWait, 10)),
		ordered(mk(StreamConfig, ConsumerAlerterConfig, SubjectsConfig, "alerter: OLT names, brands, silences", ProjectionAckWait, 10)),
		ordered(mk(StreamAlert, ConsumerAlerterAcks, SubjectsAlertAcknowledged, "alerter: acknowledgements", ProjectionAckWait, 10)),
		// Grouped: the alerts read model is applied in groups as well.
		grouped(mk(StreamAlert, ConsumerAlerterAlerts, SubjectsAlert, "alerter: alerts read model", ProjectionAckWait, 10)),
		ordered(mk(StreamOLT, ConsumerProjectorOLT, SubjectsOLTAvailability, "projector: olt_availability", ProjectionAckWait, 10)),
		ordered(mk(StreamOLT, ConsumerProjectorHealth, SubjectsOLTHealth, "projector: olt_health, olt_pon_health", ProjectionAckWait, 10)),
		ordered(mk(StreamOLT, ConsumerAlerterHealth, SubjectsOLTHealth, "alerter: OLT health rules", ProjectionAckWait, 10)),
		// Grouped: the projector holding the trap projection applies what
		// is waiting in one transaction (services/projector traps_loop.go).
		grouped(mk(StreamTrap, ConsumerProjectorTraps, SubjectsTrap, "projector: traps read model, ONU status from traps", ProjectionAckWait, 10)),
	)
}

// LeaseBucketConfig is the KV bucket of OLT leases: History 1 and the
// bucket TTL as lease TTL, so a renewal by Update(revision) restarts the
// clock (a per-key TTL would be dropped by Update), and limit markers, so
// an expiry is an event (a release is a KV delete, an expiry a purge
// marker).
func LeaseBucketConfig(o Options) jetstream.KeyValueConfig {
	o = o.WithDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketLeases,
		Description: "one lease per OLT: one heavy SNMP operation at a time",
		History:     1,
		TTL:         o.LeaseTTL,
		// An expiry by TTL leaves a delete marker (Nats-Marker-Reason
		// MaxAge) that watchers see, unlike a silent removal: pollers turn
		// the expiry of a started attempt's lease into execution.interrupted.
		// The server keeps the marker about one TTL (MaxAge applies to it).
		LimitMarkerTTL: o.LeaseTTL,
		Storage:        o.Storage,
		Replicas:       o.Replicas,
	}
}

// Provision creates or updates every stream, consumer and KV bucket. It is
// idempotent and safe to run from every service at start-up.
func Provision(ctx context.Context, js jetstream.JetStream, o Options) error {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return fmt.Errorf("provision streams: %w", err)
	}
	for _, sc := range StreamConfigs(o) {
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("provision stream %s: %w", sc.Name, err)
		}
	}
	for _, cd := range ConsumerConfigs(o) {
		if _, err := js.CreateOrUpdateConsumer(ctx, cd.Stream, cd.Config); err != nil {
			return fmt.Errorf("provision consumer %s/%s: %w", cd.Stream, cd.Config.Durable, err)
		}
	}
	kvc := LeaseBucketConfig(o)
	_, err := js.CreateOrUpdateKeyValue(ctx, kvc)
	if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
		// A server before 2.11 has no limit markers: leases still expire,
		// and pollers find the executions of dead holders by their
		// periodic sweep instead of at the expiry.
		kvc.LimitMarkerTTL = 0
		_, err = js.CreateOrUpdateKeyValue(ctx, kvc)
	}
	if err != nil {
		return fmt.Errorf("provision kv %s: %w", BucketLeases, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, PollersBucketConfig(o)); err != nil {
		return fmt.Errorf("provision kv %s: %w", BucketPollers, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, OLTSNMPBucketConfig(o)); err != nil {
		return fmt.Errorf("provision kv %s: %w", BucketOLTSNMP, err)
	}
	for _, kv := range []jetstream.KeyValueConfig{ScheduleBucketConfig(o), CancelBucketConfig(o), LeaderBucketConfig(o), AvailabilityLeaderBucketConfig(o)} {
		if _, err := js.CreateOrUpdateKeyValue(ctx, kv); err != nil {
			return fmt.Errorf("provision kv %s: %w", kv.Bucket, err)
		}
	}
	return nil
}

// ProjectorVarbindsPartitionConfig is the durable of partition i of n of
// the varbind projection, as the projector creates it the first time it
// leads the partition: the grouped projection consumer's settings,
// starting at startSeq (the sequence after the projection's checkpoint,
// below which every batch is applied), on the stream's replicas.
func ProjectorVarbindsPartitionConfig(i, n int, startSeq uint64) jetstream.ConsumerConfig {
	cfg := jetstream.ConsumerConfig{
		Durable:       ConsumerProjectorVarbindsPartition(i, n),
		Description:   fmt.Sprintf("projector: onu_data and onu_history, partition %d of %d", i, n),
		FilterSubject: SubjectsVarbinds,
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckWait:       ProjectionAckWait,
		MaxDeliver:    -1,
		MaxAckPending: ProjectionGroupMaxMessages,
	}
	if startSeq > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, startSeq
	}
	return cfg
}
