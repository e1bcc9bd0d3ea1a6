package alerter

import (
	"math"
	"strings"
	"time"
)

// The per-ONU state is the bulk of the alerter's memory (a million ONUs
// at full size), so it is kept compact and nearly free of pointers, which
// is what the garbage collector pays for: the ONUs live in one slice of
// structs indexed by a map whose key and value hold no pointer (the OLT id
// interned to a number), their status and down cause are interned, their
// Rx readings are float32 (NaN: none), and serial and description share
// one string. An ONU costs about 100 bytes, two heap objects (its text and
// its daily means) and four pointer words.

// onuKey is ONUKey with the OLT id interned: the onus map holds no pointer.
type onuKey struct {
	olt      uint32
	pon, onu int64
}

// onuState is all the engine keeps of one ONU.
type onuState struct {
	ONUKey // OLT is the interned id, shared by the OLT's ONUs
	// text is serial + "\x00" + description (one allocation).
	text          string
	rx, oltRx     float32 // dBm, NaN: none
	status, cause uint16  // interned (Engine.strs)
	Down          bool
	// changes are the times (unix ns) of its recent status changes
	// (online <-> down), at most MaxFlapChanges.
	changes []int64
	// Days are its daily mean Rx, oldest first, at most MaxDriftDays+1
	// (today and the baseline's days).
	Days []dayMean
}

type dayMean struct {
	Day int32   `json:"d"`
	N   int32   `json:"n"`
	Sum float64 `json:"s"`
}

func (o *onuState) serial() string {
	s, _, _ := strings.Cut(o.text, "\x00")
	return s
}

func (o *onuState) description() string {
	_, d, _ := strings.Cut(o.text, "\x00")
	return d
}

func (o *onuState) setText(serial, description string) {
	if serial == o.serial() && description == o.description() {
		return
	}
	if description == "" {
		o.text = strings.Clone(serial)
		return
	}
	o.text = serial + "\x00" + description
}

func noReading() float32 { return float32(math.NaN()) }

func hasReading(v float32) bool { return !math.IsNaN(float64(v)) }

// dBm is a float32 reading as the float64 it was read as (readings have
// a resolution of 0.01 dB at best).
func dBm(v float32) float64 { return math.Round(float64(v)*1000) / 1000 }

// onuTable holds the ONUs: a slice of states, a free list and an index.
type onuTable struct {
	index map[onuKey]uint32
	slab  []onuState
	free  []uint32
	// OLT ids interned: id -> number, number -> id (freed with the OLT's
	// last ONU).
	oltNum  map[string]uint32
	oltID   []string
	oltONUs []int32
	oltFree []uint32
}

func newONUTable() onuTable {
	return onuTable{index: map[onuKey]uint32{}, oltNum: map[string]uint32{}}
}

func (t *onuTable) len() int { return len(t.index) }

func (t *onuTable) key(k ONUKey) (onuKey, bool) {
	n, ok := t.oltNum[k.OLT]
	return onuKey{n, k.PON, k.ONU}, ok
}

// get is the ONU's state, nil if unknown. The pointer is valid until the
// next add.
func (t *onuTable) get(k ONUKey) *onuState {
	ik, ok := t.key(k)
	if !ok {
		return nil
	}
	i, ok := t.index[ik]
	if !ok {
		return nil
	}
	return &t.slab[i]
}

// add creates the ONU's state (unknown before).
func (t *onuTable) add(k ONUKey) *onuState {
	n, ok := t.oltNum[k.OLT]
	if !ok {
		if l := len(t.oltFree); l > 0 {
			n = t.oltFree[l-1]
			t.oltFree = t.oltFree[:l-1]
			t.oltID[n] = strings.Clone(k.OLT)
		} else {
			n = uint32(len(t.oltID))
			t.oltID = append(t.oltID, strings.Clone(k.OLT))
			t.oltONUs = append(t.oltONUs, 0)
		}
		t.oltNum[t.oltID[n]] = n
	}
	t.oltONUs[n]++
	var i uint32
	if l := len(t.free); l > 0 {
		i = t.free[l-1]
		t.free = t.free[:l-1]
	} else {
		i = uint32(len(t.slab))
		t.slab = append(t.slab, onuState{})
	}
	t.index[onuKey{n, k.PON, k.ONU}] = i
	t.slab[i] = onuState{ONUKey: ONUKey{t.oltID[n], k.PON, k.ONU}, rx: noReading(), oltRx: noReading()}
	return &t.slab[i]
}

func (t *onuTable) del(k ONUKey) {
	ik, ok := t.key(k)
	if !ok {
		return
	}
	i, ok := t.index[ik]
	if !ok {
		return
	}
	delete(t.index, ik)
	t.slab[i] = onuState{}
	t.free = append(t.free, i)
	if t.oltONUs[ik.olt]--; t.oltONUs[ik.olt] == 0 {
		delete(t.oltNum, t.oltID[ik.olt])
		t.oltID[ik.olt] = ""
		t.oltFree = append(t.oltFree, ik.olt)
	}
}

// each calls fn with every ONU until it returns false.
func (t *onuTable) each(fn func(o *onuState) bool) {
	for _, i := range t.index {
		if !fn(&t.slab[i]) {
			return
		}
	}
}

// strTable interns the few distinct statuses and causes; past maxStrs
// distinct values a new one is recorded as strOther.
type strTable struct {
	num map[string]uint16
	str []string
}

const (
	maxStrs  = 4096
	strOther = "OTHER"
)

func newStrTable() strTable {
	return strTable{num: map[string]uint16{"": 0}, str: []string{""}}
}

func (t *strTable) intern(s string) uint16 {
	if n, ok := t.num[s]; ok {
		return n
	}
	if len(t.str) >= maxStrs {
		return t.intern(strOther)
	}
	s = strings.Clone(s)
	n := uint16(len(t.str))
	t.str = append(t.str, s)
	t.num[s] = n
	return n
}

func (t *strTable) get(n uint16) string {
	if int(n) < len(t.str) {
		return t.str[n]
	}
	return ""
}

// onuJSON is the persisted form of an ONU (alerter_state kind onu).
type onuJSON struct {
	ONUKey
	Serial      string      `json:"serial,omitempty"`
	Description string      `json:"description,omitempty"`
	Status      string      `json:"status,omitempty"`
	Down        bool        `json:"down,omitempty"`
	Cause       string      `json:"cause,omitempty"`
	Rx          *float64    `json:"rx,omitempty"`
	OLTRx       *float64    `json:"olt_rx,omitempty"`
	Changes     []time.Time `json:"changes,omitempty"`
	Days        []dayMean   `json:"days,omitempty"`
}

func (e *Engine) onuJSON(o *onuState) onuJSON {
	j := onuJSON{ONUKey: o.ONUKey, Serial: o.serial(), Description: o.description(), Status: e.strs.get(o.status),
		Down: o.Down, Cause: e.strs.get(o.cause), Days: o.Days}
	if hasReading(o.rx) {
		v := dBm(o.rx)
		j.Rx = &v
	}
	if hasReading(o.oltRx) {
		v := dBm(o.oltRx)
		j.OLTRx = &v
	}
	for _, c := range o.changes {
		j.Changes = append(j.Changes, time.Unix(0, c).UTC())
	}
	return j
}

// restoreONU puts a persisted ONU back (nil: refused by the limits).
func (e *Engine) restoreONU(j onuJSON) *onuState {
	o := e.onus.get(j.ONUKey)
	if o == nil {
		o = e.onus.add(j.ONUKey)
	}
	o.setText(bounded(j.Serial, 64), bounded(j.Description, 256))
	o.status, o.cause, o.Down = e.strs.intern(bounded(j.Status, 32)), e.strs.intern(bounded(j.Cause, 64)), j.Down
	if j.Rx != nil {
		o.rx = float32(*j.Rx)
	}
	if j.OLTRx != nil {
		o.oltRx = float32(*j.OLTRx)
	}
	for _, c := range j.Changes {
		o.changes = append(o.changes, c.UnixNano())
	}
	if len(o.changes) > MaxFlapChanges {
		o.changes = o.changes[len(o.changes)-MaxFlapChanges:]
	}
	o.Days = j.Days
	if len(o.Days) > MaxDriftDays+1 {
		o.Days = o.Days[len(o.Days)-MaxDriftDays-1:]
	}
	return o
}
