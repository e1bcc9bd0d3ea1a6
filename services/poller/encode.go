package poller

import (
	"encoding/json"
	"strconv"
	"time"

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
	h = streams.AppendJSONString(h, node.ExecutionID)
	h = append(h, `,"job_id":`...)
	h = streams.AppendJSONString(h, node.JobID)
	h = append(h, `,"olt_id":`...)
	h = streams.AppendJSONString(h, node.OLTID)
	h = append(h, `,"brand_id":`...)
	h = streams.AppendJSONString(h, node.BrandID)
	h = append(h, `,"index_scheme":`...)
	h = streams.AppendJSONString(h, node.IndexScheme)
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
	w = streams.AppendJSONString(w, id)
	w = append(w, `,"type":"`+streams.TypeVarbindBatch+`","version":`...)
	w = strconv.AppendInt(w, int64(streams.VarbindBatchVersion), 10)
	w = append(w, `,"time":`...)
	w = appendTime(w, now.UTC())
	w = append(w, `,"source":`...)
	w = streams.AppendJSONString(w, source)
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
			w = streams.AppendJSONString(w, vb.OID)
			w = append(w, `,"type":`...)
			w = streams.AppendJSONString(w, vb.Type)
			w = append(w, `,"value":`...)
			w = streams.AppendJSONString(w, vb.Value)
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
			w = streams.AppendVarbindRow(w, r)
		}
		w = append(w, ']')
	}
	if b.Last {
		w = append(w, `,"last":true`...)
	}
	if b.JobKind != "" {
		w = append(w, `,"job_kind":`...)
		w = streams.AppendJSONString(w, b.JobKind)
	}
	w = append(w, "}}"...)
	e.buf = w
	return w
}

// appendTime appends t as encoding/json writes a time.Time.
func appendTime(w []byte, t time.Time) []byte {
	b, err := t.MarshalJSON()
	if err != nil {
		return append(w, "null"...) // a year outside 0..9999: never here
	}
	return append(w, b...)
}
