package auditor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/streams"
)

// An OLT event that breaks the API's field rules, published with the
// api's own key, is dead-lettered by the auditor's configuration consumer
// with the reason, and interrupts nothing; a valid one still does.
func TestBrokenOLTEventIsRefused(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	_, api := env.Connect(t, natsauth.API)
	_, own := env.Connect(t, natsauth.Auditor)
	db := pgtest.New(t)
	ctx := context.Background()
	now := time.Now().UTC()
	publish(t, api, streams.SubjectOLT("olt-x"), now, streams.OLTUpserted{ID: "olt-x", Name: strings.Repeat("n", 500_000), IP: "10.0.0.1", Port: 161, BrandID: "huawei"})
	publish(t, api, streams.SubjectOLT("olt-y"), now, streams.OLTUpserted{ID: "olt-y", Name: "y", IP: "10.0.0.2", Port: -1, BrandID: "huawei"})
	publish(t, api, streams.SubjectOLT("olt-z"), now, streams.OLTUpserted{ID: "olt-z", Name: "z", IP: "10.0.0.3", Port: 161, BrandID: "huawei"})
	stop := startAuditor(t, own, db, auditor.Config{LogFile: "-"}, nil)
	defer stop()
	waitFor(t, "the auditor's config consumer past the three events", func() bool {
		seq, err := projection.Checkpoint(ctx, db, streams.ConsumerAuditorConfig)
		return err == nil && seq >= 3
	})
	s, err := env.JS.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	waitFor(t, "two dead letters", func() bool {
		reasons = reasons[:0]
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			_, dl, err := streams.Decode[streams.DeadLetter](m.Data)
			if err != nil {
				t.Fatal(err)
			}
			if dl.Consumer == streams.ConsumerAuditorConfig {
				reasons = append(reasons, dl.Reason)
			}
		}
		return len(reasons) == 2
	})
	joined := strings.Join(reasons, "\n")
	for _, want := range []string{`olt.upserted "olt-x" refused: name is longer than 200 characters`, `olt.upserted "olt-y" refused: port must be 1..65535`} {
		if !strings.Contains(joined, want) {
			t.Errorf("dead letters %q lack %q", reasons, want)
		}
	}
	var olts []string
	rows, err := db.Query(ctx, `SELECT DISTINCT olt_id FROM quota_interruptions ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		olts = append(olts, o)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(olts, ",") != "olt-z" {
		t.Errorf("interrupted OLTs %v, want only olt-z", olts)
	}
}
