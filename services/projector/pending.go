package projector

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// encodePending packs events as (uvarint length, bytes) triples of msg id,
// subject and payload: the pending_events blob.
func encodePending(rows []outboxRow) []byte {
	n := 0
	for _, r := range rows {
		n += len(r.MsgID) + len(r.Subject) + len(r.Payload) + 3*binary.MaxVarintLen32
	}
	b := make([]byte, 0, n)
	for _, r := range rows {
		for _, part := range [][]byte{[]byte(r.MsgID), []byte(r.Subject), r.Payload} {
			b = binary.AppendUvarint(b, uint64(len(part)))
			b = append(b, part...)
		}
	}
	return b
}

var errPendingCorrupt = errors.New("pending events blob is corrupt")

func decodePending(b []byte) ([]outboxRow, error) {
	var out []outboxRow
	for len(b) > 0 {
		var parts [3][]byte
		for i := range parts {
			n, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < n {
				return nil, errPendingCorrupt
			}
			parts[i], b = b[k:k+int(n)], b[k+int(n):]
		}
		out = append(out, outboxRow{MsgID: string(parts[0]), Subject: string(parts[1]), Payload: parts[2]})
	}
	return out, nil
}

// writePending stores the events of worker's transaction in it.
func writePending(ctx context.Context, tx pgx.Tx, consumer string, worker int, rows []outboxRow) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO pending_events (consumer, worker, events) VALUES ($1, $2, $3)
		ON CONFLICT (consumer, worker) DO UPDATE SET events = EXCLUDED.events`, consumer, worker, encodePending(rows))
	if err != nil {
		return fmt.Errorf("store %d pending events of %s worker %d: %w", len(rows), consumer, worker, err)
	}
	return nil
}
