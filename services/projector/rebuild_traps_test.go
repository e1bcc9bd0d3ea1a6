package projector

import (
	"fmt"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// TestRebuildONUDataWithTrapsEqualsLive: the live projector applies walks
// of 3 OLTs, then ONU status traps between them (dying gasp, LOS, offline,
// online; one older than the ONU's last poll, one of an ONU no poll
// found), walks that read the ONUs again, and traps after the last walk;
// a rebuild of onu_data (its fold) equals what the live consumers left: the trap rows of onu_history (source trap) and
// the statuses and down times the traps set are rebuilt, not lost.
func TestRebuildONUDataWithTrapsEqualsLive(t *testing.T) {
	r := newRig(t)
	stop := r.start()
	g := &workGen{t: t, js: r.js, base: time.Now().UTC().Truncate(time.Second).Add(-time.Hour)}
	const olts = 3
	kinds := []string{streams.TrapKindDyingGasp, streams.TrapKindLOS, streams.TrapKindOffline, streams.TrapKindOnline}
	n := 0
	traps := func(round int, at time.Time) uint64 {
		var last uint64
		for o := 0; o < olts; o++ {
			olt := fmt.Sprintf("olt-%d", o)
			for i := int64(1); i <= 8; i++ {
				n++
				pon, onu := int64(pon0), i
				if i == 8 {
					onu = 99 // no poll found it
				}
				id := fmt.Sprintf("trap-%d-%s-%d", round, olt, i)
				when := at.Add(time.Duration(i) * time.Second)
				if i == 7 {
					when = at.Add(-10 * time.Minute) // older than the ONU's last poll
				}
				raw, err := streams.EncodeWithID(id, "test", when, streams.TrapReceived{OLTID: olt, Source: "192.0.2.1:40000", Version: streams.TrapV2c,
					TrapOID: "1.3.6.1.4.1.2011.6.128.1.1.2.0.22", Receiver: "trapd-1", ReceivedAt: when})
				if err != nil {
					t.Fatal(err)
				}
				r.publishRaw(streams.SubjectTrap(olt), raw)
				dec, err := streams.EncodeWithID(id+":decoded", "test", when, streams.TrapDecoded{OLTID: olt, TrapID: id, Profile: "huawei-ma5800",
					Rule: "r", Kind: kinds[(int(i)+round+o)%len(kinds)], PonIndex: &pon, ONUID: &onu, At: when})
				if err != nil {
					t.Fatal(err)
				}
				last = r.publishRaw(streams.SubjectTrap(olt), dec)
			}
		}
		return last
	}
	walks := func(w0, w1 int) {
		g.onuWalks(w0, w1, olts)
		g.wait()
		r.waitLive(streams.StreamVarbinds, streams.ConsumerProjectorVarbinds, 2*time.Minute)
	}
	walks(0, 4)
	r.waitCheckpoint(streams.ConsumerProjectorTraps, traps(0, g.base.Add(3*time.Minute+10*time.Second)))
	walks(4, 6)
	r.waitCheckpoint(streams.ConsumerProjectorTraps, traps(1, g.base.Add(5*time.Minute+10*time.Second)))
	walks(6, 7)
	r.waitCheckpoint(streams.ConsumerProjectorTraps, traps(2, g.base.Add(6*time.Minute+10*time.Second)))
	stop()
	t.Logf("%d traps", n)
	// The traps did something live, and some of it a later poll replaced.
	for q, min := range map[string]int64{
		`SELECT count(*) FROM onu_history WHERE source = 'trap'`:                                                             olts * 6,
		`SELECT count(*) FROM onu_data WHERE status IN ('DYING_GASP', 'LOS')`:                                                olts,
		`SELECT count(*) FROM onu_history WHERE source = 'poll' AND field = 'status' AND old_value IN ('DYING_GASP', 'LOS')`: 1,
	} {
		if got := r.count(q); got < min {
			t.Errorf("%s = %d, want at least %d", q, got, min)
		}
	}
	r.liveVsRebuild(ReadModelONUData)
}
