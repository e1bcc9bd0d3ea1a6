package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/streams"
)

// runKeys serves `facho keys rotate`: every OLT's community (and, with
// DATABASE_URL, every webhook's secret) sealed with an old key is sealed
// again with FACHO_SECRET_KEY, with no downtime:
//
//  1. restart the services (rolling) with FACHO_SECRET_KEY=<new> and
//     FACHO_SECRET_KEY_OLD=<old>: they seal with the new key and open both;
//  2. run `facho keys rotate` with the same two variables: each OLT gets a
//     new olt.upserted event with its community re-sealed (the rest of the
//     event unchanged; published only if the OLT did not change meanwhile);
//  3. once the NodeDue already queued with the old seal have run (one
//     interval), drop FACHO_SECRET_KEY_OLD.
func runKeys(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "rotate" {
		return errors.New("usage: facho keys rotate [--nats URL --nats-nkey-seed-file FILE (identity admin)] [--dry-run] (FACHO_SECRET_KEY=new FACHO_SECRET_KEY_OLD=old)")
	}
	fs := flag.NewFlagSet("keys rotate", flag.ContinueOnError)
	fs.SetOutput(stdout)
	nf := addNATSFlags(fs, getenv)
	_ = fs.Set("identity", natsauth.Admin)
	dryRun := fs.Bool("dry-run", false, "count what would be re-sealed, change nothing")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	box, err := secret.BoxFromEnv(getenv)
	if err != nil {
		return err
	}
	nc, js, err := nf.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	res, err := rotateCommunities(ctx, js, box, time.Now, *dryRun)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "OLT communities: %d re-sealed, %d already under the current key, %d skipped (deleted or changed meanwhile)\n",
		res.Resealed, res.Current, res.Skipped)
	if url := getenv("DATABASE_URL"); url != "" {
		db, err := pgxpool.New(ctx, url)
		if err != nil {
			return fmt.Errorf("database: %w", err)
		}
		defer db.Close()
		n, err := rotateWebhookSecrets(ctx, db, box, *dryRun)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "webhook secrets: %d re-sealed\n", n)
	}
	if *dryRun {
		fmt.Fprintln(stdout, "dry run: nothing changed")
	}
	return nil
}

type rotation struct{ Resealed, Current, Skipped int }

// rotateCommunities re-seals with box's current key the community of every
// OLT whose latest configuration event is an olt.upserted sealed with an
// older key. The publish expects the subject's last sequence: an OLT
// changed meanwhile (its new event is sealed with the current key by the
// API) is skipped, never overwritten.
func rotateCommunities(ctx context.Context, js jetstream.JetStream, box *secret.Box, now func() time.Time, dryRun bool) (rotation, error) {
	var res rotation
	stream, err := js.Stream(ctx, streams.StreamConfig)
	if err != nil {
		return res, fmt.Errorf("open %s: %w", streams.StreamConfig, err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(streams.SubjectOLT("*")))
	if err != nil {
		return res, fmt.Errorf("list OLT subjects: %w", err)
	}
	subjects := make([]string, 0, len(info.State.Subjects))
	for s := range info.State.Subjects {
		subjects = append(subjects, s)
	}
	sort.Strings(subjects)
	for _, subject := range subjects {
		msg, err := stream.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("read %s: %w", subject, err)
		}
		env, err := streams.DecodeEnvelope(msg.Data)
		if err != nil || env.Type != streams.TypeOLTUpserted {
			res.Skipped++ // deleted, or not ours to read
			continue
		}
		var olt streams.OLTUpserted
		if err := streams.DecodeData(env, &olt); err != nil {
			res.Skipped++
			continue
		}
		if box.SealedWithCurrent(olt.CommunityEnc) {
			res.Current++
			continue
		}
		resealed, err := box.Reseal(olt.CommunityEnc)
		if err != nil {
			// Never the community: only the OLT id.
			return res, fmt.Errorf("OLT %s: its community opens with none of the keys (FACHO_SECRET_KEY, FACHO_SECRET_KEY_OLD)", olt.ID)
		}
		if dryRun {
			res.Resealed++
			continue
		}
		olt.CommunityEnc = resealed
		id := uuid.NewString()
		b, err := streams.EncodeWithID(id, "facho-keys", now(), olt)
		if err != nil {
			return res, err
		}
		if _, err := js.Publish(ctx, subject, b, jetstream.WithMsgID(id), jetstream.WithExpectLastSequencePerSubject(msg.Sequence)); err != nil {
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
				apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
				res.Skipped++
				continue
			}
			return res, fmt.Errorf("publish OLT %s: %w", olt.ID, err)
		}
		res.Resealed++
	}
	return res, nil
}

// rotateWebhookSecrets re-seals the webhooks' secrets (table webhooks of
// the API), each row only if unchanged meanwhile.
func rotateWebhookSecrets(ctx context.Context, db *pgxpool.Pool, box *secret.Box, dryRun bool) (int, error) {
	rows, err := db.Query(ctx, `SELECT id, secret_enc FROM webhooks`)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return 0, nil
		}
		return 0, fmt.Errorf("read webhooks: %w", err)
	}
	type hook struct{ id, enc string }
	var hooks []hook
	for rows.Next() {
		var h hook
		if err := rows.Scan(&h.id, &h.enc); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read webhooks: %w", err)
		}
		hooks = append(hooks, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read webhooks: %w", err)
	}
	n := 0
	for _, h := range hooks {
		if box.SealedWithCurrent(h.enc) {
			continue
		}
		resealed, err := box.Reseal(h.enc)
		if err != nil {
			return n, fmt.Errorf("webhook %s: its secret opens with none of the keys", h.id)
		}
		if dryRun {
			n++
			continue
		}
		tag, err := db.Exec(ctx, `UPDATE webhooks SET secret_enc = $3 WHERE id = $1 AND secret_enc = $2`, h.id, h.enc, resealed)
		if err != nil {
			return n, fmt.Errorf("webhook %s: %w", h.id, err)
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}
