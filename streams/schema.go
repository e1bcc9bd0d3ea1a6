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
		if cd.Config.Durable == ConsumerPoller {
			bound = fmt.Sprintf("poller: dead letter on delivery %d if still not done; stale NodeDue skipped", PollerMaxDeliveries)
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %d | %d | %s |\n", cd.Config.Durable, cd.Stream, cd.Config.FilterSubject, cd.Config.AckWait,
			cd.Config.MaxAckPending, cd.Config.MaxDeliver, bound)
	}
	kv := LeaseBucketConfig(Options{})
	fmt.Fprintf(&b, "\n## KV buckets\n\n| bucket | history | ttl | what |\n| --- | --- | --- | --- |\n| %s | %d | %s | %s; key `olt.<olt_id>`, renewed by compare-and-swap on the revision, which is the fencing token carried as `lease_revision`; a release is a delete, an expiry by TTL leaves a limit marker (LimitMarkerTTL) from which every poller publishes `execution.interrupted` for the attempt that held it |\n", kv.Bucket, kv.History, kv.TTL, kv.Description)
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
