package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/parquet-go/parquet-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/poller"
	"github.com/facho-olt/facho/streams"
)

// hwONUTable is the Huawei ONU table the demo discovery reads.
const hwONUTable = "1.3.6.1.4.1.2011.6.128.1.1.2"

// facho export varbinds exports what a real poller publishes: a poller
// walks a simulated Huawei OLT over SNMP/UDP and publishes its batches as
// it does in production (rows of every column of an ONU), and the export
// has one row per varbind, every ONU's status, serial and description
// under its full OID with the simulator's values, as CSV and parquet.
func TestExportVarbindsOfARealPoller(t *testing.T) {
	env, getenv := toolsEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const community = "export-community"
	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "exp", Listen: "127.0.0.1:0", Community: community,
		Profile: "huawei-ma5800", Seed: 3, Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 16}}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })
	sim := fleet.OLT("exp")
	k, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := secret.ParseKey(k)
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := box.Seal(community)
	if err != nil {
		t.Fatal(err)
	}
	_, pjs := env.Connect(t, natsauth.Poller)
	pctx, pcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- poller.Run(pctx, poller.Config{PollerID: "p1", LeaseBusyDelay: 100 * time.Millisecond},
			poller.Deps{JS: pjs, Log: zerolog.Nop(), Registry: prometheus.NewRegistry(), Box: box})
	}()
	t.Cleanup(func() {
		pcancel()
		if err := <-done; err != nil {
			t.Errorf("poller: %v", err)
		}
	})

	addr := sim.Addr()
	node := streams.NodeDue{ExecutionID: "exp-1", NodeID: "huawei-onu-discovery.exp", JobID: "huawei-onu-discovery", JobName: "ONU discovery",
		OLTID: "exp", BrandID: "huawei", IndexScheme: streams.IndexSchemePonONU, Kind: streams.KindDiscovery,
		Target: streams.Target{Host: addr.IP.String(), Port: addr.Port, CommunityEnc: sealed},
		OIDs: []streams.OIDSpec{
			{ID: "hw-ont-serial", OID: hwONUTable + ".43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
			{ID: "hw-ont-description", OID: hwONUTable + ".43.1.9", Field: streams.FieldDescription, Decoder: streams.Decoder{Kind: "string"}},
			{ID: "hw-ont-run-status", OID: hwONUTable + ".46.1.15", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}},
		},
		Priority: 90, IntervalSeconds: 60, TimeoutSeconds: 60, ScheduledAt: time.Now().UTC()}
	b, err := streams.EncodeWithID(node.ExecutionID, "test", time.Now(), node)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.JS.Publish(ctx, streams.SubjectNodeDue("exp"), b); err != nil {
		t.Fatal(err)
	}

	// The walk's batches, up to the last one, as published.
	cons, err := env.JS.OrderedConsumer(ctx, streams.StreamVarbinds, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var published, inRows int
	for last := false; !last; {
		m, err := cons.Next(jetstream.FetchMaxWait(30 * time.Second))
		if err != nil {
			t.Fatalf("waiting for the poller's batches: %v", err)
		}
		_, batch, err := streams.Decode[streams.VarbindBatch](m.Data())
		if err != nil {
			t.Fatalf("a batch of the poller does not decode: %v", err)
		}
		published += batch.VarbindCount()
		inRows += batch.VarbindCount() - len(batch.Varbinds)
		last = batch.Last
	}
	onus := sim.ONUs()
	if published != 3*len(onus) {
		t.Fatalf("the poller published %d varbinds for %d ONUs x 3 columns", published, len(onus))
	}
	if inRows != published {
		t.Fatalf("%d of the %d varbinds published as rows: this test is about the rows form", inRows, published)
	}

	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"export", "varbinds", "--olt", "exp"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("export: %v (%s)", err, errOut.String())
	}
	recs, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+published {
		t.Fatalf("export varbinds: %d rows, want one per published varbind (%d):\n%.2000s", len(recs)-1, published, out.String())
	}
	got := map[string][2]string{} // oid: type, value
	for _, r := range recs[1:] {
		if r[2] != "exp" || r[3] != "exp-1" {
			t.Errorf("row %v: OLT or execution wrong", r)
		}
		got[r[5]] = [2]string{r[6], r[7]}
	}
	for _, o := range onus {
		status := "2"
		if o.Online {
			status = "1"
		}
		if g := got[hwONUTable+".46.1.15."+o.Index]; g != [2]string{streams.VTInteger, status} {
			t.Errorf("ONU %s status: %v, want Integer %s", o.Index, g, status)
		}
		serial := got[hwONUTable+".43.1.3."+o.Index]
		if serial[0] != streams.VTOctetString || !strings.HasPrefix(strings.ToUpper(serial[1]), strings.ToUpper(fmt.Sprintf("%x", o.Serial[:4]))) {
			t.Errorf("ONU %s serial: %v, want the hex of %s", o.Index, serial, o.Serial)
		}
		if desc := got[hwONUTable+".43.1.9."+o.Index]; desc[1] != fmt.Sprintf("%x", o.Description) {
			t.Errorf("ONU %s description: %v, want the hex of %q", o.Index, desc, o.Description)
		}
	}

	out.Reset()
	if err := run(ctx, []string{"export", "varbinds", "--format", "parquet"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("export parquet: %v", err)
	}
	rows, err := parquet.Read[varbindRow](bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != published {
		t.Fatalf("parquet: %d rows, want %d", len(rows), published)
	}
	for _, r := range rows {
		if g := got[r.OID]; g != [2]string{r.Type, r.Value} {
			t.Errorf("parquet row %+v, csv %v", r, g)
		}
	}
}

// appendCSVField writes a field byte for byte as encoding/csv does.
func TestAppendCSVField(t *testing.T) {
	for _, f := range []string{"", "plain", "1.3.6.1", "a,b", `say "hi"`, "two\nlines", "cr\r", " lead", "\tlead", "trail ", `\.`, `\.x`, "é", "\u00a0nbsp", `"`} {
		var want bytes.Buffer
		w := csv.NewWriter(&want)
		if err := w.Write([]string{f}); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if got := string(appendCSVField(nil, f)) + "\n"; got != want.String() {
			t.Errorf("%q: %q, encoding/csv %q", f, got, want.String())
		}
	}
}
