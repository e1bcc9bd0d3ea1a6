package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
)

// errFoldTooBig stops a fold that outgrew RebuildOptions.FoldMaxRows.
var errFoldTooBig = errors.New("fold too big")

// foldBulk is the first pass over the leading sources the model's Fold
// folds: each is read up to its target, decoded in parallel and folded in
// memory in stream order, and the fold is written into the empty shadow
// in one transaction (the sources' positions and counters move only
// then). When the fold outgrows FoldMaxRows, or the database refuses what
// it wrote (projection.Permanent: a message the live consumer
// dead-lettered is in it), nothing is written and those sources go batch
// by batch from their start, as without a Fold.
func (rb *rebuild) foldBulk(ctx context.Context, targets []uint64, progress func(uint64)) error {
	f := rb.model.Fold()
	n := 0
	for n < len(rb.model.Sources) && f.Folds(n) {
		n++
	}
	if n == 0 {
		return nil
	}
	counts := make([]projection.BatchResult, n)
	last := make([]uint64, n)
	for i := 0; i < n; i++ {
		err := rb.foldSource(ctx, f, i, targets[i], &counts[i], &last[i], progress)
		if errors.Is(err, errFoldTooBig) {
			rb.opts.Log.Info().Str("read_model", rb.model.Name).Int("rows", f.Rows()).Msg("rebuild fold too big: batch by batch instead")
			return nil
		}
		if err != nil {
			return err
		}
	}
	writeStart := time.Now()
	err := rb.writeFold(ctx, f)
	rb.opts.Log.Debug().Str("read_model", rb.model.Name).Dur("took", time.Since(writeStart)).Msg("rebuild fold written")
	if err != nil {
		if !projection.Permanent(err) {
			return fmt.Errorf("rebuild %s: write fold: %w", rb.model.Name, err)
		}
		rb.opts.Log.Info().Err(err).Str("read_model", rb.model.Name).Msg("rebuild fold refused: batch by batch instead")
		// The writes that committed go: the batch form starts from an
		// empty shadow.
		var names []string
		for _, t := range rb.allTables() {
			names = append(names, rb.shadow+`.`+pgx.Identifier{t}.Sanitize())
		}
		if _, err := rb.db.Exec(ctx, `TRUNCATE `+strings.Join(names, ", ")); err != nil {
			return fmt.Errorf("rebuild %s: empty the shadow: %w", rb.model.Name, err)
		}
		return nil
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	for i := 0; i < n; i++ {
		rb.src[i].Applied += uint64(counts[i].Applied)
		rb.src[i].Ignored += uint64(counts[i].Ignored)
		rb.src[i].Malformed += uint64(counts[i].Malformed)
		if last[i] > 0 {
			rb.pos[i] = last[i]
		}
	}
	return nil
}

// writeFold runs the fold's writes at once, each in its own transaction.
// Its error is the first that is not Permanent, else the first.
func (rb *rebuild) writeFold(ctx context.Context, f projection.Folder) error {
	writes := f.Writes()
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Go(func() {
			start := time.Now()
			defer func() {
				rb.opts.Log.Debug().Str("read_model", rb.model.Name).Int("write", i).Dur("took", time.Since(start)).Msg("rebuild fold write")
			}()
			errs[i] = pgx.BeginFunc(ctx, rb.db, func(tx pgx.Tx) error {
				// A throwaway shadow: no need to wait for the WAL flush.
				if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit TO off`); err != nil {
					return fmt.Errorf("asynchronous commit: %w", err)
				}
				if err := rb.useShadow(ctx, tx); err != nil {
					return err
				}
				return w(ctx, tx)
			})
		})
	}
	wg.Wait()
	var first error
	for _, err := range errs {
		if err != nil && !projection.Permanent(err) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// foldRun is one run of messages on its way through the fold's pipeline.
type foldRun struct {
	msgs    []jsrouter.Msg
	done    chan struct{} // closed when decoded
	decoded any
	res     projection.BatchResult
	err     error
}

// foldSource reads source i up to target in runs of rb.batch(i) messages,
// decodes the runs on opts.Workers goroutines and folds them in stream
// order on this one: decoding, the costly part, uses every core while the
// fold itself stays sequential.
func (rb *rebuild) foldSource(ctx context.Context, f projection.Folder, i int, target uint64, counts *projection.BatchResult, last *uint64, progress func(uint64)) error {
	s := rb.model.Sources[i]
	return rb.pipeline(ctx, i, target, last, func(msgs []jsrouter.Msg) (any, projection.BatchResult, error) {
		return f.Decode(i, msgs)
	}, func(_ context.Context, r *foldRun) error {
		if err := f.Fold(i, r.decoded); err != nil {
			return fmt.Errorf("rebuild %s from %s seq %d-%d: %w", rb.model.Name, s.Stream, r.msgs[0].Seq, r.msgs[len(r.msgs)-1].Seq, err)
		}
		counts.Applied += r.res.Applied
		counts.Ignored += r.res.Ignored
		counts.Malformed += r.res.Malformed
		progress(uint64(len(r.msgs)))
		if f.Rows() > rb.opts.FoldMaxRows {
			return errFoldTooBig
		}
		return nil
	})
}

// pipeline reads source i up to target in runs of rb.batch(i) messages
// (last: the last sequence read), decodes the runs on opts.Workers
// goroutines, ahead, and hands them to apply in stream order, one at a
// time. A few runs are in flight at most.
func (rb *rebuild) pipeline(ctx context.Context, i int, target uint64, last *uint64,
	decode func([]jsrouter.Msg) (any, projection.BatchResult, error), apply func(context.Context, *foldRun) error) error {
	g, gctx := errgroup.WithContext(ctx)
	work := make(chan *foldRun, rb.opts.Workers)
	order := make(chan *foldRun, rb.opts.Workers)
	for w := 0; w < rb.opts.Workers; w++ {
		g.Go(func() error {
			for r := range work {
				r.decoded, r.res, r.err = decode(r.msgs)
				close(r.done)
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(work)
		defer close(order)
		batch := rb.batch(i)
		cur := make([]jsrouter.Msg, 0, batch)
		send := func() error {
			r := &foldRun{msgs: cur, done: make(chan struct{})}
			cur = make([]jsrouter.Msg, 0, batch)
			for _, ch := range []chan *foldRun{order, work} {
				select {
				case ch <- r:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		}
		err := rb.read(gctx, i, target, func(m jsrouter.Msg) error {
			cur = append(cur, m)
			*last = m.Seq
			if len(cur) >= batch {
				return send()
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(cur) > 0 {
			return send()
		}
		return nil
	})
	g.Go(func() error {
		s := rb.model.Sources[i]
		for r := range order {
			select {
			case <-r.done:
			case <-gctx.Done():
				return gctx.Err()
			}
			if r.err != nil {
				return fmt.Errorf("rebuild %s from %s seq %d-%d: %w", rb.model.Name, s.Stream, r.msgs[0].Seq, r.msgs[len(r.msgs)-1].Seq, r.err)
			}
			if err := apply(gctx, r); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}
