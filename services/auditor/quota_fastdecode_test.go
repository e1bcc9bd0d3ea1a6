package auditor

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// execQuotaOn (the one-pass parse of the quota batch form) takes only
// what the general path (DecodeEnvelope, parseExecQuota, the subject
// check) takes, with the same event; it gives the rest up to that path.
func TestExecQuotaOnAsGeneralPath(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	events := map[string]streams.Event{
		streams.PhaseStarted:     streams.ExecutionStarted{ExecutionID: "e1", JobID: "j1", OLTID: "olt-1", PollerID: "p1", Attempt: 2, LeaseRevision: 3, StartedAt: at},
		streams.PhaseSucceeded:   streams.ExecutionSucceeded{ExecutionID: "e1", JobID: "j1", OLTID: "olt-1", PollerID: "p1", Attempt: 2, LeaseRevision: 3, StartedAt: at, FinishedAt: at.Add(time.Second), DurationMS: 1000},
		streams.PhaseFailed:      streams.ExecutionFailed{ExecutionID: "e1", JobID: "j1", OLTID: "olt-1", PollerID: "p1", Attempt: 1, StartedAt: at, FinishedAt: at, DurationMS: 7, Error: "timeout"},
		streams.PhaseSkipped:     streams.ExecutionSkipped{ExecutionID: "e1", JobID: "j1", OLTID: "olt-1", Reason: "stale", Attempt: 1},
		streams.PhaseInterrupted: streams.ExecutionInterrupted{ExecutionID: "e1", JobID: "j1", OLTID: "olt-1", PollerID: "p1", Attempt: 1},
	}
	d := projection.NewDecoders()
	fast := 0
	for phase, ev := range events {
		data, err := streams.Encode("t", at, ev)
		if err != nil {
			t.Fatal(err)
		}
		g := string(data)
		for _, c := range []struct{ subject, data string }{
			{streams.SubjectExec("olt-1", phase), g},
			{streams.SubjectExec("olt-2", phase), g},
			{streams.SubjectExec("olt-1", streams.PhaseStarted), g},
			{streams.SubjectExec("olt-1", phase), strings.Replace(g, `"version":1`, `"version":7`, 1)},
			{streams.SubjectExec("olt-1", phase), strings.Replace(g, `"job_id":"j1"`, `"job_id":""`, 1)},
			{streams.SubjectExec("olt-1", phase), strings.Replace(g, `"execution_id":"e1"`, `"execution_id":""`, 1)},
			{streams.SubjectExec("olt-1", phase), strings.Replace(g, `"attempt":`, `"attempt":"x","a":`, 1)},
			{streams.SubjectExec("olt-1", phase), strings.Replace(g, `"olt_id"`, `"OLT_ID"`, 1)},
			{streams.SubjectExec("olt-1", phase), "{"},
		} {
			m := jsrouter.Msg{Subject: c.subject, Data: []byte(c.data)}
			got, ok := execQuotaOn(d, m)
			if !ok {
				continue
			}
			fast++
			env, err := streams.DecodeEnvelope(m.Data)
			if err != nil {
				t.Fatalf("%s on %s: fast path took what DecodeEnvelope refuses: %v", c.data, c.subject, err)
			}
			q, isQuota, err := parseExecQuota(env)
			if err == nil && isQuota {
				err = streams.CheckSubjectWith(m.Subject, env, func(name string) (string, bool) { return q.olt, name == "olt_id" })
			}
			if err != nil || !isQuota {
				t.Fatalf("%s on %s: fast path took what the general path refuses (%v, %v)", c.data, c.subject, isQuota, err)
			}
			if !reflect.DeepEqual(*got.exec, q) || !got.at.Equal(env.Time) {
				t.Fatalf("%s on %s: fast %+v at %s, general %+v at %s", c.data, c.subject, *got.exec, got.at, q, env.Time)
			}
		}
	}
	if fast < len(events) {
		t.Fatalf("the fast path took %d messages: it should take every published event on its subject", fast)
	}
}

// nodeDueOn takes only what the general path (DecodeEnvelope,
// parseNodeDue, the subject check) takes, with the same execution, hour
// and job; it gives the rest up to that path. The messages are decoded
// one after the other on one Decoders, as a run decodes them: each
// NodeDue into what the one before left (DecodeOnReused).
func TestNodeDueOnAsGeneralPath(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	oids := []streams.OIDSpec{{ID: "o", OID: "1.3.6", Field: "serial", Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "a"}}}}
	base := streams.NodeDue{ExecutionID: "e1", NodeID: "n1", JobID: "j1", JobName: "Get", OLTID: "olt-1", Kind: "get", IntervalSeconds: 300,
		ScheduledAt: at, Target: streams.Target{Host: "192.0.2.1", Port: 161}, OIDs: oids, Class: streams.ClassPolling}
	other := base
	other.ExecutionID, other.JobName, other.Kind, other.IntervalSeconds, other.ScheduledAt = "e2", "", "walk", 0, at.Add(90*time.Minute)
	other.OIDs = append(append([]streams.OIDSpec{}, oids...), streams.OIDSpec{ID: "p", OID: "1.3.7", Field: "status", Decoder: streams.Decoder{Kind: "string"}})
	var cases []struct{ subject, data string }
	for _, nd := range []streams.NodeDue{base, other} {
		data, err := streams.Encode("t", at, nd)
		if err != nil {
			t.Fatal(err)
		}
		g := string(data)
		subj := streams.SubjectNodeDueClass(nd.OLTID, nd.Class)
		for _, c := range []struct{ subject, data string }{
			{subj, g},
			{streams.SubjectNodeDueClass("olt-2", nd.Class), g},
			{streams.SubjectNodeDueClass(nd.OLTID, streams.ClassDiscovery), g},
			{streams.SubjectNodeDue(nd.OLTID), g}, // before queue classes
			{subj, strings.Replace(g, `"version":1`, `"version":7`, 1)},
			{subj, strings.Replace(g, `"job_id":"j1"`, `"job_id":""`, 1)},
			{subj, strings.Replace(g, `"scheduled_at":"`, `"scheduled_at":"0001-01-01T00:00:00Z","x":"`, 1)},
			{subj, strings.Replace(g, `"scheduled_at":"2026-11-23T1`, `"scheduled_at":"0001-01-01T00:00:00Z","y":"2026-11-23T1`, 1)},
			{subj, strings.Replace(g, `"port":161`, `"port":0`, 1)},
			{subj, strings.Replace(g, `"enum":{"1":"a"}`, `"enum":{}`, 1)},
			{subj, strings.Replace(g, `"interval_seconds":`, `"interval_seconds":"x","i":`, 1)},
			{subj, strings.Replace(g, `"type":"node.due"`, `"type":"node.run_requested"`, 1)},
			{subj, "{"},
		} {
			cases = append(cases, c, struct{ subject, data string }{subj, g})
		}
	}
	d := projection.NewDecoders()
	fast := 0
	for _, c := range cases {
		m := jsrouter.Msg{Subject: c.subject, Data: []byte(c.data)}
		got, ok := nodeDueOn(d, m)
		if !ok {
			continue
		}
		fast++
		env, err := streams.DecodeEnvelope(m.Data)
		if err != nil {
			t.Fatalf("%s on %s: fast path took what DecodeEnvelope refuses: %v", c.data, c.subject, err)
		}
		nd, isDue, err := parseNodeDue(env)
		if err == nil && isDue {
			err = streams.CheckSubjectWith(m.Subject, env, nodeDueSubjectFields(&nd))
		}
		if err != nil || !isDue {
			t.Fatalf("%s on %s: fast path took what the general path refuses (%v, %v)", c.data, c.subject, isDue, err)
		}
		if want := dueQuotaOf(&nd); !reflect.DeepEqual(got.due, want) || !got.at.Equal(env.Time) || got.exec != nil {
			t.Fatalf("%s on %s: fast %+v at %s, general %+v at %s", c.data, c.subject, got.due, got.at, want, env.Time)
		}
	}
	if fast < len(cases)/2 {
		t.Fatalf("the fast path took %d of %d messages: it should take every published event on its subject", fast, len(cases))
	}
}
