package poller

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/facho-olt/facho/streams"
)

// batchEncoder writes a varbind batch's envelope byte for byte as
// streams.EncodeWithID does, without reflection and into a buffer reused
// from batch to batch: encoding/json marshals the payload, then compacts
// each row's MarshalJSON output and the payload again as the envelope's
// RawMessage, three passes over every byte that cost more CPU than the
// rest of the publish. What is the same for every batch of an execution
// (its ids, index and columns) is encoded once. encode_test.go checks the
// output against streams.EncodeWithID.
type batchEncoder struct {
	head    []byte // {"execution_id":...,"index_scheme":"..."[,"index":{...}]
	columns []byte // ,"columns":[...]
	buf     []byte
}

func newBatchEncoder(node streams.NodeDue) (*batchEncoder, error) {
	e := &batchEncoder{}
	h := append([]byte(nil), `{"execution_id":`...)
	h = appendJSONString(h, node.ExecutionID)
	h = append(h, `,"job_id":`...)
	h = appendJSONString(h, node.JobID)
	h = append(h, `,"olt_id":`...)
	h = appendJSONString(h, node.OLTID)
	h = append(h, `,"brand_id":`...)
	h = appendJSONString(h, node.BrandID)
	h = append(h, `,"index_scheme":`...)
	h = appendJSONString(h, node.IndexScheme)
	if node.Index != nil {
		idx, err := json.Marshal(node.Index)
		if err != nil {
			return nil, err
		}
		h = append(h, `,"index":`...)
		h = append(h, idx...)
	}
	e.head = h
	cols, err := json.Marshal(node.OIDs)
	if err != nil {
		return nil, err
	}
	e.columns = append([]byte(`,"columns":`), cols...)
	return e, nil
}

// encode returns the envelope of b (whose ids, index and columns must be
// the node's), valid until the next call.
func (e *batchEncoder) encode(id, source string, now time.Time, b streams.VarbindBatch) []byte {
	w := e.buf[:0]
	w = append(w, `{"id":`...)
	w = appendJSONString(w, id)
	w = append(w, `,"type":"`+streams.TypeVarbindBatch+`","version":`...)
	w = strconv.AppendInt(w, int64(streams.VarbindBatchVersion), 10)
	w = append(w, `,"time":`...)
	w = appendTime(w, now.UTC())
	w = append(w, `,"source":`...)
	w = appendJSONString(w, source)
	w = append(w, `,"data":`...)
	w = append(w, e.head...)
	w = append(w, `,"lease_revision":`...)
	w = strconv.AppendUint(w, b.LeaseRevision, 10)
	w = append(w, `,"batch":`...)
	w = strconv.AppendInt(w, int64(b.Batch), 10)
	w = append(w, e.columns...)
	w = append(w, `,"collected_at":`...)
	w = appendTime(w, b.CollectedAt)
	w = append(w, `,"varbinds":`...)
	if b.Varbinds == nil {
		w = append(w, "null"...)
	} else {
		w = append(w, '[')
		for i, vb := range b.Varbinds {
			if i > 0 {
				w = append(w, ',')
			}
			w = append(w, `{"oid":`...)
			w = appendJSONString(w, vb.OID)
			w = append(w, `,"type":`...)
			w = appendJSONString(w, vb.Type)
			w = append(w, `,"value":`...)
			w = appendJSONString(w, vb.Value)
			w = append(w, '}')
		}
		w = append(w, ']')
	}
	if len(b.Rows) > 0 {
		w = append(w, `,"rows":[`...)
		for i, r := range b.Rows {
			if i > 0 {
				w = append(w, ',')
			}
			// streams.VarbindRow's compact form.
			w = append(w, '[')
			w = appendJSONString(w, r.Index)
			for _, v := range r.Values {
				w = append(w, ',')
				w = strconv.AppendInt(w, int64(v.Column), 10)
				w = append(w, ',')
				w = appendJSONString(w, typeCode(v.Type))
				w = append(w, ',')
				w = appendJSONString(w, v.Value)
			}
			w = append(w, ']')
		}
		w = append(w, ']')
	}
	if b.Last {
		w = append(w, `,"last":true`...)
	}
	w = append(w, "}}"...)
	e.buf = w
	return w
}

// typeCode is streams' one-letter wire code of a varbind type (see
// streams.VarbindRow), the full name for others.
func typeCode(t string) string {
	switch t {
	case streams.VTInteger:
		return "i"
	case streams.VTOctetString:
		return "s"
	case streams.VTOID:
		return "o"
	case streams.VTIPAddress:
		return "a"
	case streams.VTCounter32:
		return "c"
	case streams.VTGauge32:
		return "g"
	case streams.VTTimeTicks:
		return "t"
	case streams.VTCounter64:
		return "C"
	case streams.VTNull:
		return "n"
	case streams.VTNoSuchObject:
		return "O"
	case streams.VTNoSuchInstance:
		return "N"
	case streams.VTEndOfMibView:
		return "E"
	case streams.VTOpaque:
		return "q"
	}
	return t
}

// appendTime appends t as encoding/json writes a time.Time.
func appendTime(w []byte, t time.Time) []byte {
	b, err := t.MarshalJSON()
	if err != nil {
		return append(w, "null"...) // a year outside 0..9999: never here
	}
	return append(w, b...)
}

// appendJSONString appends s quoted as encoding/json does (HTML-safe):
// directly when it has only printable ASCII that needs no escaping (hex,
// decimal and dotted values, ids), through encoding/json otherwise.
func appendJSONString(w []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(w, q...)
		}
	}
	w = append(w, '"')
	w = append(w, s...)
	return append(w, '"')
}
