package streams

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var update = flag.Bool("update", false, "rewrite CATALOGUE.md and schemas/")

func TestCatalogueUpToDate(t *testing.T) {
	files := map[string][]byte{"CATALOGUE.md": RenderCatalogue()}
	for _, s := range Catalogue() {
		b, err := s.Schema()
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Join("schemas", s.SchemaFile())] = b
	}
	pollers, err := PollersSchema()
	if err != nil {
		t.Fatal(err)
	}
	files[filepath.Join("schemas", PollersSchemaFile)] = pollers
	if *update {
		if err := os.MkdirAll("schemas", 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v (run go test -run TestCatalogue -update)", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date with catalogue.go (run go test -run TestCatalogue -update)", name)
		}
	}
}

func TestCatalogueCoversEveryType(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Catalogue() {
		if seen[s.Type] {
			t.Errorf("type %s listed twice", s.Type)
		}
		seen[s.Type] = true
		if s.Payload.EventType() != s.Type {
			t.Errorf("spec %s has payload of type %s", s.Type, s.Payload.EventType())
		}
		if len(s.Publishers) == 0 || len(s.Consumers) == 0 {
			t.Errorf("spec %s lacks publishers or consumers", s.Type)
		}
	}
}

// samples are realistic events; each must validate against its schema.
func samples() []Event {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	rx := -21.5
	none := int64(2147483647)
	spec := OIDSpec{ID: "hw-rx", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4", Field: FieldRxPower, Decoder: Decoder{Kind: "scaled", Scale: 0.01, NoReading: &none}}
	return []Event{
		BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"},
		BrandDeleted{ID: "huawei"},
		OIDUpserted{ID: "hw-rx", BrandID: "huawei", Name: "ONT Rx", OID: spec.OID, Field: FieldRxPower, Decoder: spec.Decoder},
		OIDDeleted{ID: "hw-rx"},
		OLTUpserted{ID: "olt-1", Name: "OLT 1", IP: "192.0.2.1", Port: 161, BrandID: "huawei", CommunityEnc: "v1:abcd", Enabled: true},
		OLTDeleted{ID: "olt-1"},
		JobUpserted{ID: "disc", Name: "Discovery", BrandID: "huawei", Kind: KindDiscovery, OIDIDs: []string{"hw-rx"}, IntervalSeconds: 300, MaxRetries: 3, RetryDelaySeconds: 120, TimeoutSeconds: 300, Priority: 90, Enabled: true},
		JobDeleted{ID: "disc"},
		JobOLTAssigned{JobID: "disc", OLTID: "olt-1", Enabled: true},
		JobOLTUnassigned{JobID: "disc", OLTID: "olt-1"},
		NodeDue{ExecutionID: "e1", NodeID: "disc:olt-1", JobID: "disc", OLTID: "olt-1", Kind: KindDiscovery, Class: ClassDiscovery, Target: Target{Host: "192.0.2.1", Port: 161, CommunityEnc: "v1:abcd"}, OIDs: []OIDSpec{spec}, Priority: 90, ScheduledAt: now,
			SNMP:  SNMPTuning{WalkPDU: WalkPDUGetNext, MaxRepetitions: 20, GetVarbinds: 30, GetConcurrency: 2},
			Chain: []ChainedNode{{ExecutionID: "e1-c1", JobID: "status", JobName: "status", Kind: KindBulkWalk, OIDs: []OIDSpec{spec}, TimeoutSeconds: 60}}, StopOnFailure: true, DispatchedAt: now},
		ExecutionStarted{ExecutionID: "e1", JobID: "disc", OLTID: "olt-1", PollerID: "p1", Attempt: 1, LeaseRevision: 7, StartedAt: now},
		ExecutionSucceeded{ExecutionID: "e1", JobID: "disc", OLTID: "olt-1", PollerID: "p1", Attempt: 1, LeaseRevision: 7, StartedAt: now, FinishedAt: now, Varbinds: 10, Batches: 1,
			ONUs: 2, FailedONUs: 1, FailedVarbinds: 1, ONUFailures: []ONUFailure{{Instance: "4194304000.1", PonIndex: 4194304000, ONUID: 1, OIDs: []string{"1.3.6.1.4.1.2011.6.128.1.1.2.43.1.9.4194304000.1"}, Error: "tooBig"}}},
		ExecutionFailed{ExecutionID: "e1", JobID: "disc", OLTID: "olt-1", PollerID: "p1", Attempt: 1, StartedAt: now, FinishedAt: now, Error: "request timeout", Retryable: true},
		ExecutionSkipped{ExecutionID: "e1", JobID: "disc", OLTID: "olt-1", PollerID: "p1", Attempt: 1, ScheduledAt: now.Add(-10 * time.Minute), SkippedAt: now, Reason: "stale: scheduled at 2026-11-21T11:50:00Z, interval 300s; a newer run supersedes it"},
		ExecutionInterrupted{ExecutionID: "e1", JobID: "disc", OLTID: "olt-1", PollerID: "p1", Attempt: 1, LeaseRevision: 7, StartedAt: now, InterruptedAt: now.Add(40 * time.Second), DetectedBy: "p2", Reason: "lease expired without a terminal event"},
		VarbindBatch{ExecutionID: "e1", JobID: "disc", OLTID: "olt-1", IndexScheme: "pon.onu", Columns: []OIDSpec{spec}, CollectedAt: now, Varbinds: []Varbind{{OID: spec.OID + ".4194304000.1", Type: VTInteger, Value: "-2150"}}},
		ONUChanged{OLTID: "olt-1", PonIndex: 4194304000, ONUID: 1, Change: ONUDiscovered, Current: ONUState{Serial: "HWTC1A2B3C4D", Status: "ONLINE", RxPowerDBm: &rx}, ExecutionID: "e1", ObservedAt: now},
		AuditEvent{OLTID: "olt-1", Kind: AuditTaskAdded, Level: LevelInfo, Message: "task added", Details: map[string]any{"job_id": "disc"}},
		Notification{ID: "quota_violation:olt-1:discovery:1763719200", Kind: NotifyQuotaViolation, OLTID: "olt-1", Severity: "HIGH",
			Message: "quota violation [HIGH]: discovery on OLT olt-1 completed 2 of 4 in the hour from 2026-11-21 10:00Z (50%)",
			Details: map[string]any{"quota_required": 4, "quota_completed": 2, "compliance": 0.5}, OccurredAt: time.Date(2026, 11, 21, 11, 5, 0, 0, time.UTC)},
		OLTAutoDisabled{ID: "olt-1", Reason: "3 consecutive failed executions", Failures: 3, ExecutionID: "e1", DisabledAt: now},
		OLTAutoEnabled{ID: "olt-1", Reason: "answered 3 consecutive probes after its auto-disable", Probes: 3, DisabledExecutionID: "e1", EnabledAt: now},
		WorkflowUpserted{ID: "wf-1", Name: "discovery then status", OLTID: "olt-1", MasterJobID: "disc", ChainJobIDs: []string{"status", "rx"}, Enabled: true},
		WorkflowDeleted{ID: "wf-1"},
		NodeRunRequested{ExecutionID: "e1", NodeID: "disc.olt-1", JobID: "disc", OLTID: "olt-1", RequestedAt: now},
		ExecutionAborted{ExecutionID: "e1", JobID: "disc", OLTID: "olt-1", PollerID: "p1", Reason: "OLT disabled", AbortedAt: now},
		OLTAvailability{OLTID: "olt-1", State: AvailabilityUnreachable, Previous: AvailabilityAvailable, Since: now, LastError: "request timeout", Source: AvailabilitySourceProbe, FailedChecks: 1, ObservedAt: now},
		Alert{ID: "onu_down:olt-1:4194304000:1:1763726400000000000", Key: "onu_down:olt-1:4194304000:1", Rule: RuleONUDown, Severity: SeverityWarning, State: AlertStateFiring, OLTID: "olt-1", OLTName: "OLT 1", PonIndex: &none, Pon: "0/1/0", ONUID: &none, Serial: "HWTC1A2B3C4D", Summary: "ONU HWTC1A2B3C4D down (LOS)", Cause: "LOS", StartsAt: now, ObservedAt: now},
		Alert{ID: "onu_down:olt-1:4194304000:1:1763726400000000000", Key: "onu_down:olt-1:4194304000:1", Rule: RuleONUDown, Severity: SeverityWarning, State: AlertStateResolved, OLTID: "olt-1", Summary: "ONU HWTC1A2B3C4D down (LOS)", StartsAt: now, EndsAt: &now, Value: &rx, Unit: "dBm", ObservedAt: now},
		AlertUpdated{ID: "5f1c0a9e2b7d4c3a1e0f", Key: "pon_outage:olt-1:4194304000", Rule: RulePONOutage, Severity: SeverityCritical, State: AlertStateFiring, OLTID: "olt-1", OLTName: "OLT 1", PonIndex: &none, Pon: "0/1/0", Summary: "PON 0/1/0 of OLT OLT 1: 12 of 16 ONUs down (probable fiber cut)", StartsAt: now, Value: &rx, Unit: "onus", IncidentID: "5f1c0a9e2b7d4c3a1e0f", ObservedAt: now},
		AlertAcknowledged{AlertID: "onu_down:olt-1:4194304000:1:1763726400000000000", Key: "onu_down:olt-1:4194304000:1", OLTID: "olt-1", By: "admin", At: now},
		SilenceUpserted{ID: "s1", OLTID: "olt-1", Pon: "0/1/0", StartsAt: now, EndsAt: now.Add(time.Hour), CreatedBy: "admin", Comment: "planned works", CreatedAt: now},
		SilenceDeleted{ID: "s1"},
		OLTHealth{OLTID: "olt-1", ExecutionID: "e1", JobID: "huawei-ma5800-health", ObservedAt: now, Tables: []string{HealthChassis, HealthFans, HealthPONs},
			Chassis: &ChassisHealth{CPUPercent: &rx, Boards: 2}, Fans: []UnitHealth{{Index: "0.1", Status: UnitFailed}},
			PONs: []PONHealth{{PonIndex: 4194304000, Index: "4194304000", Name: "0/1/0", AdminState: PortUp, OperState: PortDown, TxPowerDBm: &rx}}},
		TrapReceived{OLTID: "olt-1", Source: "192.0.2.1:40001", Version: TrapV2c, TrapOID: "1.3.6.1.4.1.2011.6.128.1.1.2.0.6", Uptime: 12345,
			Varbinds: []TrapVarbind{{OID: "1.3.6.1.4.1.2011.6.128.1.1.2.46.1.15.4194304000.1", Type: "Integer", Value: "2"}}, Receiver: "trapd-1", ReceivedAt: now},
		TrapDecoded{OLTID: "olt-1", TrapID: "trap:olt-1:trapd-1:1:1", Profile: "huawei-ma5800", Rule: "ont-dying-gasp", Kind: TrapKindDyingGasp, TrapOID: "1.3.6.1.4.1.2011.6.128.1.1.2.0.6", PonIndex: &none, ONUID: &none, Index: "4194304000.1", PortName: "0/0/0:1", At: now},
		DeadLetter{Consumer: "projector-varbinds", Stream: StreamVarbinds, StreamSeq: 3, Subject: "facho.varbinds.olt-1", Reason: "malformed event", Deliveries: 1,
			OriginalType: TypeVarbindBatch, OLTID: "olt-1", ExecutionID: "e1", PayloadSize: 7, PayloadSHA256: "f7f0c2d3c2b8e4b6a4b4d1f0a1c2e3d4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0", PayloadExcerpt: "garbage", ReceivedAt: now},
	}
}

func TestSamplesValidateAgainstSchemas(t *testing.T) {
	c := jsonschema.NewCompiler()
	specs := map[string]EventSpec{}
	for _, s := range Catalogue() {
		b, err := s.Schema()
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(s.SchemaFile(), doc); err != nil {
			t.Fatal(err)
		}
		specs[s.Type] = s
	}
	got := map[string]bool{}
	for _, ev := range samples() {
		s, ok := specs[ev.EventType()]
		if !ok {
			t.Fatalf("sample %s not in catalogue", ev.EventType())
		}
		got[s.Type] = true
		sch, err := c.Compile(s.SchemaFile())
		if err != nil {
			t.Fatal(err)
		}
		b, err := Encode("test", time.Now(), ev)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s does not validate: %v", s.Type, err)
		}
		// The schema must reject an envelope of another type.
		var env map[string]any
		_ = json.Unmarshal(b, &env)
		env["type"] = "something.else"
		bad, _ := json.Marshal(env)
		inst, _ = jsonschema.UnmarshalJSON(bytes.NewReader(bad))
		if err := sch.Validate(inst); err == nil {
			t.Errorf("%s schema accepted a wrong type", s.Type)
		}
	}
	for typ := range specs {
		if !got[typ] {
			t.Errorf("no sample for %s", typ)
		}
	}
}
