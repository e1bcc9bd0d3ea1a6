package natsauth

import (
	"fmt"
	"sort"
	"strings"

	"github.com/facho-olt/facho/streams"
)

// Identity names: one per service binary (the servicemain Binary.Name), the
// operator's admin identity and a read-only observer.
const (
	Planner   = "planner"
	Poller    = "poller"
	Projector = "projector"
	Auditor   = "auditor"
	API       = "api"
	// Availability probes OLTs and publishes their availability.
	Availability = "availability"
	// Alerter evaluates the alert rules and sends the alerts.
	Alerter = "alerter"
	// Trapd receives the OLTs' SNMP traps and publishes them.
	Trapd = "trapd"
	// Admin provisions the streams (facho streams provision, facho dev)
	// and is the only identity that may delete or purge anything.
	Admin = "admin"
	// Observer reads every stream (live tail, replay tools) and publishes
	// nothing: ephemeral ordered consumers only, no delete; it lists
	// streams and consumers and reads their info.
	Observer = "observer"
	// Operator is the observer plus what a NOC needs to unstick things
	// (leader step-downs, JetStream advisories), nothing destructive.
	Operator = "operator"
)

// Identity is what one NATS identity may do. Everything not granted here is
// refused by the server.
type Identity struct {
	Name        string
	Description string
	// Publish lists the event subjects (wildcards allowed) the identity
	// publishes: the subjects it owns in the catalogue of package streams.
	Publish []string
	// Consumers lists the durable consumers it reads, acknowledges and
	// dead-letters (facho.dlq.<consumer>). A durable has one owner.
	Consumers []string
	// Ordered lists the streams on which it creates ephemeral ordered
	// consumers (replay, scans).
	Ordered []string
	// ReadMsgs lists the streams whose messages it reads directly (last
	// message of a subject, message by sequence).
	ReadMsgs []string
	// Buckets lists the KV buckets it reads and writes.
	Buckets []string
	// ReadBuckets lists the KV buckets it only reads (get, list, watch).
	ReadBuckets []string
	// Admin: everything, including provisioning, delete and purge.
	Admin bool
	// SubscribeEvents lets it subscribe to the event subjects themselves
	// (a live tail without a consumer).
	SubscribeEvents bool
	// CreatesDurables lists durables it creates itself, where it knows
	// their start (the varbind projection's partitions: at its
	// checkpoint), and reads, acknowledges and dead-letters like
	// Consumers. Others may neither create nor read them.
	CreatesDurables []string
	// Inspect lets it list streams and consumers (nats stream ls, nats
	// consumer ls).
	Inspect bool
	// NoDelete: its ordered consumers expire by themselves (their
	// inactivity threshold); it may delete no consumer at all.
	NoDelete bool
	// StepDown lets it ask a stream's or a consumer's leader to step down
	// (a stuck replica), which loses nothing.
	StepDown bool
	// Advisories lets it subscribe to JetStream's advisories and metrics
	// ($JS.EVENT.>, nats event).
	Advisories bool
	// Durables are the durable consumers it creates, reads, acks and
	// deletes itself, on each stream of DurableStreams (an integrator's).
	// Nobody else but the admin may create, read or delete them. An
	// identity with DurableStreams reads the info of those streams only.
	Durables       []string
	DurableStreams []string
}

// Table is every identity. Extend it when a service starts publishing a new
// subject, owns a new durable consumer or uses a new KV bucket; the
// publishers must be those of streams.Catalogue (a test compares them).
func Table() []Identity {
	return []Identity{
		{
			Name:        Planner,
			Description: "plans executions from the configuration stream",
			// NodeDue, its audit events, the auto-disable of an OLT after
			// consecutive failures, the aborted end of a manual run it
			// cannot make.
			Publish: []string{streams.SubjectsNodeDue, streams.SubjectsAudit, streams.SubjectOLTDisabled("*"),
				streams.SubjectExec("*", streams.PhaseAborted),
				// The skip of a due node of an unavailable OLT.
				streams.SubjectExec("*", streams.PhaseSkipped)},
			// The configuration replay, the terminal execution events, the
			// manual run requests, the OLTs' availability.
			Ordered: []string{streams.StreamConfig, streams.StreamExec, streams.StreamSchedule, streams.StreamOLT},
			Buckets: []string{streams.BucketSchedule, streams.BucketCancel, streams.BucketPlannerLeader},
			// The pollers' slots per queue class: the capacity it
			// dispatches against (watched); whether an OLT has an ONU
			// known to its gets (a get waits for its OLT's first
			// discovery): the ONU set, the last discovered event of the OLT.
			ReadMsgs:    []string{streams.StreamONU},
			ReadBuckets: []string{streams.BucketPollers, streams.BucketOLTSNMP},
		},
		{
			Name:        Poller,
			Description: "runs the SNMP work under per-OLT leases",
			// Health readings of jobs of kind health (health.go).
			Publish: []string{streams.SubjectsVarbinds, streams.SubjectsExec, streams.SubjectsAudit, streams.SubjectsOLTHealth},
			// One durable per queue class; ConsumerPoller drains pre-class NodeDue.
			Consumers: []string{streams.ConsumerPoller, streams.ConsumerPollerClass(streams.ClassHigh), streams.ConsumerPollerClass(streams.ClassPolling),
				streams.ConsumerPollerClass(streams.ClassDiscovery), streams.ConsumerPollerClass(streams.ClassRetry)},
			// FACHO_ONU: the discovered ONUs a get reads (getonus.go): the
			// last event of the OLT's subjects, then a fold of the new ones.
			Ordered:  []string{streams.StreamExec, streams.StreamONU},
			ReadMsgs: []string{streams.StreamExec, streams.StreamONU},
			// Leases, its process record, what it learned of each OLT; the
			// planner's cancellations (read and watched).
			Buckets: []string{streams.BucketLeases, streams.BucketPollers, streams.BucketOLTSNMP, streams.BucketCancel},
		},
		{
			Name:        Projector,
			Description: "builds the read models and publishes ONU changes (and VARBINDS_UNPLACED audit events)",
			// The manual run requests: a confirmation poll of an OLT after
			// an ONU-down trap (traps.go).
			Publish: []string{streams.SubjectsONU, streams.SubjectsAudit, streams.SubjectsManualRun},
			Consumers: []string{
				streams.ConsumerProjectorConfig, streams.ConsumerProjectorSchedule,
				streams.ConsumerProjectorExec, streams.ConsumerProjectorVarbinds,
				streams.ConsumerProjectorDLQ, streams.ConsumerProjectorOLT, streams.ConsumerProjectorHealth,
				streams.ConsumerProjectorTraps,
			},
			// At start, the varbind batches a previous holder fetched and
			// did not ack are read and applied first (varbindloop.go).
			ReadMsgs: []string{streams.StreamVarbinds},
			// The varbind projection's partitions (-partitions > 1).
			CreatesDurables: partitionDurableNames(),
		},
		{
			Name:        Auditor,
			Description: "writes coordinator logs, quota trackers and violations; sends notifications",
			Publish:     []string{streams.SubjectsNotify},
			Consumers: []string{streams.ConsumerAuditorExec, streams.ConsumerAuditorAudit,
				streams.ConsumerAuditorSchedule, streams.ConsumerAuditorQuotaExec, streams.ConsumerAuditorConfig,
				streams.ConsumerAuditorQuotaAudit, streams.ConsumerAuditorNotify, streams.ConsumerAuditorNotifyLog},
		},
		{
			Name:        API,
			Description: "turns configuration into events; serves the live event stream (SSE)",
			// Configuration (not the planner's auto-disable) and manual run
			// requests.
			Publish: []string{streams.SubjectBrand("*"), streams.SubjectOID("*"), streams.SubjectOLT("*"), streams.SubjectJob("*"),
				streams.SubjectAssignment("*", "*"), streams.SubjectWorkflow("*"), streams.SubjectsManualRun,
				streams.SubjectAlert("*", streams.AlertStateAcknowledged), streams.SubjectSilence("*")},
			// GET /api/v1/events/stream follows these with ordered consumers.
			Ordered:  []string{streams.StreamONU, streams.StreamExec, streams.StreamNotify},
			ReadMsgs: []string{streams.StreamConfig},
			// Pollers; the persisted schedule and the queue report.
			ReadBuckets: []string{streams.BucketPollers, streams.BucketSchedule, streams.BucketPlannerLeader},
		},
		{
			Name:        Availability,
			Description: "probes OLTs (sysUpTime) and publishes their availability",
			// Availability changes and their audit events; the re-enable
			// of an auto-disabled OLT that answers again.
			Publish: []string{streams.SubjectsOLTAvailability, streams.SubjectsAudit,
				streams.SubjectOLTDisabled("*")},
			// The configuration replay (OLTs, their targets), the execution
			// outcomes, its own last states (last message per subject).
			Ordered: []string{streams.StreamConfig, streams.StreamExec, streams.StreamOLT},
			// Its leader lease; the OLT leases (a probe holds the OLT's
			// lease, as a poller's walk does, so the two never overlap).
			Buckets: []string{streams.BucketAvailabilityLeader, streams.BucketLeases},
		},
		{
			Name:        Alerter,
			Description: "evaluates the alert rules and sends alerts (Alertmanager, webhooks)",
			Publish:     []string{streams.SubjectAlert("*", streams.AlertStateFiring), streams.SubjectAlert("*", streams.AlertStateResolved), streams.SubjectAlert("*", streams.AlertStateUpdated)},
			Ordered:     []string{streams.StreamConfig, streams.StreamONU, streams.StreamExec, streams.StreamOLT, streams.StreamNotify, streams.StreamAlert},
			ReadMsgs:    []string{streams.StreamAlert, streams.StreamOLT},
			Consumers: []string{streams.ConsumerAlerterONU, streams.ConsumerAlerterOLT, streams.ConsumerAlerterExec, streams.ConsumerAlerterNotify,
				streams.ConsumerAlerterConfig, streams.ConsumerAlerterAcks, streams.ConsumerAlerterAlerts, streams.ConsumerAlerterHealth},
		},
		{
			Name:        Trapd,
			Description: "receives the OLTs' SNMP traps and publishes them (raw and decoded); sends nothing to an OLT but inform acknowledgements",
			Publish:     []string{streams.SubjectsTrap},
			// The configuration replay: OLTs (address, sealed community),
			// brands (vendor profile).
			Ordered: []string{streams.StreamConfig},
		},
		// People read through JetStream only (ordered consumers, direct
		// gets), never with core subscriptions on the event subjects: a
		// push consumer delivers to any subject that has a subscriber, so
		// a reader who could subscribe to an event subject could make
		// the server write into that subject's stream.
		{
			Name:        Observer,
			Description: "reads every stream with ephemeral ordered consumers, lists streams and consumers; publishes and deletes nothing (tail, replay)",
			Ordered:     streamNames(),
			ReadMsgs:    streamNames(),
			Inspect:     true,
			NoDelete:    true,
		},
		{
			Name:        Operator,
			Description: "the observer plus leader step-downs and JetStream advisories (a NOC unsticking things); deletes nothing",
			Ordered:     streamNames(),
			ReadMsgs:    streamNames(),
			Inspect:     true,
			NoDelete:    true,
			StepDown:    true,
			Advisories:  true,
		},
		{
			Name:        Admin,
			Description: "operator: provisions streams; the only identity that may delete or purge",
			Admin:       true,
		},
	}
}

// Names lists the identities of Table, in its order.
func Names() []string {
	var out []string
	for _, id := range Table() {
		out = append(out, id.Name)
	}
	return out
}

// Lookup returns the identity called name.
func Lookup(name string) (Identity, error) {
	for _, id := range Table() {
		if id.Name == name {
			return id, nil
		}
	}
	return Identity{}, fmt.Errorf("nats identity %q: not in the permission table", name)
}

// InboxPrefix is the reply-subject prefix of identity name's connections:
// a service can read the replies to its own requests only. The ':' of
// integrator:<name> becomes '_' (_INBOX_integrator_<name>).
func InboxPrefix(name string) string { return "_INBOX_" + strings.ReplaceAll(name, ":", "_") }

// Permissions is what the server enforces for one identity.
type Permissions struct {
	PublishAllow   []string
	PublishDeny    []string
	SubscribeAllow []string
	SubscribeDeny  []string
}

// deniedToServices is refused to every identity but the admin, whatever
// its allow list says: stream and account administration, delete, purge,
// snapshot and the system account's subjects.
func deniedToServices(stepDown bool) []string {
	denied := []string{
		"$JS.API.STREAM.CREATE.>",
		"$JS.API.STREAM.UPDATE.>",
		"$JS.API.STREAM.DELETE.>",
		"$JS.API.STREAM.PURGE.>",
		"$JS.API.STREAM.MSG.DELETE.>",
		"$JS.API.STREAM.SNAPSHOT.>",
		"$JS.API.STREAM.RESTORE.>",
		"$JS.API.STREAM.PEER.REMOVE.>",
		"$JS.API.STREAM.LEADER.STEPDOWN.>",
		"$JS.API.CONSUMER.DURABLE.CREATE.>",
		"$JS.API.CONSUMER.PAUSE.>",
		"$JS.API.CONSUMER.RESET.>",
		"$JS.API.CONSUMER.UNPIN.>",
		"$JS.API.CONSUMER.LEADER.STEPDOWN.>",
		"$JS.API.ACCOUNT.>",
		"$JS.API.META.>",
		"$JS.API.SERVER.>",
		"$SYS.>",
	}
	if !stepDown {
		return denied
	}
	out := denied[:0]
	for _, d := range denied {
		if !strings.Contains(d, ".LEADER.STEPDOWN.") {
			out = append(out, d)
		}
	}
	return out
}

// durableStreams maps every durable consumer of package streams to its
// stream.
func durableStreams() map[string]string {
	m := map[string]string{}
	for _, cd := range streams.ConsumerConfigs(streams.Options{}) {
		m[cd.Config.Durable] = cd.Stream
	}
	return m
}

// partitionDurables are the durables services create themselves, by
// name: the varbind projection's partitions, for every partition count.
func partitionDurables() map[string]string {
	m := map[string]string{}
	for n := 2; n <= streams.ProjectorPartitionsMax; n++ {
		for i := range n {
			m[streams.ConsumerProjectorVarbindsPartition(i, n)] = streams.StreamVarbinds
		}
	}
	return m
}

// createdDurableSubjects are the API subjects of a durable its owner
// creates itself: granted to the owner, denied to everyone else.
func createdDurableSubjects(stream, c string) []string {
	return []string{
		"$JS.API.CONSUMER.CREATE." + stream + "." + c,
		"$JS.API.CONSUMER.CREATE." + stream + "." + c + ".>",
		"$JS.API.CONSUMER.DURABLE.CREATE." + stream + "." + c,
		"$JS.API.CONSUMER.DELETE." + stream + "." + c,
		"$JS.API.CONSUMER.MSG.NEXT." + stream + "." + c,
		"$JS.ACK." + stream + "." + c + ".>",
		"$JS.ACK.*.*." + stream + "." + c + ".>",
	}
}

func partitionDurableNames() []string { return sortedKeys(partitionDurables()) }

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func streamNames() []string {
	var out []string
	for _, sc := range streams.StreamConfigs(streams.Options{}) {
		out = append(out, sc.Name)
	}
	return out
}

// kvStream is the stream behind KV bucket b.
func kvStream(b string) string { return "KV_" + b }

// Permissions derives what the server enforces from the identity, among
// the identities of Table. It fails on a consumer that package streams
// does not provision.
func (id Identity) Permissions() (Permissions, error) { return id.PermissionsAmong(Table()) }

// PermissionsAmong derives what the server enforces from the identity
// when the server also knows the identities of all (the table and the
// integrators): the durables any of them owns are denied to the others.
func (id Identity) PermissionsAmong(all []Identity) (Permissions, error) {
	if id.Admin {
		return Permissions{PublishAllow: []string{">"}, SubscribeAllow: []string{">"}}, nil
	}
	durables := durableStreams()
	var p Permissions
	pub := func(s ...string) { p.PublishAllow = append(p.PublishAllow, s...) }
	deny := func(s ...string) { p.PublishDeny = append(p.PublishDeny, s...) }

	pub(id.Publish...)
	// Read-only metadata: stream and consumer info, account limits. An
	// integrator sees its own streams and durables only.
	pub("$JS.API.INFO")
	if len(id.DurableStreams) == 0 {
		pub("$JS.API.STREAM.INFO.*", "$JS.API.CONSUMER.INFO.*.*")
	}
	if id.Inspect {
		pub("$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST", "$JS.API.CONSUMER.NAMES.*", "$JS.API.CONSUMER.LIST.*")
	}
	if id.StepDown {
		pub("$JS.API.STREAM.LEADER.STEPDOWN.*", "$JS.API.CONSUMER.LEADER.STEPDOWN.*.*")
	}
	owned := map[string]bool{}
	for _, c := range id.Consumers {
		stream, ok := durables[c]
		if !ok {
			return Permissions{}, fmt.Errorf("identity %s: consumer %q is not provisioned by package streams", id.Name, c)
		}
		owned[c] = true
		pub(
			streams.SubjectDLQ(c),
			"$JS.API.CONSUMER.MSG.NEXT."+stream+"."+c,
			// Acks, naks, terms and progress: v1 and v2 reply formats.
			"$JS.ACK."+stream+"."+c+".>",
			"$JS.ACK.*.*."+stream+"."+c+".>",
		)
	}
	ordered := func(stream string) {
		if !id.NoDelete {
			pub("$JS.API.CONSUMER.DELETE." + stream + ".*")
		}
		pub(
			"$JS.API.CONSUMER.CREATE."+stream+".>",
			"$JS.API.CONSUMER.MSG.NEXT."+stream+".*",
			// Flow-control replies of push-based ordered consumers (KV
			// watches): refused, a watch stalls under load.
			"$JS.FC."+stream+".>",
		)
	}
	readMsgs := func(stream string) {
		pub(
			"$JS.API.STREAM.MSG.GET."+stream,
			"$JS.API.DIRECT.GET."+stream,
			"$JS.API.DIRECT.GET."+stream+".>",
		)
	}
	for _, s := range id.Ordered {
		ordered(s)
	}
	for _, s := range id.ReadMsgs {
		readMsgs(s)
	}
	for _, b := range id.Buckets {
		pub("$KV." + b + ".>")
		readMsgs(kvStream(b))
		ordered(kvStream(b)) // watchers and key listings
	}
	for _, b := range id.ReadBuckets {
		readMsgs(kvStream(b))
		ordered(kvStream(b))
	}
	created := partitionDurables()
	ownCreated := map[string]bool{}
	for _, c := range id.CreatesDurables {
		stream, ok := created[c]
		if !ok {
			return Permissions{}, fmt.Errorf("identity %s: durable %q is not one a service creates", id.Name, c)
		}
		ownCreated[c] = true
		pub(createdDurableSubjects(stream, c)...)
	}
	for _, s := range id.DurableStreams {
		pub("$JS.API.STREAM.INFO." + s)
		for _, c := range id.Durables {
			pub("$JS.API.CONSUMER.INFO." + s + "." + c)
			pub(createdDurableSubjects(s, c)...)
		}
	}
	deny(deniedToServices(id.StepDown)...)
	for _, c := range sortedKeys(created) {
		if ownCreated[c] {
			continue
		}
		deny(createdDurableSubjects(created[c], c)...)
	}
	// Another identity's own durables (an integrator's): neither created,
	// read, acked nor deleted by anyone else.
	for _, other := range all {
		if other.Name == id.Name {
			continue
		}
		for _, s := range other.DurableStreams {
			for _, c := range other.Durables {
				deny(createdDurableSubjects(s, c)...)
			}
		}
	}
	// Durable consumers are the provisioner's: nobody else creates,
	// changes or deletes them, and only the owner reads from them.
	names := make([]string, 0, len(durables))
	for c := range durables {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		stream := durables[c]
		deny(
			"$JS.API.CONSUMER.CREATE."+stream+"."+c,
			"$JS.API.CONSUMER.CREATE."+stream+"."+c+".>",
			"$JS.API.CONSUMER.DELETE."+stream+"."+c,
		)
		if !owned[c] {
			deny(
				"$JS.API.CONSUMER.MSG.NEXT."+stream+"."+c,
				"$JS.ACK."+stream+"."+c+".>",
				"$JS.ACK.*.*."+stream+"."+c+".>",
			)
		}
	}

	p.SubscribeAllow = []string{InboxPrefix(id.Name) + ".>"}
	if id.SubscribeEvents {
		p.SubscribeAllow = append(p.SubscribeAllow, "facho.>")
	}
	if id.Advisories {
		p.SubscribeAllow = append(p.SubscribeAllow, "$JS.EVENT.>")
	}
	return p, nil
}
