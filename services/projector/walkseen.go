package projector

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/streams"
)

// An onu_data row is written only when the ONU changed, so what a walk read
// is not marked on the rows: each transaction records, per attempt, the
// ONU keys its batches read (onu_walk_seen), and the attempt's Last batch
// asks those records which ONUs it did not read (markRemoved) and whose Rx
// power it did not read (clearUnreadRx). A fleet whose ONUs do not change
// then costs one small insert per OLT per transaction instead of one row
// version per ONU per execution.

// tracksWalk says whether a batch's attempt ends with end-of-walk checks,
// and so whether what it read must be recorded.
func tracksWalk(b streams.VarbindBatch) bool { return readsONUTable(b) || readsRx(b) }

// attemptSeen is what one attempt's batches of a transaction read.
type attemptSeen struct {
	at   map[ONUKey]int // position in the arrays
	pons []int64
	onus []int64
	rx   []bool
	seq  uint64 // the last batch's stream sequence
}

// walkSeen collects, per attempt, the ONU keys a segment's batches read.
type walkSeen map[string]*attemptSeen

func (w walkSeen) add(attempt string, seq uint64, k ONUKey, rxRead bool) {
	a := w[attempt]
	if a == nil {
		a = &attemptSeen{at: map[ONUKey]int{}}
		w[attempt] = a
	}
	a.seq = max(a.seq, seq)
	if i, ok := a.at[k]; ok {
		a.rx[i] = a.rx[i] || rxRead
		return
	}
	a.at[k] = len(a.pons)
	a.pons, a.onus, a.rx = append(a.pons, k.PonIndex), append(a.onus, k.ONUID), append(a.rx, rxRead)
}

// insert records the segment's keys, one row per attempt, and deletes the
// records of the OLT's other attempts from before: the OLT's lease keeps
// attempts from overlapping, so when one records, every earlier one has
// ended or was abandoned. An attempt keeps its own records until the next
// one starts, so its Last batch published again checks against the whole
// walk and changes nothing; records never pile up, even for an OLT whose
// walks never complete.
func (w walkSeen) insert(ctx context.Context, tx pgx.Tx, olt string) error {
	attempts := make([]string, 0, len(w))
	for a := range w {
		attempts = append(attempts, a)
	}
	sort.Slice(attempts, func(i, j int) bool { return w[attempts[i]].seq < w[attempts[j]].seq })
	for _, at := range attempts {
		a := w[at]
		// ON CONFLICT: only a replay of the same batches (into a shadow
		// already holding them) meets its own row; the keys are the same.
		if _, err := tx.Exec(ctx, `WITH older AS (DELETE FROM onu_walk_seen WHERE olt_id = $1 AND attempt <> $2 AND seq < $3)
			INSERT INTO onu_walk_seen (olt_id, attempt, seq, pon_index, onu_id, rx_read)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (olt_id, attempt, seq) DO NOTHING`,
			olt, at, int64(a.seq), a.pons, a.onus, a.rx); err != nil {
			return fmt.Errorf("record the onus attempt %s of olt %s read: %w", at, olt, err)
		}
	}
	return nil
}

// endWalk runs after a complete walk of the ONU table's Last batch: it
// becomes the OLT's last walk (onu_walks), which every ONU not marked
// removed was read by.
func endWalk(ctx context.Context, tx pgx.Tx, olt, executionID string, at time.Time) error {
	if _, err := tx.Exec(ctx, `INSERT INTO onu_walks (olt_id, execution_id, seen_at) VALUES ($1, $2, $3)
		ON CONFLICT (olt_id) DO UPDATE SET execution_id = EXCLUDED.execution_id, seen_at = EXCLUDED.seen_at
		WHERE onu_walks.seen_at <= EXCLUDED.seen_at`, olt, executionID, at); err != nil {
		return fmt.Errorf("record the last walk of olt %s: %w", olt, err)
	}
	return nil
}

// walkReads is what one attempt read of an OLT: the ONUs, and those whose
// Rx power it read.
type walkReads struct {
	seen, rx map[ONUKey]bool
}

// loadWalkReads reads the attempt's records.
func loadWalkReads(ctx context.Context, tx pgx.Tx, olt, attempt string) (walkReads, error) {
	r := walkReads{seen: map[ONUKey]bool{}, rx: map[ONUKey]bool{}}
	rows, err := tx.Query(ctx, `SELECT pon_index, onu_id, rx_read FROM onu_walk_seen WHERE olt_id = $1 AND attempt = $2`, olt, attempt)
	if err != nil {
		return r, fmt.Errorf("read what attempt %s of olt %s read: %w", attempt, olt, err)
	}
	defer rows.Close()
	for rows.Next() {
		var pons, onus []int64
		var rx []bool
		if err := rows.Scan(&pons, &onus, &rx); err != nil {
			return r, fmt.Errorf("read what attempt %s of olt %s read: %w", attempt, olt, err)
		}
		if len(onus) != len(pons) || len(rx) != len(pons) {
			return r, fmt.Errorf("read what attempt %s of olt %s read: arrays of %d, %d and %d keys", attempt, olt, len(pons), len(onus), len(rx))
		}
		for i := range pons {
			k := ONUKey{PonIndex: pons[i], ONUID: onus[i]}
			r.seen[k] = true
			if rx[i] {
				r.rx[k] = true
			}
		}
	}
	if err := rows.Err(); err != nil {
		return r, fmt.Errorf("read what attempt %s of olt %s read: %w", attempt, olt, err)
	}
	return r, nil
}

// keysWhere lists the OLT's ONUs matching cond (SQL on onu_data) that keep
// says to keep, in key order.
func keysWhere(ctx context.Context, tx pgx.Tx, olt, cond string, keep func(ONUKey) bool) ([]ONUKey, error) {
	rows, err := tx.Query(ctx, `SELECT pon_index, onu_id FROM onu_data WHERE olt_id = $1 AND `+cond+` ORDER BY pon_index, onu_id`, olt)
	if err != nil {
		return nil, fmt.Errorf("list onus of olt %s: %w", olt, err)
	}
	defer rows.Close()
	var out []ONUKey
	for rows.Next() {
		var k ONUKey
		if err := rows.Scan(&k.PonIndex, &k.ONUID); err != nil {
			return nil, fmt.Errorf("list onus of olt %s: %w", olt, err)
		}
		if keep(k) {
			out = append(out, k)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list onus of olt %s: %w", olt, err)
	}
	return out, nil
}

func keyArrays(keys []ONUKey) (pons, onus []int64) {
	pons, onus = make([]int64, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		pons[i], onus[i] = k.PonIndex, k.ONUID
	}
	return pons, onus
}
