package auditor

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendDetails appends an entry's details as a JSON object, for the jsonb
// column: a rebuild encodes every entry, and json.Marshal of a map (keys
// sorted, every value through reflection) was much of its cost. Values of
// the kinds the decoders put there (strings, integers, booleans, times)
// are written directly; anything else, and a string that would need
// escaping, goes through json.Marshal. The column stores the parsed value,
// so the text needs to equal json.Marshal's only as JSON: key order and
// escapes do not matter.
func appendDetails(b []byte, d map[string]any) ([]byte, error) {
	b = append(b, '{')
	first := true
	for k, v := range d {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSONValue(b, v); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendJSONValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return appendJSONString(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case nil:
		return append(b, "null"...), nil
	case time.Time:
		t, err := x.MarshalJSON()
		if err != nil {
			return nil, err
		}
		return append(b, t...), nil
	case map[string]any:
		return appendDetails(b, x)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// appendJSONString quotes s; a string with a byte JSON must escape (or
// that json.Marshal would change: invalid UTF-8) takes json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			j, _ := json.Marshal(s) // a string always encodes
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
