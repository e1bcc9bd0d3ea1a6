package main

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/streams"
)

func TestRotateCommunities(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx := context.Background()
	oldText, _ := secret.NewKey()
	newText, _ := secret.NewKey()
	keys := map[string]string{secret.EnvKey: oldText}
	oldBox, _ := secret.BoxFromEnv(func(k string) string { return keys[k] })
	keys = map[string]string{secret.EnvKey: newText, secret.EnvOldKeys: oldText}
	box, err := secret.BoxFromEnv(func(k string) string { return keys[k] })
	if err != nil {
		t.Fatal(err)
	}
	newOnly, _ := secret.BoxFromEnv(func(k string) string { return map[string]string{secret.EnvKey: newText}[k] })
	at := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	publish := func(subject string, ev streams.Event) {
		b, err := streams.Encode("test", at, ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.JS.Publish(ctx, subject, b); err != nil {
			t.Fatal(err)
		}
	}
	sealedOld, _ := oldBox.Seal("community-a")
	sealedNew, _ := box.Seal("community-b")
	sealedGone, _ := oldBox.Seal("community-c")
	a := streams.OLTUpserted{ID: "a", Name: "A", IP: "10.0.0.1", Port: 161, BrandID: "huawei", CommunityEnc: sealedOld, Enabled: true, Description: "first"}
	publish(streams.SubjectOLT("a"), a)
	publish(streams.SubjectOLT("b"), streams.OLTUpserted{ID: "b", Name: "B", IP: "10.0.0.2", Port: 161, BrandID: "huawei", CommunityEnc: sealedNew})
	publish(streams.SubjectOLT("c"), streams.OLTUpserted{ID: "c", Name: "C", IP: "10.0.0.3", Port: 161, BrandID: "huawei", CommunityEnc: sealedGone})
	publish(streams.SubjectOLT("c"), streams.OLTDeleted{ID: "c"})

	dry, err := rotateCommunities(ctx, env.JS, box, time.Now, true)
	if err != nil || dry != (rotation{Resealed: 1, Current: 1, Skipped: 1}) {
		t.Fatalf("dry run = %+v %v", dry, err)
	}
	res, err := rotateCommunities(ctx, env.JS, box, time.Now, false)
	if err != nil || res != (rotation{Resealed: 1, Current: 1, Skipped: 1}) {
		t.Fatalf("rotate = %+v %v", res, err)
	}
	stream, _ := env.JS.Stream(ctx, streams.StreamConfig)
	msg, err := stream.GetLastMsgForSubject(ctx, streams.SubjectOLT("a"))
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := streams.DecodeEnvelope(msg.Data)
	var got streams.OLTUpserted
	if err := streams.DecodeData(ev, &got); err != nil {
		t.Fatal(err)
	}
	if pt, err := newOnly.Open(got.CommunityEnc); err != nil || pt != "community-a" {
		t.Fatalf("re-sealed community opens with the new key alone: %q %v", pt, err)
	}
	got.CommunityEnc = a.CommunityEnc
	if got != a {
		t.Errorf("the rest of the OLT changed: %+v", got)
	}
	// Idempotent: a second run has nothing left to do.
	if res, err := rotateCommunities(ctx, env.JS, box, time.Now, false); err != nil || res.Resealed != 0 || res.Current != 2 {
		t.Errorf("second rotate = %+v %v", res, err)
	}
	// A community no key opens stops the run and names the OLT only.
	otherText, _ := secret.NewKey()
	other, _ := secret.BoxFromEnv(func(k string) string { return map[string]string{secret.EnvKey: otherText}[k] })
	if _, err := rotateCommunities(ctx, env.JS, other, time.Now, false); err == nil {
		t.Error("rotate with an unrelated key succeeded")
	}
}
