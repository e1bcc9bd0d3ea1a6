package poller

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// hostileMode is how a hostileAgent misbehaves.
type hostileMode string

const (
	endlessOnePON   hostileMode = "endless table on one PON"
	endlessManyPONs hostileMode = "endless table over many PONs"
	endlessRows     hostileMode = "endless table of rows that are no ONU"
	notIncreasing   hostileMode = "OIDs not increasing"
	sameOIDForever  hostileMode = "the same OID forever"
	hugeStrings     hostileMode = "huge strings"
	wrongTypes      hostileMode = "wrong types"
	malformedBER    hostileMode = "malformed BER"
	wrongRequestIDs hostileMode = "wrong request ids"
	otherPort       hostileMode = "answers from another port"
)

// hostileAgent is an SNMP v2c agent over UDP that answers GET, GETNEXT and
// GETBULK as a broken or hostile OLT would (mode). Requests are decoded
// with gosnmp and answers marshalled with it, except the malformed ones.
type hostileAgent struct {
	mode  hostileMode
	conn  *net.UDPConn
	other *net.UDPConn // answers from another port come from here
	cols  []string     // the table's columns, dotted without leading dot
	wg    sync.WaitGroup
}

func startHostile(t *testing.T, mode hostileMode, cols []streams.OIDSpec) *hostileAgent {
	t.Helper()
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := &hostileAgent{mode: mode, conn: listen(), other: listen()}
	for _, c := range cols {
		a.cols = append(a.cols, strings.Trim(c.OID, "."))
	}
	a.wg.Add(1)
	go a.serve()
	t.Cleanup(func() {
		_ = a.conn.Close()
		_ = a.other.Close()
		a.wg.Wait()
	})
	return a
}

func (a *hostileAgent) addr() *net.UDPAddr { return a.conn.LocalAddr().(*net.UDPAddr) }

func (a *hostileAgent) serve() {
	defer a.wg.Done()
	buf := make([]byte, 65536)
	// The agent stops when its socket is closed; a bound on the requests
	// it answers keeps a runaway test finite anyway.
	for served := 0; served < 1_000_000; served++ {
		n, from, err := a.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		req, err := (&gosnmp.GoSNMP{Version: gosnmp.Version2c}).SnmpDecodePacket(append([]byte(nil), buf[:n]...))
		if err != nil || len(req.Variables) == 0 {
			continue
		}
		out := a.answer(req)
		conn := a.conn
		if a.mode == otherPort {
			conn = a.other
		}
		for _, b := range out {
			_, _ = conn.WriteToUDP(b, from)
		}
	}
}

// answer is what the agent sends back to req: one datagram or several.
func (a *hostileAgent) answer(req *gosnmp.SnmpPacket) [][]byte {
	asked := strings.TrimPrefix(req.Variables[0].Name, ".")
	reps := int(req.MaxRepetitions)
	if req.PDUType != gosnmp.GetBulkRequest || reps < 1 {
		reps = 1
	}
	reps = min(reps, 50)
	resp := &gosnmp.SnmpPacket{Version: gosnmp.Version2c, Community: req.Community, PDUType: gosnmp.GetResponse, RequestID: req.RequestID}
	col, row := a.split(asked)
	switch a.mode {
	case endlessOnePON, endlessManyPONs, endlessRows:
		// Always a next row: the table never ends.
		for i := 0; i < reps; i++ {
			row = a.nextRow(row)
			resp.Variables = append(resp.Variables, gosnmp.SnmpPDU{Name: "." + col + "." + row, Type: gosnmp.OctetString, Value: []byte("HWTC1234")})
		}
	case notIncreasing:
		// A first row, then an OID before the one asked.
		name := col + ".5.5"
		if row != "" {
			name = col + ".1.1"
		}
		resp.Variables = []gosnmp.SnmpPDU{{Name: "." + name, Type: gosnmp.Integer, Value: 1}}
	case sameOIDForever:
		// The OID asked, again and again (the first answer is fine).
		name := asked
		if row == "" {
			name = col + ".1.1"
		}
		resp.Variables = []gosnmp.SnmpPDU{{Name: "." + name, Type: gosnmp.Integer, Value: 1}}
	case hugeStrings:
		// Rows of 60 KB strings, one per answer, without end.
		row = a.nextRow(row)
		resp.Variables = []gosnmp.SnmpPDU{{Name: "." + col + "." + row, Type: gosnmp.OctetString, Value: []byte(strings.Repeat("x", 60000))}}
	case wrongTypes:
		// Three ONUs; every column answered with a type its decoder
		// does not take: integers for strings, strings for numbers.
		next := a.nextRow(row)
		if n, _ := strconv.Atoi(strings.TrimPrefix(next, "1.")); n > 3 {
			return [][]byte{a.endOfMIB(resp, asked)}
		}
		v := gosnmp.SnmpPDU{Name: "." + col + "." + next, Type: gosnmp.Integer, Value: 42}
		if col != a.cols[0] && col != a.cols[1] {
			v.Type, v.Value = gosnmp.OctetString, []byte("not a number")
		}
		resp.Variables = []gosnmp.SnmpPDU{v}
	case malformedBER:
		// A sequence whose length says more than it holds, then garbage.
		return [][]byte{{0x30, 0x82, 0xff, 0xff, 0x02, 0x01, 0x01}, {0x30, 0x03, 0x02, 0x01}, []byte("not snmp at all")}
	case wrongRequestIDs:
		// Well-formed answers to requests never sent, several per request.
		var out [][]byte
		for i := uint32(1); i <= 3; i++ {
			resp.RequestID = req.RequestID + 1000*i
			resp.Variables = []gosnmp.SnmpPDU{{Name: "." + col + ".1.1", Type: gosnmp.Integer, Value: 1}}
			b, err := resp.MarshalMsg()
			if err == nil {
				out = append(out, b)
			}
		}
		return out
	case otherPort:
		resp.Variables = []gosnmp.SnmpPDU{{Name: "." + col + ".1.1", Type: gosnmp.Integer, Value: 1}}
	}
	b, err := resp.MarshalMsg()
	if err != nil {
		return nil
	}
	return [][]byte{b}
}

func (a *hostileAgent) endOfMIB(resp *gosnmp.SnmpPacket, asked string) []byte {
	resp.Variables = []gosnmp.SnmpPDU{{Name: "." + asked, Type: gosnmp.EndOfMibView}}
	b, _ := resp.MarshalMsg()
	return b
}

// split cuts an OID into the column it is under (the first column when
// under none) and its row index ("" for the column itself).
func (a *hostileAgent) split(oid string) (string, string) {
	for _, c := range a.cols {
		if oid == c {
			return c, ""
		}
		if strings.HasPrefix(oid, c+".") {
			return c, oid[len(c)+1:]
		}
	}
	return a.cols[0], ""
}

// nextRow is the row after row, by the agent's mode: ONUs of PON 1, one ONU
// per PON, or single-arc rows (no <pon>.<onu> index).
func (a *hostileAgent) nextRow(row string) string {
	if a.mode == endlessRows {
		n, _ := strconv.Atoi(row)
		return strconv.Itoa(n + 1)
	}
	pon, onu := 1, 0
	if p, o, ok := strings.Cut(row, "."); ok {
		pon, _ = strconv.Atoi(p)
		onu, _ = strconv.Atoi(o)
	}
	if a.mode == endlessManyPONs {
		return fmt.Sprintf("%d.1", pon+1)
	}
	return fmt.Sprintf("%d.%d", pon, onu+1)
}

// hostileBounds are small bounds, so each case reaches its own quickly.
func hostileBounds() profiles.Bounds {
	return profiles.Bounds{RowsPerTable: 300, ONUsPerPON: 64, ONUsPerOLT: 200, VarbindsPerExecution: 5000, BytesPerExecution: 1 << 20, ValueBytes: 64}
}

// Hostile agents, each polled by the same poller at the same time as a
// well-behaved OLT: every hostile case ends with its own clear cause within
// its bounds, nothing past a bound is published, and the well-behaved OLT's
// execution still succeeds with every ONU.
func TestHostileAgents(t *testing.T) {
	env := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("good", oltsim.Faults{}))
	// Timeouts generous enough for the well-behaved OLT on a loaded
	// machine; the agents that never answer usefully fail after
	// (1+2) x (1+1) x 1s.
	cfg := Config{PollerID: "p-hostile", SNMPTimeout: time.Second, SNMPRetries: 1, PDURetries: 2, PDUBackoff: 10 * time.Millisecond,
		Bounds: hostileBounds(), Classes: ClassLimits{Polling: ClassLimit{Concurrency: 12}}}
	_, reg := env.startPoller(t, cfg)

	type want struct {
		cause   string // "" success
		inError []string
	}
	cases := []struct {
		mode hostileMode
		want want
	}{
		{endlessOnePON, want{streams.ExecCauseBoundExceeded, []string{"bound exceeded: onus_per_pon 64", "PON 1 listed more ONUs"}}},
		{endlessManyPONs, want{streams.ExecCauseBoundExceeded, []string{"bound exceeded: onus_per_olt 200"}}},
		{endlessRows, want{streams.ExecCauseBoundExceeded, []string{"bound exceeded: rows_per_table 300"}}},
		{notIncreasing, want{streams.ExecCauseOIDNotIncreasing, []string{"OIDs not increasing"}}},
		{sameOIDForever, want{streams.ExecCauseOIDNotIncreasing, []string{"OIDs not increasing"}}},
		{hugeStrings, want{streams.ExecCauseBoundExceeded, []string{"bound exceeded: bytes_per_execution 1048576"}}},
		{wrongTypes, want{"", nil}},
		{malformedBER, want{streams.ExecCauseSNMPError, []string{"unmarshal response"}}},
		{wrongRequestIDs, want{streams.ExecCauseSNMPError, []string{"did not answer", "answers with a request id not asked were ignored"}}},
		{otherPort, want{streams.ExecCauseSNMPError, []string{"did not answer"}}},
	}
	agents := map[hostileMode]*hostileAgent{}
	for i, c := range cases {
		a := startHostile(t, c.mode, huaweiColumns)
		agents[c.mode] = a
		n := env.nodeDue("good", fmt.Sprintf("e-hostile-%d", i), "j-hostile")
		n.OLTID, n.NodeID = fmt.Sprintf("olt-hostile-%d", i), fmt.Sprintf("n-%d", i)
		n.Target.Host, n.Target.Port = a.addr().IP.String(), a.addr().Port
		env.publishNodeDue(t, n)
	}
	good := env.nodeDue("good", "e-good", "j-good")
	env.publishNodeDue(t, good)

	goodEv := env.waitEnded(t, "good", "e-good", 2*time.Minute)
	if len(goodEv.succeeded) != 1 || len(goodEv.failed) != 0 {
		t.Fatalf("the well-behaved OLT's execution: %+v", goodEv)
	}
	if onus := distinctONUs(env.batches(t, "good", "e-good")); onus != 32 {
		t.Errorf("the well-behaved OLT: %d ONUs published, want its 32", onus)
	}

	for i, c := range cases {
		t.Run(string(c.mode), func(t *testing.T) {
			olt, exec := fmt.Sprintf("olt-hostile-%d", i), fmt.Sprintf("e-hostile-%d", i)
			ev := env.waitEnded(t, olt, exec, 2*time.Minute)
			batches := env.batches(t, olt, exec)
			if c.want.cause == "" {
				if len(ev.succeeded) != 1 {
					t.Fatalf("want a success, got %+v", ev)
				}
			} else {
				if len(ev.failed) != 1 || len(ev.succeeded) != 0 {
					t.Fatalf("want one failure, got %+v", ev)
				}
				f := ev.failed[0]
				t.Logf("%s: %s", f.Cause, f.Error)
				if f.Cause != c.want.cause {
					t.Errorf("cause %q, want %q (error %s)", f.Cause, c.want.cause, f.Error)
				}
				for _, s := range c.want.inError {
					if !strings.Contains(f.Error, s) {
						t.Errorf("error %q does not say %q", f.Error, s)
					}
				}
				if c.want.cause == streams.ExecCauseBoundExceeded && f.Retryable {
					t.Error("a bound exceeded is retryable: the OLT would send the same")
				}
			}
			for _, b := range batches {
				if b.Last && c.want.cause != "" {
					t.Errorf("a failed execution published a Last batch")
				}
			}
			checkWithinBounds(t, c.mode, batches)
			if c.mode == wrongTypes {
				checkTypesAsAnswered(t, batches)
			}
		})
	}
	if n := counter(t, reg, "facho_poller_bounds_exceeded_total"); n != 4 {
		t.Errorf("facho_poller_bounds_exceeded_total %v, want the 4 bounds reached", n)
	}
	if n := counter(t, reg, "facho_poller_values_truncated_total"); n < 1 {
		t.Errorf("facho_poller_values_truncated_total %v: the huge strings were not counted", n)
	}
	env.assertNoCommunityAnywhere(t)
}

// distinctONUs counts the row indexes of the batches' rows.
func distinctONUs(batches []streams.VarbindBatch) int {
	seen := map[string]bool{}
	for _, b := range batches {
		for _, r := range b.Rows {
			seen[r.Index] = true
		}
	}
	return len(seen)
}

// checkWithinBounds checks what a hostile agent's execution published
// against hostileBounds, and, for the endless tables, that it published
// everything up to the bound and nothing past it.
func checkWithinBounds(t *testing.T, mode hostileMode, batches []streams.VarbindBatch) {
	t.Helper()
	lim := hostileBounds()
	varbinds, long := 0, 0
	rowsOf := map[int]int{}
	onPON := map[string]map[string]bool{}
	for _, b := range batches {
		varbinds += len(b.Varbinds)
		for _, r := range b.Rows {
			pon, onu, _ := strings.Cut(r.Index, ".")
			if onPON[pon] == nil {
				onPON[pon] = map[string]bool{}
			}
			onPON[pon][onu] = true
			for _, v := range r.Values {
				varbinds++
				rowsOf[v.Column]++
				if len(v.Value) > 2*lim.ValueBytes {
					long++
				}
			}
		}
	}
	if varbinds > lim.VarbindsPerExecution || long > 0 {
		t.Errorf("published %d varbinds (bound %d), %d values longer than %d bytes", varbinds, lim.VarbindsPerExecution, long, lim.ValueBytes)
	}
	for col, n := range rowsOf {
		if n > lim.RowsPerTable {
			t.Errorf("column %d: %d rows published, bound %d", col, n, lim.RowsPerTable)
		}
	}
	for pon, onus := range onPON {
		if mode != endlessRows && len(onus) > lim.ONUsPerPON {
			t.Errorf("PON %s: %d ONUs published, bound %d", pon, len(onus), lim.ONUsPerPON)
		}
	}
	exact := map[hostileMode]int{endlessOnePON: lim.ONUsPerPON, endlessManyPONs: lim.ONUsPerOLT, endlessRows: lim.RowsPerTable}
	if want, ok := exact[mode]; ok && distinctONUs(batches) != want {
		t.Errorf("published %d rows, want exactly the %d up to the bound", distinctONUs(batches), want)
	}
	if mode == hugeStrings {
		if distinctONUs(batches) == 0 {
			t.Fatal("no row of huge strings published")
		}
		for _, b := range batches {
			for _, r := range b.Rows {
				for _, v := range r.Values {
					if len(v.Value) != 2*lim.ValueBytes {
						t.Errorf("a 60000-byte string published as %d hex digits, want it cut to %d bytes", len(v.Value), lim.ValueBytes)
					}
				}
			}
		}
	}
}

// checkTypesAsAnswered: values of the wrong type are published with the
// type the agent answered, never converted to the column's.
func checkTypesAsAnswered(t *testing.T, batches []streams.VarbindBatch) {
	t.Helper()
	n := 0
	for _, b := range batches {
		for _, r := range b.Rows {
			for _, v := range r.Values {
				n++
				want := streams.RowValue{Column: v.Column, Type: streams.VTOctetString, Value: fmt.Sprintf("%x", "not a number")}
				if v.Column < 2 {
					want.Type, want.Value = streams.VTInteger, "42"
				}
				if v != want {
					t.Errorf("row %s: %+v, want %+v", r.Index, v, want)
				}
			}
		}
	}
	if n != 3*len(huaweiColumns) {
		t.Errorf("%d values published, want %d", n, 3*len(huaweiColumns))
	}
}

// A vendor profile's own bounds, from a profile of Config.ProfilesDir, are
// the bounds of the nodes of its brand: an endless table of that brand
// stops at the profile's onus_per_pon, lower than the poller's ceiling.
func TestProfileBoundsFromProfilesDir(t *testing.T) {
	dir := t.TempDir()
	yaml := `id: tiny-olt
name: Tiny OLT
vendor: test
index_scheme: pon.onu
index:
  parts:
    - {name: pon, type: int}
    - {name: onu, type: int}
  pon_index: pon
  onu_id: onu
columns:
  - {id: serial, name: serial, oid: ` + huaweiBase + `.43.1.3, field: serial, decoder: {kind: hex_serial}}
jobs:
  - {id: discovery, name: discovery, kind: discovery, columns: [serial], interval_seconds: 900}
bounds: {onus_per_pon: 8}
`
	if err := os.WriteFile(filepath.Join(dir, "tiny.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage})
	env.startPoller(t, Config{PollerID: "p-dir", ProfilesDir: dir, SNMPTimeout: time.Second})
	a := startHostile(t, endlessOnePON, huaweiColumns[:1])
	n := streams.NodeDue{ExecutionID: "e-tiny", NodeID: "n-tiny", JobID: "tiny-olt-discovery", OLTID: "olt-tiny", BrandID: "tiny-olt", IndexScheme: "pon.onu",
		Kind: streams.KindDiscovery, Target: streams.Target{Host: a.addr().IP.String(), Port: a.addr().Port, CommunityEnc: env.sealed},
		OIDs: huaweiColumns[:1], IntervalSeconds: 900, TimeoutSeconds: 60, ScheduledAt: time.Now().UTC()}
	env.publishNodeDue(t, n)
	ev := env.waitEnded(t, "olt-tiny", "e-tiny", 2*time.Minute)
	if len(ev.failed) != 1 || ev.failed[0].Cause != streams.ExecCauseBoundExceeded ||
		!strings.Contains(ev.failed[0].Error, "bound exceeded: onus_per_pon 8 (profile tiny-olt under the poller's ceiling)") {
		t.Fatalf("want a bound_exceeded failure at the profile's 8 ONUs per PON, got %+v", ev)
	}
	if onus := distinctONUs(env.batches(t, "olt-tiny", "e-tiny")); onus != 8 {
		t.Errorf("%d ONUs published, want the profile's 8", onus)
	}
}
