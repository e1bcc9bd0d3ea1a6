package streams

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

func TestVarbindRowRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		row  VarbindRow
		want string
	}{
		{"plain", VarbindRow{Index: "4194304000.1", Values: []RowValue{{0, VTOctetString, "48575443"}, {2, VTInteger, "-2150"}}},
			`["4194304000.1",0,"s","48575443",2,"i","-2150"]`},
		{"every code", VarbindRow{Index: "1", Values: []RowValue{{0, VTOID, "1.3.6"}, {1, VTIPAddress, "10.0.0.1"}, {2, VTCounter32, "1"},
			{3, VTGauge32, "2"}, {4, VTTimeTicks, "3"}, {5, VTCounter64, "4"}, {6, VTNull, ""}, {7, VTNoSuchObject, ""},
			{8, VTNoSuchInstance, ""}, {9, VTEndOfMibView, ""}, {10, VTOpaque, "1.5"}}},
			`["1",0,"o","1.3.6",1,"a","10.0.0.1",2,"c","1",3,"g","2",4,"t","3",5,"C","4",6,"n","",7,"O","",8,"N","",9,"E","",10,"q","1.5"]`},
		{"other type by name", VarbindRow{Index: "2", Values: []RowValue{{0, "BitString", "ff"}}}, `["2",0,"BitString","ff"]`},
		{"escaped as encoding/json does", VarbindRow{Index: "3", Values: []RowValue{{0, "Odd\"<type>", "a&b\\ñ\x01"}}},
			`["3",0,"Odd\"\u003ctype\u003e","a\u0026b\\ñ\u0001"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.row)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("json.Marshal = %s\nwant          %s", got, tc.want)
			}
			if direct := AppendVarbindRow(nil, tc.row); string(direct) != tc.want {
				t.Fatalf("AppendVarbindRow = %s, want what encoding/json writes", direct)
			}
			var back VarbindRow
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tc.row) {
				t.Fatalf("round trip %+v, want %+v", back, tc.row)
			}
		})
	}
}

func TestVarbindRowRefusesBadShapes(t *testing.T) {
	for _, in := range []string{`[]`, `["1",0,"i"]`, `[1,0,"i","1"]`, `["1","0","i","1"]`, `{"i":"1"}`} {
		var r VarbindRow
		if err := json.Unmarshal([]byte(in), &r); err == nil {
			t.Errorf("%s decoded as %+v, want an error", in, r)
		}
	}
}

// A version 1 batch (raw varbinds only) still decodes; a row naming a
// column the batch does not have is malformed.
func TestVarbindBatchVersions(t *testing.T) {
	v1 := []byte(`{"id":"x","type":"varbind.batch","version":1,"time":"2026-11-23T10:00:00Z","source":"t","data":{"execution_id":"e","olt_id":"o","columns":[{"id":"c","oid":"1.3.6"}],"collected_at":"2026-11-23T10:00:00Z","varbinds":[{"oid":"1.3.6.1","type":"Integer","value":"5"}]}}`)
	_, b, err := Decode[VarbindBatch](v1)
	if err != nil || b.VarbindCount() != 1 {
		t.Fatalf("v1: %+v, %v", b, err)
	}
	bad := VarbindBatch{ExecutionID: "e", OLTID: "o", Columns: []OIDSpec{{ID: "c", OID: "1.3.6"}}, Rows: []VarbindRow{{Index: "1", Values: []RowValue{{Column: 1, Type: VTInteger, Value: "1"}}}}}
	if err := bad.Validate(); err == nil {
		t.Fatal("a row naming column 1 of 1 validated")
	}
	good := bad
	good.Rows = []VarbindRow{{Index: "1", Values: []RowValue{{Column: 0, Type: VTInteger, Value: "1"}}}}
	if all := good.AllVarbinds(); len(all) != 1 || all[0].OID != "1.3.6.1" {
		t.Fatalf("AllVarbinds = %+v", all)
	}
}

// The one-pass row reader and encoding/json read every row alike: rows as
// AppendVarbindRow writes them take the fast path, the rest fall back.
func TestVarbindRowFastPathEqualsEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`["4194304000.1",0,"o","48 57 54 43"]`,
		`["4194304000.1",0,"o","48 57 54 43",1,"s","cliente 1",2,"i","1",3,"i","-2000"]`,
		`["1.2",12,"u","7"]`,
		`["1.2",0,"s","caf\u00e9 \"x\""]`,              // escapes: encoding/json
		`[ "1.2" , 0 , "s" , "spaces" ]`,               // whitespace: encoding/json
		`["1.2",00,"s","x"]`,                           // not a JSON number
		`["1.2",1.0,"s","x"]`,                          // not an int
		`["1.2"]`,                                      // no values
		`["1.2",0,"s"]`,                                // short
		`["1.2",0,"Counter64","18446744073709551615"]`, // a type without a code
	} {
		var fast, slow VarbindRow
		ferr := json.Unmarshal([]byte(in), &fast)
		serr := slow.unmarshalSlow([]byte(in))
		if (ferr == nil) != (serr == nil) || fmt.Sprint(fast) != fmt.Sprint(slow) {
			t.Errorf("%s: UnmarshalJSON %+v (%v), encoding/json %+v (%v)", in, fast, ferr, slow, serr)
		}
	}
}
