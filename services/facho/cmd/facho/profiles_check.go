package main

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/services/projector"
	"github.com/facho-olt/facho/streams"
)

// Plausibility checks of `facho profiles check` on what a profile decoded
// from a live agent: a profile that validates can still read the wrong
// thing (a scale off by 100, the mW figure of "0.03 mW (-14.61 dBm)" taken
// for dBm), and such a reading looks perfect in the read model.

// Bounds of a plausible optical power reading, dBm.
const (
	plausibleMaxDBm = 10
	plausibleMinDBm = -50
)

// powerFields are the fields read in dBm.
var powerFields = map[string]bool{streams.FieldRxPower: true, streams.FieldTxPower: true, streams.FieldOLTRxPower: true}

// implausible returns a warning per column of p whose decoded values look
// wrong: a power outside -50..+10 dBm, a number column where every value is
// 0 (two or more) or the same (three or more), a float_string power whose
// text carries a unit the decoder does not read.
func implausible(p profiles.Profile, d projector.Decoded, vbs []streams.Varbind) []string {
	var warns []string
	for _, c := range p.Columns {
		var nums []float64
		for _, k := range d.Keys() {
			if v, ok := numberField(d.ONUs[k], c.Field); ok {
				nums = append(nums, v)
			}
		}
		if len(nums) == 0 {
			continue
		}
		where := fmt.Sprintf("column %s (%s)", c.ID, c.Field)
		if powerFields[c.Field] {
			out := 0
			example := 0.0
			for _, v := range nums {
				if v > plausibleMaxDBm || v < plausibleMinDBm {
					out++
					example = v
				}
			}
			if out > 0 {
				warns = append(warns, fmt.Sprintf("%s: %d of %d values outside %d..+%d dBm (e.g. %s): check the decoder's scale, offset or unit",
					where, out, len(nums), plausibleMinDBm, plausibleMaxDBm, strconv.FormatFloat(example, 'f', -1, 64)))
			}
		}
		sorted := append([]float64(nil), nums...)
		sort.Float64s(sorted)
		switch {
		case len(nums) >= 2 && sorted[0] == 0 && sorted[len(sorted)-1] == 0:
			warns = append(warns, fmt.Sprintf("%s: every value (%d) is 0: check the OID and decoder", where, len(nums)))
		case len(nums) >= 3 && sorted[0] == sorted[len(sorted)-1]:
			warns = append(warns, fmt.Sprintf("%s: every value (%d) is %s: check the OID and decoder", where, len(nums), strconv.FormatFloat(sorted[0], 'f', -1, 64)))
		}
		if c.Decoder.Kind == "float_string" && c.Decoder.Unit == "" && powerFields[c.Field] {
			if unit := unitInText(c, vbs); unit != "" {
				warns = append(warns, fmt.Sprintf("%s: the text carries %q, which float_string does not read (it takes the first number as dBm): use a regex decoder on the dBm figure, or unit: %s",
					where, unit, unit))
			}
		}
	}
	return warns
}

// numberField is an ONU's numeric field, when read with a value.
func numberField(f *projector.ONUFields, field string) (float64, bool) {
	if field == streams.FieldRxPower {
		if f.RxPowerDBm == nil {
			return 0, false
		}
		return *f.RxPowerDBm, true
	}
	if v := f.Num[field]; v != nil {
		return *v, true
	}
	return 0, false
}

// unitInText is the first power unit other than dBm found in the column's
// raw texts ("mW", "uW"), or "".
func unitInText(c profiles.Column, vbs []streams.Varbind) string {
	for _, vb := range vbs {
		if vb.Type != streams.VTOctetString || !strings.HasPrefix(vb.OID, strings.Trim(c.OID, ".")+".") {
			continue
		}
		b, err := hex.DecodeString(vb.Value)
		if err != nil {
			continue
		}
		low := strings.ToLower(string(b))
		for _, u := range []string{"mw", "uw", "µw"} {
			if strings.Contains(low, u) {
				return map[string]string{"mw": streams.UnitMW, "uw": streams.UnitUW, "µw": streams.UnitUW}[u]
			}
		}
	}
	return ""
}
