package poller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/streams"
)

// A node's bounds are its brand's vendor profile's under the ceiling; a
// brand of no known profile has the ceiling.
func TestBoundsOf(t *testing.T) {
	cat, err := profiles.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ceiling := profiles.DefaultBounds()
	ceiling.ONUsPerOLT = 1000
	p := &poller{cfg: Config{Bounds: ceiling}, profiles: cat}
	tests := []struct {
		brand      string
		perPON     int
		perOLT     int
		fromPrefix string
	}{
		{"huawei-ma5800", 256, 1000, "profile huawei-ma5800"},
		{"fiberhome-an5516", 128, 1000, "profile fiberhome-an5516"},
		{"vsol-v1600", 128, 1000, "profile vsol-v1600"},
		{"made-by-hand", ceiling.ONUsPerPON, 1000, "the poller's ceiling"},
		{"", ceiling.ONUsPerPON, 1000, "the poller's ceiling"},
	}
	for _, tt := range tests {
		b, from := p.boundsOf(streams.NodeDue{BrandID: tt.brand})
		if b.ONUsPerPON != tt.perPON || b.ONUsPerOLT != tt.perOLT || !strings.HasPrefix(from, tt.fromPrefix) {
			t.Errorf("brand %q: %+v from %q", tt.brand, b, from)
		}
	}
}

// admit counts rows per column and distinct ONUs (a row read by several
// columns is one ONU), refuses the varbind that would cross a bound, and
// leaves columns with an index of their own out of the ONU counts.
func TestExecBoundsAdmit(t *testing.T) {
	own := streams.IndexSpec{Parts: []streams.IndexPart{{Name: "i", Type: "int"}}, PonIndex: "i", ONUID: "i"}
	node := streams.NodeDue{Kind: streams.KindBulkWalk, IndexScheme: "pon.onu", OIDs: []streams.OIDSpec{{ID: "a", OID: "1.3.1"}, {ID: "b", OID: "1.3.2"}, {ID: "c", OID: "1.3.3", Index: &own}}}
	lim := profiles.Bounds{RowsPerTable: 4, ONUsPerPON: 2, ONUsPerOLT: 3, VarbindsPerExecution: 100, BytesPerExecution: 1000, ValueBytes: 16}
	type step struct {
		pos   int
		index string
		bound string // "" admitted
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"the same ONUs in two columns", []step{{0, "1.1", ""}, {0, "1.2", ""}, {1, "1.1", ""}, {1, "1.2", ""}}},
		{"a third ONU on a PON", []step{{0, "1.1", ""}, {0, "1.2", ""}, {0, "1.3", "onus_per_pon"}}},
		{"a fourth ONU on the OLT", []step{{0, "1.1", ""}, {0, "2.1", ""}, {0, "3.1", ""}, {0, "4.1", "onus_per_olt"}}},
		{"a fifth row of a table", []step{{2, "1", ""}, {2, "2", ""}, {2, "3", ""}, {2, "4", ""}, {2, "5", "rows_per_table"}}},
		{"rows that are no ONU index", []step{{0, "x", ""}, {0, "7", ""}, {0, "8", ""}, {0, "9", ""}, {0, "10", "rows_per_table"}}},
		{"a varbind under no column", []step{{-1, "", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newExecBounds(lim, "test", node)
			for i, s := range tt.steps {
				err := b.admit(i, s.pos, s.index)
				switch {
				case s.bound == "" && err != nil:
					t.Fatalf("step %d: %v", i, err)
				case s.bound != "" && (err == nil || boundName(err) != s.bound):
					t.Fatalf("step %d: error %v, want bound %s", i, err, s.bound)
				}
				if cause, _ := readCause(err); err != nil && cause != CauseBoundExceeded {
					t.Fatalf("cause %q", cause)
				}
			}
		})
	}
	b := newExecBounds(lim, "test", node)
	if err := b.admit(lim.VarbindsPerExecution, 0, "1.1"); boundName(err) != "varbinds_per_execution" {
		t.Fatalf("varbinds bound: %v", err)
	}

	// An index whose pon_index is a constant (the generic IF-MIB
	// profile's interfaces) names no PON: only the OLT's bound counts.
	ifIndex := streams.IndexSpec{Parts: []streams.IndexPart{{Name: "ifindex", Type: "int"}}, PonIndex: "0", ONUID: "ifindex"}
	generic := streams.NodeDue{Kind: streams.KindDiscovery, IndexScheme: "if-mib-ifindex", Index: &ifIndex, OIDs: []streams.OIDSpec{{ID: "descr", OID: "1.3.6.1.2.1.2.2.1.2"}}}
	b = newExecBounds(profiles.Bounds{RowsPerTable: 10, ONUsPerPON: 2, ONUsPerOLT: 3, VarbindsPerExecution: 100}, "test", generic)
	for i, index := range []string{"1", "2", "3", "4"} {
		err := b.admit(i, 0, index)
		if i < 3 && err != nil {
			t.Fatalf("interface %s: %v", index, err)
		}
		if i == 3 && boundName(err) != "onus_per_olt" {
			t.Fatalf("interface %s: %v, want onus_per_olt", index, err)
		}
	}
}

func TestCapValue(t *testing.T) {
	b := newExecBounds(profiles.Bounds{ValueBytes: 4}, "test", streams.NodeDue{})
	tests := []struct {
		typ, in, want string
	}{
		{streams.VTOctetString, "41424344", "41424344"},
		{streams.VTOctetString, "4142434445", "41424344"},
		{streams.VTInteger, "1234", "1234"},
		{streams.VTOID, "1.3.6.1.4", "1.3."},
	}
	for _, tt := range tests {
		if got := b.capValue(tt.typ, tt.in); got != tt.want {
			t.Errorf("%s %q: %q, want %q", tt.typ, tt.in, got, tt.want)
		}
	}
	if b.truncated != 2 {
		t.Errorf("truncated %d, want 2", b.truncated)
	}
}

// BenchmarkWalkAddBounds measures what the bounds cost a walk: buffering a
// 1,024-ONU table of the Huawei discovery's 4 columns, with and without
// the bounds checks, in the same run (compare the two ns/op).
func BenchmarkWalkAddBounds(b *testing.B) {
	node := streams.NodeDue{Kind: streams.KindBulkWalk, IndexScheme: "pon.onu", OIDs: huaweiColumns}
	var vbs []streams.Varbind
	for _, c := range huaweiColumns {
		for pon := 0; pon < 8; pon++ {
			for onu := 0; onu < 128; onu++ {
				vbs = append(vbs, streams.Varbind{OID: fmt.Sprintf("%s.%d.%d", c.OID, 4194304000+pon*256, onu), Type: streams.VTOctetString, Value: "48575443a1b2c3d4"})
			}
		}
	}
	ctx := context.Background()
	for _, bounded := range []bool{false, true} {
		b.Run(fmt.Sprintf("bounds=%v", bounded), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				ex := &execution{p: &poller{cfg: Config{RowBufferVarbinds: 1 << 30}}, node: node}
				if bounded {
					ex.bounds = newExecBounds(profiles.DefaultBounds(), "bench", node)
				}
				for _, vb := range vbs {
					if err := ex.add(ctx, vb); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(vbs)), "ns/varbind")
		})
	}
}
