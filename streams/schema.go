package streams

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"
)

// SchemaFile is the file name of an event's schema under schemas/.
func (s EventSpec) SchemaFile() string {
	return fmt.Sprintf("%s.v%d.json", s.Type, s.Version)
}

// Schema returns the JSON Schema of an event: the envelope with Data of the
// event's payload type.
func (s EventSpec) Schema() ([]byte, error) {
	r := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, AllowAdditionalProperties: true}
	payload := r.Reflect(s.Payload)
	payload.Version = ""
	env := &jsonschema.Schema{
		Version:     "https://json-schema.org/draft/2020-12/schema",
		ID:          jsonschema.ID("https://facho.dev/streams/schemas/" + s.SchemaFile()),
		Title:       s.Type + " v" + fmt.Sprint(s.Version),
		Description: s.Description + " Subject: " + s.Subject + ".",
		Type:        "object",
		Required:    []string{"id", "type", "version", "time", "source", "data"},
	}
	props := jsonschema.NewProperties()
	props.Set("id", &jsonschema.Schema{Type: "string", Description: "event id; also the Nats-Msg-Id where a retry recomputes it"})
	props.Set("type", &jsonschema.Schema{Type: "string", Const: s.Type})
	props.Set("version", &jsonschema.Schema{Type: "integer", Const: s.Version})
	props.Set("time", &jsonschema.Schema{Type: "string", Format: "date-time"})
	props.Set("source", &jsonschema.Schema{Type: "string", Description: "publishing service"})
	props.Set("data", payload)
	env.Properties = props
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", s.Type, err)
	}
	return append(b, '\n'), nil
}

// RenderCatalogue renders CATALOGUE.md.
func RenderCatalogue() []byte {
	var b bytes.Buffer
	b.WriteString("# Facho event catalogue\n\n")
	b.WriteString("Generated from `streams/catalogue.go` (`go test ./streams/... -run TestCatalogue -update` in the streams module rewrites it); do not edit by hand.\n\n")
	b.WriteString("Every event is a JSON envelope `{id, type, version, time, source, data}`; `data` follows the schema named below (JSON Schema 2020-12, in `schemas/`). ")
	b.WriteString("A new field is added in the same version (readers ignore unknown fields); a change that breaks readers gets a new version and a new schema file, published beside the old one for a deprecation period.\n\n")
	b.WriteString("## Streams\n\n| stream | subjects | retention | what |\n| --- | --- | --- | --- |\n")
	for _, sc := range StreamConfigs(Options{}) {
		age := "forever"
		if sc.MaxAge > 0 {
			age = "limits, max age " + sc.MaxAge.String()
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", sc.Name, strings.Join(sc.Subjects, "`, `"), age, sc.Description)
	}
	b.WriteString("\nThe ages above are the defaults. Each stream's limits can be set on their own with variables named after it: `<STREAM>_MAX_AGE`, `<STREAM>_MAX_BYTES`, `<STREAM>_COMPRESSION` (e.g. `FACHO_ONU_MAX_AGE=8760h`), over the group defaults `FACHO_VARBINDS_MAX_AGE`, `FACHO_SCHEDULE_MAX_AGE`, `FACHO_EVENTS_MAX_AGE`, `FACHO_STREAM_MAX_BYTES` and `FACHO_STREAM_COMPRESSION`. Streams on file storage are S2-compressed unless `none` is asked for. A read model can only be rebuilt from what its streams still hold (`facho rebuild`): keep raw varbinds and ONU changes as long as the history you want to rebuild.\n")
	b.WriteString("\n## Durable consumers\n\n")
	b.WriteString("No consumer redelivers a message without bound: every message ends acknowledged or in `facho.dlq.<consumer>`. ")
	b.WriteString("The router consumers (projector, auditor) dead-letter a message whose handling failed on ")
	fmt.Fprintf(&b, "%d deliveries while the dependency's health check passed (reason \"gave up after %d deliveries: <last error>\"); ", MaxFailedDeliveries, MaxFailedDeliveries)
	b.WriteString("during an outage (health check failing) they hold the message and retry it when the dependency is back, without counting. ")
	fmt.Fprintf(&b, "A message delivered more than %d times for any reason (e.g. it crashes the consumer) is dead-lettered before it is handled. ", MaxDeliveries)
	b.WriteString("The server's max deliver is unlimited (-1) for them: it cannot tell an outage from a bad message. ")
	b.WriteString("Consumers also refuse an event on a subject other than its own (`streams.CheckSubject`: the type must match the subject, the ids in the subject must be those of the data).\n\n")
	b.WriteString("| consumer | stream | filter | ack wait | max ack pending | server max deliver | bound |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, cd := range ConsumerConfigs(Options{}) {
		bound := fmt.Sprintf("router: %d failed deliveries (dependency healthy), %d deliveries", MaxFailedDeliveries, MaxDeliveries)
		if cd.Stream == StreamSchedule && strings.HasPrefix(cd.Config.Durable, ConsumerPoller) {
			bound = fmt.Sprintf("poller: dead letter on delivery %d if still not done; stale NodeDue skipped", PollerMaxDeliveries)
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %d | %d | %s |\n", cd.Config.Durable, cd.Stream, cd.Config.FilterSubject, cd.Config.AckWait,
			cd.Config.MaxAckPending, cd.Config.MaxDeliver, bound)
	}
	kv := LeaseBucketConfig(Options{})
	fmt.Fprintf(&b, "\n## KV buckets\n\n| bucket | history | ttl | what |\n| --- | --- | --- | --- |\n| %s | %d | %s | %s; key `olt.<olt_id>`, renewed by compare-and-swap on the revision, which is the fencing token carried as `lease_revision`; a release is a delete, an expiry by TTL leaves a limit marker (LimitMarkerTTL) from which every poller publishes `execution.interrupted` for the attempt that held it |\n", kv.Bucket, kv.History, kv.TTL, kv.Description)
	pk := PollersBucketConfig(Options{})
	fmt.Fprintf(&b, "| %s | %d | %s (`%s`) | %s; key `<poller_id of the process>`, value `PollerProcess` JSON ([%s](schemas/%s)) rewritten every few seconds and deleted on a clean stop, so a killed process disappears within the TTL; written by the poller, read by the api (GET /api/v1/pollers/, GET /api/v1/pollers/stats/) |\n",
		pk.Bucket, pk.History, pk.TTL, EnvPollersTTL, pk.Description, PollersSchemaFile, PollersSchemaFile)
	ok := OLTSNMPBucketConfig(Options{})
	fmt.Fprintf(&b, "| %s | %d | none | %s: `ONUSet` JSON `{\"seq\", \"stream_created\", \"pons\": {\"<pon_index>\": [onu ids]}, \"updated_at\"}` folded from `facho.onu.<olt_id>.discovered` up to FACHO_ONU sequence `seq` (it outlives the stream's retention); `GetSizes` JSON `{\"varbinds\", \"updated_at\"}`, the GET PDU size that worked, where the OLT's next get starts. Written and read by the pollers (any replica), one get per OLT at a time under its lease |\n",
		ok.Bucket, ok.History, ok.Description)
	sk := ScheduleBucketConfig(Options{})
	fmt.Fprintf(&b, "| %s | %d | none | %s; key `<job_id>.<olt_id>` (the node id), value a `NodeSchedule` JSON (streams/schedule_kv.go); key `failures_<olt_id>`: an `OLTFailures` (consecutive failed executions); written by the active planner, read by the API and the next planner term |\n", sk.Bucket, sk.History, sk.Description)
	ck := CancelBucketConfig(Options{})
	fmt.Fprintf(&b, "| %s | %d | %s | %s; key `exec.<execution_id>`, value an `ExecutionCancel` JSON (mode `pending`: abort if not started; `all`: also interrupt a running one), put by the planner, read and watched by pollers |\n", ck.Bucket, ck.History, ck.TTL, ck.Description)
	lk := LeaderBucketConfig(Options{})
	fmt.Fprintf(&b, "| %s | %d | %s | %s; key `olt.%s` (pkg/lease), renewed by compare-and-swap; a standby takes it over within about 2x the TTL; key `%s`: the active planner's queue report |\n", lk.Bucket, lk.History, lk.TTL, lk.Description, LeaderKey, QueueKey)
	b.WriteString("\n## Events\n\n| type | version | subject | stream | published by | consumed by | schema |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	specs := Catalogue()
	sort.SliceStable(specs, func(i, j int) bool { return specs[i].Stream < specs[j].Stream })
	for _, s := range specs {
		fmt.Fprintf(&b, "| `%s` | %d | `%s` | %s | %s | %s | [%s](schemas/%s) |\n", s.Type, s.Version, s.Subject, s.Stream,
			strings.Join(s.Publishers, ", "), strings.Join(s.Consumers, ", "), s.SchemaFile(), s.SchemaFile())
	}
	b.WriteString("\n## What each event means\n\n")
	for _, s := range specs {
		fmt.Fprintf(&b, "- `%s` v%d: %s\n", s.Type, s.Version, s.Description)
	}
	return b.Bytes()
}
