package poller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/streams"
)

func TestToVarbind(t *testing.T) {
	for _, tc := range []struct {
		name string
		pdu  gosnmp.SnmpPDU
		want streams.Varbind
	}{
		{"integer", gosnmp.SnmpPDU{Name: ".1.3.6.1.2", Type: gosnmp.Integer, Value: -1047}, streams.Varbind{OID: "1.3.6.1.2", Type: "Integer", Value: "-1047"}},
		{"octets are hex", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.OctetString, Value: []byte{'H', 'W', 'T', 'C', 0x1a, 0x00, 0xff, 0x10}}, streams.Varbind{OID: "1.2", Type: "OctetString", Value: "485754431a00ff10"}},
		{"empty octets", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.OctetString, Value: []byte{}}, streams.Varbind{OID: "1.2", Type: "OctetString", Value: ""}},
		{"oid value", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.ObjectIdentifier, Value: ".1.3.6.1.4.1.2011"}, streams.Varbind{OID: "1.2", Type: "ObjectIdentifier", Value: "1.3.6.1.4.1.2011"}},
		{"ip", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.IPAddress, Value: "10.0.0.1"}, streams.Varbind{OID: "1.2", Type: "IpAddress", Value: "10.0.0.1"}},
		{"counter32", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.Counter32, Value: uint(4294967295)}, streams.Varbind{OID: "1.2", Type: "Counter32", Value: "4294967295"}},
		{"gauge32", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.Gauge32, Value: uint(7)}, streams.Varbind{OID: "1.2", Type: "Gauge32", Value: "7"}},
		{"timeticks", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.TimeTicks, Value: uint32(123456)}, streams.Varbind{OID: "1.2", Type: "TimeTicks", Value: "123456"}},
		{"counter64", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.Counter64, Value: uint64(18446744073709551615)}, streams.Varbind{OID: "1.2", Type: "Counter64", Value: "18446744073709551615"}},
		{"null", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.Null}, streams.Varbind{OID: "1.2", Type: "Null"}},
		{"no such instance", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.NoSuchInstance}, streams.Varbind{OID: "1.2", Type: "NoSuchInstance"}},
		{"no such object", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.NoSuchObject}, streams.Varbind{OID: "1.2", Type: "NoSuchObject"}},
		{"end of mib", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.EndOfMibView}, streams.Varbind{OID: "1.2", Type: "EndOfMibView"}},
		{"opaque float", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.OpaqueFloat, Value: float32(-10.5)}, streams.Varbind{OID: "1.2", Type: "Opaque", Value: "-10.5"}},
		{"opaque bytes", gosnmp.SnmpPDU{Name: ".1.2", Type: gosnmp.Opaque, Value: []byte{1, 2}}, streams.Varbind{OID: "1.2", Type: "Opaque", Value: "0102"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := toVarbind(tc.pdu); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"defaults", func(*Config) {}, true},
		{"negative retries mean none", func(c *Config) { c.SNMPRetries = -1 }, true},
		{"too many workers", func(c *Config) { c.Workers = 5000 }, false},
		{"negative workers", func(c *Config) { c.Workers = -1 }, false},
		{"max repetitions too big", func(c *Config) { c.MaxRepetitions = 1000 }, false},
		{"negative row buffer", func(c *Config) { c.RowBufferVarbinds = -1 }, false},
		{"row buffer of one varbind", func(c *Config) { c.RowBufferVarbinds = 1 }, true},
		{"huge row buffer", func(c *Config) { c.RowBufferVarbinds = MaxRowBufferVarbinds + 1 }, false},
		{"get chunk over gosnmp's limit", func(c *Config) { c.GetChunk = 61 }, false},
		{"tiny snmp timeout", func(c *Config) { c.SNMPTimeout = time.Millisecond }, false},
		{"tiny node timeout", func(c *Config) { c.NodeTimeout = time.Millisecond }, false},
		{"negative busy delay", func(c *Config) { c.LeaseBusyDelay = -time.Second }, false},
		{"negative pdu retries mean none", func(c *Config) { c.PDURetries = -1 }, true},
		{"too many pdu retries", func(c *Config) { c.PDURetries = 11 }, false},
		{"pdu backoff over the cap", func(c *Config) { c.PDUBackoff = time.Minute }, false},
		{"negative pdu backoff", func(c *Config) { c.PDUBackoff = -time.Second }, false},
		{"negative pdu budget means none", func(c *Config) { c.PDURetryBudget = -1 }, true},
		{"huge pdu budget", func(c *Config) { c.PDURetryBudget = 2000000 }, false},
		{"class concurrency default", func(c *Config) { c.Classes.Polling.Concurrency = 0 }, true},
		{"negative discovery concurrency", func(c *Config) { c.Classes.Discovery.Concurrency = -1 }, false},
		{"huge polling concurrency", func(c *Config) { c.Classes.Polling.Concurrency = 257 }, false},
		{"retry concurrency 256", func(c *Config) { c.Classes.Retry.Concurrency = 256 }, true},
		{"negative high timeout", func(c *Config) { c.Classes.High.Timeout = -time.Second }, false},
		{"sub-second discovery timeout", func(c *Config) { c.Classes.Discovery.Timeout = time.Millisecond }, false},
		{"day-long polling timeout", func(c *Config) { c.Classes.Polling.Timeout = 25 * time.Hour }, false},
		{"retry timeout of its own", func(c *Config) { c.Classes.Retry.Timeout = 90 * time.Second }, true},
		{"process cap under the class sum", func(c *Config) { c.Workers = 3 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			tc.mod(&c)
			c = c.WithDefaults()
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if d := (Config{}).WithDefaults(); d.Workers != 11 || d.Classes != DefaultClasses() || d.LeaseBusyDelay != time.Second || d.SNMPTimeout != 2*time.Second ||
		d.SNMPRetries != 1 || d.MaxRepetitions != 25 || d.BatchSize != 500 || d.RowBufferVarbinds != 262144 || d.NodeTimeout != 60*time.Second || d.PollerID == "" ||
		d.PDURetries != 4 || d.PDUBackoff != 250*time.Millisecond || d.PDURetryBudget != 100 {
		t.Fatalf("defaults %+v", d)
	}
}

func TestClassTimeout(t *testing.T) {
	l := (Config{Classes: ClassLimits{Retry: ClassLimit{Timeout: 90 * time.Second}}}).WithDefaults().Classes
	for _, tc := range []struct {
		class, kind string
		want        time.Duration
	}{
		{streams.ClassDiscovery, streams.KindDiscovery, 300 * time.Second},
		{streams.ClassPolling, streams.KindGet, 60 * time.Second},
		{streams.ClassHigh, streams.KindDiscovery, 300 * time.Second}, // high: the kind's class
		{streams.ClassHigh, streams.KindWalk, 60 * time.Second},
		{streams.ClassRetry, streams.KindDiscovery, 90 * time.Second}, // retry: its own when set
		{"", streams.KindDiscovery, 300 * time.Second},                // pre-class NodeDue
		{"", streams.KindBulkWalk, 60 * time.Second},
	} {
		if got := l.timeoutOf(tc.class, tc.kind); got != tc.want {
			t.Errorf("timeout of class %q kind %q = %s, want %s", tc.class, tc.kind, got, tc.want)
		}
	}
}

func TestDefaultRetryPolicy(t *testing.T) {
	node := streams.NodeDue{MaxRetries: 2}
	for _, tc := range []struct {
		cause   FailureCause
		attempt int
		want    Decision
	}{
		{CauseSNMP, 1, Decision{Retryable: true}},
		{CauseSNMP, 3, Decision{Retryable: false}},
		{CauseTimeout, 2, Decision{Retryable: true}},
		{CauseLeaseLost, 1, Decision{Retryable: true}},
		{CauseConfig, 1, Decision{Retryable: false}},
		{CauseShutdown, 5, Decision{Redeliver: true, Retryable: true}},
		{CausePublish, 1, Decision{Redeliver: true, Delay: 5 * time.Second, Retryable: true}},
		// Read nothing worth a success: the OLT answered, not retried.
		{CauseOIDNotIncreasing, 1, Decision{Retryable: false}},
		{CauseEmptyRead, 1, Decision{Retryable: false}},
		{CauseNoONUsKnown, 1, Decision{Retryable: false}},
		{CauseProfileMismatch, 1, Decision{Retryable: false}},
	} {
		if got := (DefaultRetryPolicy{}).Decide(Outcome{Node: node, Attempt: tc.attempt, Cause: tc.cause}); got != tc.want {
			t.Errorf("%s attempt %d: %+v, want %+v", tc.cause, tc.attempt, got, tc.want)
		}
	}
}

// attemptNumber counts the started events of the execution on its OLT,
// whatever else ran on the OLT in between.
func TestAttemptNumber(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx := context.Background()
	exec, err := env.JS.Stream(ctx, streams.StreamExec)
	if err != nil {
		t.Fatal(err)
	}
	started := func(olt, execID string, attempt int) {
		b, err := streams.Encode("test", time.Now(), streams.ExecutionStarted{ExecutionID: execID, OLTID: olt, JobID: "j", Attempt: attempt})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.JS.Publish(ctx, streams.SubjectExec(olt, streams.PhaseStarted), b); err != nil {
			t.Fatal(err)
		}
	}
	count := func(olt, execID string) int {
		t.Helper()
		n, err := attemptNumber(ctx, env.JS, exec, streams.NodeDue{ExecutionID: execID, OLTID: olt, ScheduledAt: time.Now()}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before, err := exec.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := count("olt-a", "exec-1"); n != 1 {
		t.Fatalf("empty stream: attempt %d", n)
	}
	started("olt-a", "exec-1", 1)
	if n := count("olt-a", "exec-1"); n != 2 {
		t.Fatalf("after one start (fast path): attempt %d", n)
	}
	started("olt-a", "exec-2", 1)
	started("olt-b", "exec-1", 7) // another OLT: not ours
	started("olt-a", "exec-1", 2)
	started("olt-a", "exec-3", 1)
	for _, tc := range []struct {
		olt, exec string
		want      int
	}{{"olt-a", "exec-1", 3}, {"olt-a", "exec-2", 2}, {"olt-a", "exec-3", 2}, {"olt-a", "exec-9", 1}, {"olt-c", "exec-1", 1}} {
		if n := count(tc.olt, tc.exec); n != tc.want {
			t.Errorf("%s on %s: attempt %d, want %d", tc.exec, tc.olt, n, tc.want)
		}
	}
	// The scans leave no consumer behind.
	info, err := exec.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != before.State.Consumers {
		names := []string{}
		for n := range exec.ListConsumers(ctx).Info() {
			names = append(names, n.Name)
		}
		t.Fatalf("consumers on %s: %s", streams.StreamExec, strings.Join(names, ", "))
	}
}
