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
			if !reflect.DeepEqual(*got.exec, q) || !got.env.Time.Equal(env.Time) {
				t.Fatalf("%s on %s: fast %+v at %s, general %+v at %s", c.data, c.subject, *got.exec, got.env.Time, q, env.Time)
			}
		}
	}
	if fast < len(events) {
		t.Fatalf("the fast path took %d messages: it should take every published event on its subject", fast)
	}
}
