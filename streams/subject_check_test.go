package streams

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// subjectOf is the subject each sample event is published on.
func subjectOf(t *testing.T, ev Event) string {
	t.Helper()
	switch e := ev.(type) {
	case BrandUpserted:
		return SubjectBrand(e.ID)
	case BrandDeleted:
		return SubjectBrand(e.ID)
	case OIDUpserted:
		return SubjectOID(e.ID)
	case OIDDeleted:
		return SubjectOID(e.ID)
	case OLTUpserted:
		return SubjectOLT(e.ID)
	case OLTDeleted:
		return SubjectOLT(e.ID)
	case JobUpserted:
		return SubjectJob(e.ID)
	case JobDeleted:
		return SubjectJob(e.ID)
	case JobOLTAssigned:
		return SubjectAssignment(e.JobID, e.OLTID)
	case JobOLTUnassigned:
		return SubjectAssignment(e.JobID, e.OLTID)
	case NodeDue:
		if e.Class != "" {
			return SubjectNodeDueClass(e.OLTID, e.Class)
		}
		return SubjectNodeDue(e.OLTID)
	case ExecutionStarted:
		return SubjectExec(e.OLTID, PhaseStarted)
	case ExecutionSucceeded:
		return SubjectExec(e.OLTID, PhaseSucceeded)
	case ExecutionFailed:
		return SubjectExec(e.OLTID, PhaseFailed)
	case ExecutionSkipped:
		return SubjectExec(e.OLTID, PhaseSkipped)
	case ExecutionInterrupted:
		return SubjectExec(e.OLTID, PhaseInterrupted)
	case ExecutionAborted:
		return SubjectExec(e.OLTID, PhaseAborted)
	case OLTAutoDisabled:
		return SubjectOLTDisabled(e.ID)
	case OLTAutoEnabled:
		return SubjectOLTDisabled(e.ID)
	case WorkflowUpserted:
		return SubjectWorkflow(e.ID)
	case WorkflowDeleted:
		return SubjectWorkflow(e.ID)
	case NodeRunRequested:
		return SubjectManualRun(e.OLTID)
	case VarbindBatch:
		return SubjectVarbinds(e.OLTID)
	case ONUChanged:
		return SubjectONU(e.OLTID, e.Change)
	case AuditEvent:
		return SubjectAudit("planner")
	case DeadLetter:
		return SubjectDLQ(e.Consumer)
	case Notification:
		return SubjectNotify(e.Kind, e.OLTID)
	case SilenceUpserted:
		return SubjectSilence(e.ID)
	case SilenceDeleted:
		return SubjectSilence(e.ID)
	case OLTAvailability:
		return SubjectOLTAvailability(e.OLTID)
	case OLTHealth:
		return SubjectOLTHealth(e.OLTID)
	case Alert:
		return SubjectAlert(e.OLTID, e.State)
	case TrapReceived:
		return SubjectTrap(e.OLTID)
	case TrapDecoded:
		return SubjectTrap(e.OLTID)
	case AlertAcknowledged:
		return SubjectAlert(e.OLTID, AlertStateAcknowledged)
	case AlertUpdated:
		return SubjectAlert(e.OLTID, AlertStateUpdated)
	}
	t.Fatalf("no subject for %T", ev)
	return ""
}

func envOf(t *testing.T, ev Event) Envelope {
	t.Helper()
	b, err := Encode("test", time.Now(), ev)
	if err != nil {
		t.Fatal(err)
	}
	env, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestCheckSubjectAcceptsEverySampleOnItsSubject(t *testing.T) {
	for _, ev := range samples() {
		if err := CheckSubject(subjectOf(t, ev), envOf(t, ev)); err != nil {
			t.Errorf("%s: %v", ev.EventType(), err)
		}
	}
}

func TestCheckSubjectRefuses(t *testing.T) {
	brand := envOf(t, BrandUpserted{ID: "huawei", Name: "Huawei", IndexScheme: "pon.onu"})
	batch := envOf(t, VarbindBatch{ExecutionID: "e1", OLTID: "olt-1", Columns: []OIDSpec{{OID: "1.3"}}})
	failed := envOf(t, ExecutionFailed{ExecutionID: "e1", OLTID: "olt-1"})
	due := envOf(t, NodeDue{ExecutionID: "e1", JobID: "j", OLTID: "olt-1"})
	polling := envOf(t, NodeDue{ExecutionID: "e1", JobID: "j", OLTID: "olt-1", Class: ClassPolling})
	assigned := envOf(t, JobOLTAssigned{JobID: "disc", OLTID: "olt-1"})
	onu := envOf(t, ONUChanged{OLTID: "olt-1", Change: ONUDiscovered})
	audit := envOf(t, AuditEvent{Kind: AuditTaskAdded})
	dl := envOf(t, DeadLetter{Consumer: ConsumerPoller})
	notJSON := brand
	notJSON.Data = []byte(`{"id": 7}`)
	for _, tc := range []struct {
		name    string
		subject string
		env     Envelope
	}{
		{"brand on an OLT subject", SubjectOLT("huawei"), brand},
		{"brand of another id", SubjectBrand("zte"), brand},
		{"brand on a longer subject", SubjectBrand("huawei") + ".x", brand},
		{"brand with a non-string id", SubjectBrand("huawei"), notJSON},
		{"batch of another OLT", SubjectVarbinds("olt-2"), batch},
		{"batch on an exec subject", SubjectExec("olt-1", PhaseStarted), batch},
		{"failed on the succeeded subject", SubjectExec("olt-1", PhaseSucceeded), failed},
		{"failed of another OLT", SubjectExec("olt-2", PhaseFailed), failed},
		{"node due of another OLT", SubjectNodeDue("olt-2"), due},
		{"node due on a varbinds subject", SubjectVarbinds("olt-1"), due},
		{"node due in another class", SubjectNodeDueClass("olt-1", ClassDiscovery), polling},
		{"classless node due on a class subject", SubjectNodeDueClass("olt-1", ClassPolling), due},
		{"node due of another OLT in its class", SubjectNodeDueClass("olt-2", ClassPolling), polling},
		{"node due with a class token too many", SubjectNodeDueClass("olt-1", ClassPolling) + ".x", polling},
		{"assignment of another job", SubjectAssignment("get", "olt-1"), assigned},
		{"assignment of another OLT", SubjectAssignment("disc", "olt-2"), assigned},
		{"onu change of another kind", SubjectONU("olt-1", ONUStatusChanged), onu},
		{"audit without category", "facho.audit", audit},
		{"audit with a bad category", "facho.audit.-x", audit},
		{"dead letter of another consumer", SubjectDLQ(ConsumerProjectorConfig), dl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSubject(tc.subject, tc.env)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("CheckSubject(%s, %s) = %v, want ErrMalformed", tc.subject, tc.env.Type, err)
			}
		})
	}
}

// A NodeDue on its class subject passes, and so does one published before
// classes on facho.schedule.due.<olt> (a stream may still hold them).
func TestCheckSubjectNodeDueClasses(t *testing.T) {
	for _, c := range Classes() {
		ev := NodeDue{ExecutionID: "e1", JobID: "j", OLTID: "olt-1", Class: c}
		if err := CheckSubject(SubjectNodeDueClass("olt-1", c), envOf(t, ev)); err != nil {
			t.Errorf("class %s: %v", c, err)
		}
	}
	if err := CheckSubject(SubjectNodeDue("olt-1"), envOf(t, NodeDue{ExecutionID: "e1", JobID: "j", OLTID: "olt-1"})); err != nil {
		t.Errorf("pre-class node due: %v", err)
	}
}

func TestCheckSubjectLetsUnknownTypesPass(t *testing.T) {
	env := Envelope{Type: "brand.renamed", Version: 1, Data: []byte(`{}`)}
	if err := CheckSubject(SubjectBrand("x"), env); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeOn(t *testing.T) {
	b, err := Encode("t", time.Now(), OLTDeleted{ID: "olt-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, e, err := DecodeOn[OLTDeleted](SubjectOLT("olt-1"), b); err != nil || e.ID != "olt-1" {
		t.Fatalf("DecodeOn on its subject: %+v %v", e, err)
	}
	if _, _, err := DecodeOn[OLTDeleted](SubjectOLT("olt-2"), b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("DecodeOn on another OLT's subject: %v", err)
	}
	// A varbind batch answers its olt_id from the decoded payload: the
	// same verdicts.
	vb, err := Encode("t", time.Now(), VarbindBatch{ExecutionID: "e1", OLTID: "olt-1", CollectedAt: time.Now(), Columns: []OIDSpec{{ID: "c", OID: "1.3.6.1.2.1.1.5"}},
		Varbinds: []Varbind{{OID: "1.3.6.1.2.1.1.5.0", Type: VTOctetString, Value: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, got, err := DecodeOn[VarbindBatch](SubjectVarbinds("olt-1"), vb); err != nil || got.OLTID != "olt-1" {
		t.Fatalf("varbind batch on its subject: %+v %v", got, err)
	}
	if _, _, err := DecodeOn[VarbindBatch](SubjectVarbinds("olt-2"), vb); !errors.Is(err, ErrMalformed) {
		t.Fatalf("varbind batch on another OLT's subject: %v", err)
	}
}

// The catalogue documents the subjects CheckSubject enforces: the same
// tokens, placeholders where the pattern has them.
func TestCatalogueSubjectsMatchPatterns(t *testing.T) {
	for _, s := range Catalogue() {
		pattern, ok := SubjectPattern(s.Type)
		if !ok {
			t.Errorf("%s: no subject pattern", s.Type)
			continue
		}
		doc, want := strings.Split(s.Subject, "."), strings.Split(pattern, ".")
		if len(doc) != len(want) {
			t.Errorf("%s: catalogue %s, pattern %s", s.Type, s.Subject, pattern)
			continue
		}
		for i := range doc {
			docVar := strings.HasPrefix(doc[i], "<")
			patVar := want[i] == "*" || strings.HasPrefix(want[i], "{")
			if docVar != patVar || (!docVar && doc[i] != want[i]) {
				t.Errorf("%s: catalogue %s, pattern %s (token %d)", s.Type, s.Subject, pattern, i)
			}
		}
	}
}

func TestBrandNeedsAnIndexScheme(t *testing.T) {
	for _, tc := range []struct {
		b  BrandUpserted
		ok bool
	}{
		{BrandUpserted{ID: "h", IndexScheme: IndexSchemePonONU}, true},
		{BrandUpserted{ID: "f", IndexScheme: IndexSchemeFiberhome}, true},
		{BrandUpserted{ID: "h"}, false},
		{BrandUpserted{ID: "h", IndexScheme: "flat"}, false},
		{BrandUpserted{IndexScheme: IndexSchemePonONU}, false},
	} {
		b, err := Encode("t", time.Now(), tc.b)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = Decode[BrandUpserted](b)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrMalformed)) {
			t.Errorf("%+v: err = %v, want ok %v", tc.b, err, tc.ok)
		}
	}
}

func TestVersionedPayload(t *testing.T) {
	b, err := Encode("t", time.Now(), DeadLetter{Consumer: "c"})
	if err != nil {
		t.Fatal(err)
	}
	env, _, err := Decode[DeadLetter](b)
	if err != nil || env.Version != DeadLetterVersion {
		t.Fatalf("dead letter version %d: %v", env.Version, err)
	}
	old := strings.Replace(string(b), `"version":2`, `"version":1`, 1)
	if _, _, err := Decode[DeadLetter]([]byte(old)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a v1 dead letter decoded as v2: %v", err)
	}
}
