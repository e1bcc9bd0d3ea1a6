package alerter

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/facho-olt/facho/streams"
)

// SeedState evaluates evs with a fresh engine (default rules and limits)
// and persists the resulting state as the alerter's own groups do
// (Engine.persist, one transaction per group of group events), without the
// stream: a benchmark's starting fleet of a million ONUs, written in
// seconds instead of consumed event by event. The alerter started
// afterwards loads it like any persisted state. It returns the
// transitions the seed made (none for ONUs first seen online).
func SeedState(ctx context.Context, db *pgxpool.Pool, evs func(yield func(streams.ONUChanged) bool), group int) (int, error) {
	cfg := Config{}.WithDefaults()
	e := NewEngine(cfg.Rules, cfg.Limits)
	transitions, n := 0, 0
	flush := func() error {
		dirty, out := e.Take()
		transitions += len(out)
		return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			return e.persist(ctx, tx, dirty, out, cfg.Source, false)
		})
	}
	var err error
	evs(func(ev streams.ONUChanged) bool {
		e.OnONU(ev)
		if n++; n%group == 0 {
			err = flush()
		}
		return err == nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return transitions, fmt.Errorf("seed alerter state: %w", err)
	}
	if e.Dropped > 0 {
		return transitions, fmt.Errorf("seed alerter state: %d events dropped by the limits", e.Dropped)
	}
	return transitions, nil
}
