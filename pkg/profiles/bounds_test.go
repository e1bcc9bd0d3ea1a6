package profiles

import (
	"strings"
	"testing"
)

func TestEffectiveBounds(t *testing.T) {
	ceiling := DefaultBounds()
	tests := []struct {
		name    string
		profile Profile
		ceiling Bounds
		want    Bounds
	}{
		{"a GPON vendor profile: 128 per PON, the chassis per OLT", Profile{ID: "fiberhome-an5516"}, ceiling,
			Bounds{RowsPerTable: 32768, ONUsPerPON: 128, ONUsPerOLT: 32768, VarbindsPerExecution: 1 << 20, BytesPerExecution: 256 << 20, ValueBytes: 1024}},
		{"an XGS-PON capable family: 256 per PON, the OLT capped by the ceiling", Profile{ID: "huawei-ma5800"}, ceiling,
			Bounds{RowsPerTable: 65536, ONUsPerPON: 256, ONUsPerOLT: 65536, VarbindsPerExecution: 1 << 20, BytesPerExecution: 256 << 20, ValueBytes: 1024}},
		{"an unknown profile: the ceiling", Profile{ID: "mine"}, ceiling, ceiling},
		{"the profile's own bounds win over the vendor's", Profile{ID: "vsol-v1600", Bounds: Bounds{ONUsPerPON: 64, ValueBytes: 64}}, ceiling,
			Bounds{RowsPerTable: 2048, ONUsPerPON: 64, ONUsPerOLT: 2048, VarbindsPerExecution: 1 << 20, BytesPerExecution: 256 << 20, ValueBytes: 64}},
		{"the ceiling caps the profile's", Profile{ID: "mine", Bounds: Bounds{RowsPerTable: 1 << 20, BytesPerExecution: 1 << 30}},
			Bounds{RowsPerTable: 100, ONUsPerPON: 10, ONUsPerOLT: 50, VarbindsPerExecution: 1000, BytesPerExecution: 4096, ValueBytes: 32},
			Bounds{RowsPerTable: 100, ONUsPerPON: 10, ONUsPerOLT: 50, VarbindsPerExecution: 1000, BytesPerExecution: 4096, ValueBytes: 32}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.profile.EffectiveBounds(tt.ceiling); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestBoundsValidate(t *testing.T) {
	tests := []struct {
		name string
		b    Bounds
		want string // "" valid
	}{
		{"none set", Bounds{}, ""},
		{"the defaults", DefaultBounds(), ""},
		{"negative", Bounds{RowsPerTable: -1}, "rows_per_table -1"},
		{"too many per PON", Bounds{ONUsPerPON: MaxONUsPerPON + 1}, "onus_per_pon"},
		{"value too short to hold a serial", Bounds{ValueBytes: 8}, "value_bytes 8: want at least 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one with %q", err, tt.want)
			}
		})
	}
	if err := (Bounds{RowsPerTable: 1}).Complete(); err == nil {
		t.Error("a ceiling with unset bounds passed Complete")
	}
	if err := DefaultBounds().Complete(); err != nil {
		t.Error(err)
	}
}

// A profile's YAML takes bounds; invalid ones are refused with the
// profile's other errors, and every built-in profile's bounds are valid.
func TestProfileYAMLBounds(t *testing.T) {
	cat, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	hw, ok := cat.Get("huawei-ma5800")
	if !ok {
		t.Fatal("no huawei-ma5800")
	}
	for _, tt := range []struct {
		yaml, want string
	}{
		{"bounds: {onus_per_pon: 64, value_bytes: 128}\n", ""},
		{"bounds: {onus_per_pon: -3}\n", "bounds: onus_per_pon -3"},
		{"bounds: {rows: 3}\n", "field rows not found"},
	} {
		p, err := Parse([]byte(huaweiYAMLWith(t, tt.yaml)), "test")
		if tt.want == "" {
			if err != nil {
				t.Fatalf("%s: %v", tt.yaml, err)
			}
			if got := p.EffectiveBounds(DefaultBounds()); got.ONUsPerPON != 64 || got.ValueBytes != 128 || got.ONUsPerOLT != hw.EffectiveBounds(DefaultBounds()).ONUsPerOLT {
				t.Fatalf("%s: bounds %+v", tt.yaml, got)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Fatalf("%s: error %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

// huaweiYAMLWith is the built-in Huawei profile with extra appended.
func huaweiYAMLWith(t *testing.T, extra string) string {
	t.Helper()
	b, err := embedded.ReadFile("profiles/huawei-ma5800.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + extra
}
