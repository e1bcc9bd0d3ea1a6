package streams

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Walk PDUs (SNMPTuning.WalkPDU).
const (
	// WalkPDUByKind: `walk` uses GETNEXT, `bulkwalk` and `discovery` use
	// GETBULK (the default).
	WalkPDUByKind = ""
	// WalkPDUGetNext: every walk uses GETNEXT (SNMPv1-style agents, OLTs
	// that misbehave on GETBULK).
	WalkPDUGetNext = "getnext"
	// WalkPDUGetBulk: every walk uses GETBULK, `walk` included.
	WalkPDUGetBulk = "getbulk"
)

// Bounds of SNMPTuning.
const (
	MaxGetVarbinds    = 60
	MaxGetConcurrency = 16
	MaxMaxRepetitions = 255
)

// SNMPTuning says how a brand's OLTs, or one OLT, want to be read. A brand
// sets it for its OLTs; an OLT's non-zero fields override its brand's; zero
// fields take the poller's defaults (see the poller's Config).
type SNMPTuning struct {
	// WalkPDU: "" (by kind), "getnext" or "getbulk".
	WalkPDU string `json:"walk_pdu,omitempty" yaml:"walk_pdu,omitempty"`
	// MaxRepetitions of a GETBULK walk (1..255); halved on tooBig.
	MaxRepetitions int `json:"max_repetitions,omitempty" yaml:"max_repetitions,omitempty"`
	// GetVarbinds is the first size of a GET PDU, in varbinds (1..60); a
	// PDU that times out or is tooBig is split in halves.
	GetVarbinds int `json:"get_varbinds,omitempty" yaml:"get_varbinds,omitempty"`
	// GetConcurrency is how many GET PDUs are in flight on the OLT at
	// once (1..16): some OLTs cannot take concurrency.
	GetConcurrency int `json:"get_concurrency,omitempty" yaml:"get_concurrency,omitempty"`
}

// Validate checks the bounds; zero fields are valid (defaults).
func (t SNMPTuning) Validate() error {
	var errs []error
	switch t.WalkPDU {
	case WalkPDUByKind, WalkPDUGetNext, WalkPDUGetBulk:
	default:
		errs = append(errs, fmt.Errorf("walk_pdu %q: want %q, %q or empty (by kind)", t.WalkPDU, WalkPDUGetNext, WalkPDUGetBulk))
	}
	if t.MaxRepetitions < 0 || t.MaxRepetitions > MaxMaxRepetitions {
		errs = append(errs, fmt.Errorf("max_repetitions %d: want 1..%d (0: default)", t.MaxRepetitions, MaxMaxRepetitions))
	}
	if t.GetVarbinds < 0 || t.GetVarbinds > MaxGetVarbinds {
		errs = append(errs, fmt.Errorf("get_varbinds %d: want 1..%d (0: default)", t.GetVarbinds, MaxGetVarbinds))
	}
	if t.GetConcurrency < 0 || t.GetConcurrency > MaxGetConcurrency {
		errs = append(errs, fmt.Errorf("get_concurrency %d: want 1..%d (0: default)", t.GetConcurrency, MaxGetConcurrency))
	}
	return errors.Join(errs...)
}

// Over returns t with the non-zero fields of o replacing its own (an OLT's
// tuning over its brand's).
func (t SNMPTuning) Over(o SNMPTuning) SNMPTuning {
	if o.WalkPDU != "" {
		t.WalkPDU = o.WalkPDU
	}
	if o.MaxRepetitions != 0 {
		t.MaxRepetitions = o.MaxRepetitions
	}
	if o.GetVarbinds != 0 {
		t.GetVarbinds = o.GetVarbinds
	}
	if o.GetConcurrency != 0 {
		t.GetConcurrency = o.GetConcurrency
	}
	return t
}

// ONUSet is the value of KeyONUSet in BucketOLTSNMP: the ONUs an OLT is
// known to have, folded from its onu.changed "discovered" events up to
// stream sequence Seq of FACHO_ONU. It outlives the stream's retention, so
// an ONU discovered long ago is still read by GET jobs.
type ONUSet struct {
	// Seq is the last FACHO_ONU sequence folded in; StreamCreated is when
	// that FACHO_ONU was created (a recreated stream restarts its
	// sequences: the set is then folded again from the start).
	Seq           uint64    `json:"seq"`
	StreamCreated time.Time `json:"stream_created"`
	// PONs maps a PON index (decimal) to the ONU ids seen on it, sorted.
	PONs      map[string][]int64 `json:"pons"`
	UpdatedAt time.Time          `json:"updated_at"`
}

// GetSizes is the value of KeyGetSizes in BucketOLTSNMP: the largest GET
// PDU, in varbinds, that the OLT answered in its last GET execution.
type GetSizes struct {
	Varbinds  int       `json:"varbinds"`
	UpdatedAt time.Time `json:"updated_at"`
}

// MaxONUFailuresListed bounds ExecutionSucceeded.ONUFailures; the counts
// cover every failure.
const MaxONUFailuresListed = 100

// ONUFailure is one ONU whose OIDs a GET could not read, even one OID per
// PDU: the OLT did not answer, answered tooBig, or answered an error.
type ONUFailure struct {
	// Instance is the ONU's row index ("<pon>.<onu>", or FiberHome's packed
	// integer).
	Instance string `json:"instance"`
	PonIndex int64  `json:"pon_index"`
	ONUID    int64  `json:"onu_id"`
	// OIDs are the instance OIDs not read.
	OIDs  []string `json:"oids"`
	Error string   `json:"error"`
}

// OLTSNMPBucketConfig is the KV bucket of what pollers learned about each
// OLT (BucketOLTSNMP): no TTL, one revision per key; a lost key only costs
// a re-read of the ONU events and a GET batch size learned again.
func OLTSNMPBucketConfig(o Options) jetstream.KeyValueConfig {
	o = o.WithDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketOLTSNMP,
		Description: "per OLT: discovered ONU instances (onus.<olt_id>) and the GET batch size that worked (get.<olt_id>)",
		History:     1,
		Storage:     o.Storage,
		Replicas:    o.Replicas,
	}
}

// MaxIndexSuffixArcs bounds OIDUpserted.IndexSuffix.
const MaxIndexSuffixArcs = 8

// ValidIndexSuffix checks an OID's index suffix: empty, or 1 to
// MaxIndexSuffixArcs dotted decimal arcs below 2^32 ("1", "1.2").
func ValidIndexSuffix(s string) error {
	if s == "" {
		return nil
	}
	arcs := strings.Split(s, ".")
	if len(arcs) > MaxIndexSuffixArcs {
		return fmt.Errorf("index_suffix %q: at most %d arcs", s, MaxIndexSuffixArcs)
	}
	for _, a := range arcs {
		if _, err := strconv.ParseUint(a, 10, 32); err != nil || a == "" || (len(a) > 1 && a[0] == '0') {
			return fmt.Errorf("index_suffix %q: want dotted decimal arcs, e.g. 1", s)
		}
	}
	return nil
}
