package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// RebuildOptions tunes a rebuild.
type RebuildOptions struct {
	// From is where each source stream is replayed from (zero: its first
	// message). A sequence applies to every source stream: with several
	// sources a time is the usual choice.
	From Position
	// DryRun compares and reports but leaves the live tables alone.
	DryRun bool
	// Partial allows the swap when a source stream no longer holds its
	// whole history (its first sequence is above 1: retention dropped the
	// oldest messages) or From skips some: the rebuild then lacks what
	// those messages did (an ONU not polled since is missing), and the
	// swap would delete it from the live table. Without Partial such a
	// rebuild only reports.
	Partial bool
	// Batch is how many messages one shadow transaction applies (default 1000).
	Batch int
	// Workers is how many shadow transactions run at once for a source
	// with a Partition (default 4; 1: one at a time).
	Workers int
	// Progress, when set, is told how many messages were applied of how
	// many the bulk phase has to apply.
	Progress func(done, total uint64)
	// PerMessage ignores the sources' ApplyBatch: every message runs its
	// own Change.Apply, the live projection's statements (the reference
	// the set-based path is tested against; slower).
	PerMessage bool
	// CatchUpRounds bounds the catch-up passes before the swap (default 3).
	CatchUpRounds int
	// FoldMaxRows bounds the rows a model's Fold may hold in memory
	// (default 2,000,000): past it the first pass gives the fold up and
	// applies those sources batch by batch instead.
	FoldMaxRows int
	Log         zerolog.Logger
}

// Report says what a rebuild found and did.
type Report struct {
	Model     string
	Sources   []SourceReport
	Tables    []TableReport
	Swapped   bool
	Identical bool
	// Incomplete names the sources whose history the rebuild lacks (see
	// RebuildOptions.Partial); the swap needs Partial then.
	Incomplete []string
	Messages   uint64 // messages replayed
	Duration   time.Duration
	// Phases is where Duration went.
	Phases Phases
}

// Phases times a rebuild's steps: Bulk the first pass over the streams,
// CatchUp the later passes, then, in the swap's transaction, SwapApply
// (what the live consumers applied meanwhile), Compare (the tables, row
// for row) and Copy (the shadow's rows into the live tables).
type Phases struct {
	Bulk, CatchUp, SwapApply, Compare, Copy time.Duration
}

func (p Phases) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("bulk %s, catch-up %s, swap: apply %s, compare %s, copy %s", r(p.Bulk), r(p.CatchUp), r(p.SwapApply), r(p.Compare), r(p.Copy))
}

// SourceReport is one source stream's part.
type SourceReport struct {
	Stream, Consumer string
	// LiveCheckpoint is the live consumer's checkpoint at the swap;
	// RebuiltTo the last sequence the shadow applied (equal unless the
	// live consumer was behind: then the swap moves it forward).
	LiveCheckpoint, RebuiltTo            uint64
	Applied, Ignored, Malformed, Refused uint64
}

// TableReport compares one table.
type TableReport struct {
	Name                 string
	LiveRows, ShadowRows int64
	Differing            int64
	Examples             []RowDiff // at most MaxExamples
}

// RowDiff is one differing row, by key.
type RowDiff struct {
	Key   string // key columns, k=v separated by spaces
	Where string // "live only", "rebuild only" or "differs"
}

// MaxExamples bounds the differing keys a TableReport lists.
const MaxExamples = 20

func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rebuild %s: %d messages in %s", r.Model, r.Messages, r.Duration.Round(time.Millisecond))
	if r.Duration > 0 {
		fmt.Fprintf(&b, " (%.0f msg/s)", float64(r.Messages)/r.Duration.Seconds())
	}
	b.WriteString("\n  " + r.Phases.String() + "\n")
	for _, s := range r.Sources {
		fmt.Fprintf(&b, "  %s (consumer %s): rebuilt to seq %d, live checkpoint %d; applied %d, ignored %d, malformed %d, refused %d\n",
			s.Stream, s.Consumer, s.RebuiltTo, s.LiveCheckpoint, s.Applied, s.Ignored, s.Malformed, s.Refused)
	}
	for _, t := range r.Tables {
		fmt.Fprintf(&b, "  %s: live %d rows, rebuilt %d rows, %d differing\n", t.Name, t.LiveRows, t.ShadowRows, t.Differing)
		for _, e := range t.Examples {
			fmt.Fprintf(&b, "    %s: %s\n", e.Where, e.Key)
		}
	}
	for _, why := range r.Incomplete {
		fmt.Fprintf(&b, "  incomplete: %s\n", why)
	}
	switch {
	case r.Identical:
		b.WriteString("  identical: live tables left as they are\n")
	case r.Swapped:
		b.WriteString("  swapped: the live tables now hold the rebuild\n")
	case len(r.Incomplete) > 0:
		b.WriteString("  not swapped: the streams lack part of the history (--partial swaps anyway)\n")
	default:
		b.WriteString("  dry run: live tables left as they are\n")
	}
	return b.String()
}

// Rebuild replays model's streams into a shadow schema (rebuild_<name>,
// the live tables' structure), compares it with the live tables and swaps
// it in, while the live projections run:
//
//  1. bulk: each source stream is replayed from opts.From up to the live
//     consumer's checkpoint (the stream's end when the consumer never ran)
//     in transactions of opts.Batch messages (opts.Workers at once for a
//     source with a Partition), with the decoders the live consumers use
//     (search_path puts the shadow first; Committed hooks are not run:
//     nothing is published or written to a file);
//  2. catch-up: a few passes apply what the live consumers applied
//     meanwhile;
//  3. swap, in one transaction: the live checkpoint rows are locked FOR
//     UPDATE, which pauses the live consumers (projection.Apply takes the
//     same lock first); the shadow applies up to the locked checkpoints;
//     the tables are compared; then the live rows that differ are
//     replaced by the shadow's (deleted, inserted: a row differing only in
//     Ignore columns stays) and each checkpoint is set to the last
//     sequence the shadow applied, so rows and checkpoint move together.
//     The live consumers resume after the commit where the rebuild ended.
//
// Identical tables are left alone; DryRun only reports, and so does a
// rebuild whose streams lack part of the history (Report.Incomplete)
// unless Partial. One rebuild of a model runs at a time (an advisory
// lock); a second one fails at once. The shadow schema
// is dropped at the end (and at the start of a next rebuild if a crash
// left it).
func Rebuild(ctx context.Context, js jetstream.JetStream, db *pgxpool.Pool, model projection.ReadModel, opts RebuildOptions) (Report, error) {
	start := time.Now()
	rep := Report{Model: model.Name}
	if err := model.Validate(); err != nil {
		return rep, err
	}
	batchSet := opts.Batch > 0
	if !batchSet {
		opts.Batch = 1000
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.CatchUpRounds <= 0 {
		opts.CatchUpRounds = 3
	}
	if opts.FoldMaxRows <= 0 {
		opts.FoldMaxRows = 2_000_000
	}
	// One rebuild of a model at a time: they would share the shadow.
	lockConn, err := db.Acquire(ctx)
	if err != nil {
		return rep, fmt.Errorf("rebuild %s: %w", model.Name, err)
	}
	defer lockConn.Release()
	lockKey := "facho.rebuild." + model.Name
	var locked bool
	if err := lockConn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, lockKey).Scan(&locked); err != nil {
		return rep, fmt.Errorf("rebuild %s: lock: %w", model.Name, err)
	}
	if !locked {
		return rep, fmt.Errorf("rebuild %s: another rebuild of it is running", model.Name)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = lockConn.Exec(uctx, `SELECT pg_advisory_unlock(hashtext($1))`, lockKey)
	}()
	rb := &rebuild{js: js, db: db, model: model, opts: opts, batchSet: batchSet, shadow: pgx.Identifier{"rebuild_" + model.Name}.Sanitize()}
	if err := db.QueryRow(ctx, `SELECT current_schema()`).Scan(&rb.live); err != nil {
		return rep, fmt.Errorf("rebuild %s: live schema: %w", model.Name, err)
	}
	rb.live = pgx.Identifier{rb.live}.Sanitize()
	if err := rb.createShadow(ctx); err != nil {
		return rep, err
	}
	defer rb.dropShadow()
	rb.src = make([]SourceReport, len(model.Sources))
	rb.pos = make([]uint64, len(model.Sources))
	for i, s := range model.Sources {
		rb.src[i] = SourceReport{Stream: s.Stream, Consumer: s.Consumer}
	}

	for _, s := range model.Sources {
		first, _, err := End(ctx, js, Range{Stream: s.Stream})
		if err != nil {
			return rep, err
		}
		switch {
		case first > 1 && !withinWindow(ctx, js, s.Stream, first, model.Window):
			rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("%s starts at seq %d: 1..%d expired", s.Stream, first, first-1))
		case !opts.From.IsZero():
			rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("%s replayed from %s, not its start", s.Stream, opts.From))
		}
	}
	if len(rep.Incomplete) > 0 && !opts.Partial {
		rb.opts.DryRun = true
	}

	// 1. bulk, 2. catch-up: up to the live checkpoints as they move.
	targets, total, err := rb.targets(ctx)
	if err != nil {
		return rep, err
	}
	for round := 0; round <= opts.CatchUpRounds; round++ {
		roundStart := time.Now()
		if round > 0 {
			if targets, total, err = rb.targets(ctx); err != nil {
				return rep, err
			}
			if total == 0 {
				break
			}
			if err := rb.indexShadow(ctx, db); err != nil {
				return rep, err
			}
		}
		var done uint64
		if round == 0 && model.Fold != nil && !opts.PerMessage {
			err := rb.foldBulk(ctx, targets, func(n uint64) {
				done += n
				if opts.Progress != nil {
					opts.Progress(done, total)
				}
			})
			if err != nil {
				return rep, err
			}
		}
		for i := range model.Sources {
			if targets[i] <= rb.pos[i] && rb.pos[i] > 0 {
				continue
			}
			srcStart := time.Now()
			err := applyRange(ctx, db, rb, i, targets[i], func(n uint64) {
				done += n
				if opts.Progress != nil && round == 0 {
					opts.Progress(done, total)
				}
			})
			if err != nil {
				return rep, err
			}
			opts.Log.Debug().Str("read_model", model.Name).Int("round", round).Str("stream", model.Sources[i].Stream).
				Dur("took", time.Since(srcStart)).Msg("rebuild pass of a source")
		}
		opts.Log.Debug().Str("read_model", model.Name).Int("round", round).Uint64("messages", done).Msg("rebuild pass")
		if round == 0 {
			rep.Phases.Bulk = time.Since(roundStart)
		} else {
			rep.Phases.CatchUp += time.Since(roundStart)
		}
	}

	// 3. swap.
	if err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return rb.swap(ctx, tx, &rep) }); err != nil {
		if errors.Is(err, errDryRun) {
			err = nil
		}
		if err != nil {
			return rep, fmt.Errorf("rebuild %s: swap: %w", model.Name, err)
		}
	}
	rep.Sources = rb.src
	for _, s := range rb.src {
		rep.Messages += s.Applied + s.Ignored + s.Malformed + s.Refused
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

var errDryRun = errors.New("dry run")

// withinWindow reports whether the stream's first message (seq first) is
// older than the model's window: what expired before it is older still,
// and the model prunes it anyway.
func withinWindow(ctx context.Context, js jetstream.JetStream, stream string, first uint64, window time.Duration) bool {
	if window <= 0 {
		return false
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return false
	}
	m, err := s.GetMsg(ctx, first)
	if err != nil {
		return false
	}
	return m.Time.Before(time.Now().Add(-window))
}

type rebuild struct {
	js           jetstream.JetStream
	db           *pgxpool.Pool
	model        projection.ReadModel
	opts         RebuildOptions
	batchSet     bool       // opts.Batch is the caller's, not the default
	live, shadow string     // sanitized schema names
	mu           sync.Mutex // guards src's counters (parallel workers)
	src          []SourceReport
	pos          []uint64 // last sequence applied to the shadow, per source
	indexed      bool     // the ShadowNoIndex tables have their key's index
}

// indexShadow gives each ShadowNoIndex table of the shadow an index on its
// key, once, before anything is applied after the bulk pass: the
// messages applied one at a time then (the catch-up, the swap's) may look
// rows up by it (a trap looks for the ONU's last trap in onu_history),
// which would otherwise scan the whole table each. Built after the bulk
// pass, it costs one sort instead of an entry per row copied in.
func (rb *rebuild) indexShadow(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}) error {
	if rb.indexed {
		return nil
	}
	for _, t := range rb.model.Tables {
		if !t.ShadowNoIndex {
			continue
		}
		if _, err := db.Exec(ctx, `CREATE INDEX ON `+rb.shadow+`.`+pgx.Identifier{t.Name}.Sanitize()+` (`+quoteAll(t.Key)+`)`); err != nil {
			return fmt.Errorf("index the shadow of %s: %w", t.Name, err)
		}
	}
	rb.indexed = true
	return nil
}

// batch is how many messages source i applies per transaction: the
// caller's opts.Batch, else the source's own Batch, else the default.
func (rb *rebuild) batch(i int) int {
	if b := rb.model.Sources[i].Batch; b > 0 && !rb.batchSet {
		return b
	}
	return rb.opts.Batch
}

func (rb *rebuild) allTables() []string {
	var out []string
	for _, t := range rb.model.Tables {
		out = append(out, t.Name)
	}
	return append(out, rb.model.Scratch...)
}

func (rb *rebuild) createShadow(ctx context.Context) error {
	return pgx.BeginFunc(ctx, rb.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DROP SCHEMA IF EXISTS `+rb.shadow+` CASCADE`); err != nil {
			return fmt.Errorf("drop old shadow %s: %w", rb.shadow, err)
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA `+rb.shadow); err != nil {
			return fmt.Errorf("create shadow %s: %w", rb.shadow, err)
		}
		for _, t := range rb.allTables() {
			name := pgx.Identifier{t}.Sanitize()
			if _, err := tx.Exec(ctx, `CREATE UNLOGGED TABLE `+rb.shadow+`.`+name+` (LIKE `+rb.live+`.`+name+` INCLUDING ALL)`); err != nil {
				return fmt.Errorf("shadow of %s: %w", t, err)
			}
		}
		if err := rb.shadowSequences(ctx, tx); err != nil {
			return err
		}
		for _, t := range rb.model.Tables {
			if t.ShadowNoIndex {
				name := pgx.Identifier{t.Name}.Sanitize()
				if err := dropEach(ctx, tx, `ALTER TABLE `+rb.shadow+`.`+name+` DROP CONSTRAINT `, `SELECT conname FROM pg_constraint
					WHERE conrelid = ($1 || '.' || $2)::regclass AND contype IN ('p', 'u', 'x')`, rb.shadow, name); err != nil {
					return fmt.Errorf("constraints of shadow %s: %w", t.Name, err)
				}
				if err := dropEach(ctx, tx, `DROP INDEX `+rb.shadow+`.`, `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
					WHERE i.indrelid = ($1 || '.' || $2)::regclass`, rb.shadow, name); err != nil {
					return fmt.Errorf("indexes of shadow %s: %w", t.Name, err)
				}
			}
			if !t.ShadowUniqueOnly {
				continue
			}
			name := pgx.Identifier{t.Name}.Sanitize()
			if err := dropEach(ctx, tx, `DROP INDEX `+rb.shadow+`.`, `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
				WHERE i.indrelid = ($1 || '.' || $2)::regclass AND NOT i.indisunique`, rb.shadow, name); err != nil {
				return fmt.Errorf("non-unique indexes of shadow %s: %w", t.Name, err)
			}
			if err := rb.shadowWithoutGenerated(ctx, tx, t); err != nil {
				return err
			}
		}
		return nil
	})
}

// shadowWithoutGenerated leaves t's Generated columns empty in the
// shadow (a ShadowUniqueOnly table): no default, no NOT NULL, no unique
// index or constraint over them (a bigserial primary key). The swap
// neither compares nor copies them, and the model's statements look rows
// up by the key, so every row the rebuild writes would pay for a
// sequence draw and an index entry nobody reads: a fifth of a COPY of
// coordinator logs.
func (rb *rebuild) shadowWithoutGenerated(ctx context.Context, tx pgx.Tx, t projection.Table) error {
	name := pgx.Identifier{t.Name}.Sanitize()
	for _, c := range t.Generated {
		// Constraints first (a primary key's index goes with it), then any
		// other unique index over the column.
		if err := dropEach(ctx, tx, `ALTER TABLE `+rb.shadow+`.`+name+` DROP CONSTRAINT `, `SELECT con.conname FROM pg_constraint con
			JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = ANY(con.conkey)
			WHERE con.conrelid = ($1 || '.' || $2)::regclass AND con.contype IN ('p', 'u') AND a.attname = $3`, rb.shadow, name, c); err != nil {
			return fmt.Errorf("constraints of shadow %s.%s: %w", t.Name, c, err)
		}
		if err := dropEach(ctx, tx, `DROP INDEX `+rb.shadow+`.`, `SELECT ci.relname FROM pg_index i JOIN pg_class ci ON ci.oid = i.indexrelid
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
			WHERE i.indrelid = ($1 || '.' || $2)::regclass AND a.attname = $3`, rb.shadow, name, c); err != nil {
			return fmt.Errorf("indexes of shadow %s.%s: %w", t.Name, c, err)
		}
		col := pgx.Identifier{c}.Sanitize()
		if _, err := tx.Exec(ctx, `ALTER TABLE `+rb.shadow+`.`+name+` ALTER COLUMN `+col+` DROP DEFAULT, ALTER COLUMN `+col+` DROP NOT NULL`); err != nil {
			return fmt.Errorf("shadow %s.%s without its values: %w", t.Name, c, err)
		}
	}
	return nil
}

// dropEach runs drop followed by each name query (with args) returns, in
// tx: the shadow's indexes or constraints a rebuild leaves out.
func dropEach(ctx context.Context, tx pgx.Tx, drop, query string, args ...any) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := tx.Exec(ctx, drop+pgx.Identifier{n}.Sanitize()); err != nil {
			return fmt.Errorf("drop %s: %w", n, err)
		}
	}
	return nil
}

// shadowSequences gives the shadow's sequence-filled columns sequences
// of its own (unlogged, dropped with it): a copy made LIKE the live table
// draws from the live table's sequence, so a rebuild of 100k rows burnt
// 100k live ids (ids the swap does not copy: Table.Generated) and paid
// the live sequence's WAL. Only a model table's Generated columns and any
// column of a Scratch table: their values never reach the live tables.
func (rb *rebuild) shadowSequences(ctx context.Context, tx pgx.Tx) error {
	own := map[string][]string{}
	for _, t := range rb.model.Tables {
		own[t.Name] = t.Generated
		if t.ShadowUniqueOnly {
			own[t.Name] = nil // left empty: shadowWithoutGenerated
		}
	}
	for _, t := range rb.allTables() {
		generated, isModel := own[t]
		name := pgx.Identifier{t}.Sanitize()
		rows, err := tx.Query(ctx, `SELECT a.attname FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE a.attrelid = ($1 || '.' || $2)::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attidentity = ''
			AND pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%'`, rb.shadow, name)
		if err != nil {
			return fmt.Errorf("sequences of shadow %s: %w", t, err)
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("sequences of shadow %s: %w", t, err)
		}
		for _, c := range cols {
			if isModel && !slices.Contains(generated, c) {
				continue // its values are compared or copied: left as the live table has it
			}
			seq := rb.shadow + `.` + pgx.Identifier{t + "_" + c + "_seq"}.Sanitize()
			if _, err := tx.Exec(ctx, `CREATE UNLOGGED SEQUENCE `+seq); err != nil {
				return fmt.Errorf("shadow sequence of %s.%s: %w", t, c, err)
			}
			if _, err := tx.Exec(ctx, `ALTER TABLE `+rb.shadow+`.`+name+` ALTER COLUMN `+pgx.Identifier{c}.Sanitize()+
				` SET DEFAULT nextval('`+strings.ReplaceAll(seq, "'", "''")+`'::regclass)`); err != nil {
				return fmt.Errorf("shadow sequence of %s.%s: %w", t, c, err)
			}
		}
	}
	return nil
}

func (rb *rebuild) dropShadow() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rb.db.Exec(ctx, `DROP SCHEMA IF EXISTS `+rb.shadow+` CASCADE`); err != nil {
		rb.opts.Log.Warn().Err(err).Str("schema", rb.shadow).Msg("drop rebuild shadow")
	}
}

// targets returns the sequence each source should be rebuilt to now: the
// live checkpoint, or the stream's end when the consumer never applied
// anything; and how many messages that is beyond the shadow's position.
func (rb *rebuild) targets(ctx context.Context) ([]uint64, uint64, error) {
	out := make([]uint64, len(rb.model.Sources))
	var total uint64
	for i, s := range rb.model.Sources {
		cp, err := projection.Checkpoint(ctx, rb.db, s.Consumer)
		if err != nil {
			return nil, 0, err
		}
		first, last, err := End(ctx, rb.js, Range{Stream: s.Stream})
		if err != nil {
			return nil, 0, err
		}
		t := cp
		if t == 0 || t > last {
			t = last
		}
		out[i] = t
		from := rb.pos[i] + 1
		if rb.pos[i] == 0 {
			from = max(first, rb.opts.From.Seq)
		}
		if t > 0 && t >= from { // t 0: an empty stream
			total += t - from + 1
		}
	}
	return out, total, nil
}

// MaxQueuedBytes bounds the message data (bytes of the messages) a
// rebuild's parallel apply holds at once, queued for its workers and in
// their transactions.
const MaxQueuedBytes = 64 << 20

// applyRange applies source i's messages after the shadow's position up to
// target, in transactions of opts.Batch messages, and moves the position
// to the last message read. A source with a Partition runs opts.Workers
// transactions at once, one partition always on the same worker (in
// stream order).
func applyRange(ctx context.Context, db *pgxpool.Pool, rb *rebuild, i int, target uint64, progress func(uint64)) error {
	workers, batch := rb.opts.Workers, rb.batch(i)
	if rb.model.Sources[i].Partition == nil || workers < 2 {
		workers = 1
	}
	g, gctx := errgroup.WithContext(ctx)
	queues := make([]chan jsrouter.Msg, workers)
	var pmu sync.Mutex
	// The message data held between the reader and the workers, queued
	// and pending, is bounded in bytes as well as in messages: varbind
	// batches of real walks are tens of kilobytes each, and 4 workers x
	// 5 batches of 1,000 of them held over a gigabyte. A worker applies
	// what it has once it holds half its share, so the reader, waiting
	// for room, always gets it back.
	share := int64(MaxQueuedBytes / workers)
	weight := func(m jsrouter.Msg) int64 { return min(int64(len(m.Data))+256, share/2) }
	room := semaphore.NewWeighted(MaxQueuedBytes)
	for w := range queues {
		// Room for a few batches: while a worker's transaction runs, the
		// reader keeps feeding the others.
		q := make(chan jsrouter.Msg, 4*batch)
		queues[w] = q
		g.Go(func() error {
			var pending []jsrouter.Msg
			var held int64
			flush := func() error {
				if len(pending) == 0 {
					return nil
				}
				defer func() {
					room.Release(held)
					held = 0
				}()
				err := pgx.BeginFunc(gctx, db, func(tx pgx.Tx) error {
					// The shadow is thrown away if the machine crashes: its
					// commits need not wait for the WAL flush.
					if _, err := tx.Exec(gctx, `SET LOCAL synchronous_commit TO off`); err != nil {
						return fmt.Errorf("asynchronous commit: %w", err)
					}
					return rb.apply(gctx, tx, i, pending)
				})
				if err != nil {
					return fmt.Errorf("rebuild %s from %s: %w", rb.model.Name, rb.model.Sources[i].Stream, err)
				}
				pmu.Lock()
				progress(uint64(len(pending)))
				pmu.Unlock()
				pending = pending[:0]
				return nil
			}
			for m := range q {
				pending = append(pending, m)
				held += weight(m)
				if len(pending) >= batch || held >= share/2 {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			return flush()
		})
	}
	part := rb.model.Sources[i].Partition
	// A partition goes to the worker with the fewest partitions when it is
	// first seen, and stays there (its messages in stream order): ten OLTs
	// on four workers are 3, 3, 2 and 2, where a hash could give one
	// worker half of them.
	assigned := map[string]int{}
	perWorker := make([]int, workers)
	var last uint64
	err := rb.read(gctx, i, target, func(m jsrouter.Msg) error {
		w := 0
		if workers > 1 {
			p := part(m.Subject)
			var ok bool
			if w, ok = assigned[p]; !ok {
				w = slices.Index(perWorker, slices.Min(perWorker))
				assigned[p] = w
				perWorker[w]++
			}
		}
		if err := room.Acquire(gctx, weight(m)); err != nil {
			return err
		}
		select {
		case queues[w] <- m:
		case <-gctx.Done():
			return gctx.Err()
		}
		last = m.Seq
		return nil
	})
	for _, q := range queues {
		close(q)
	}
	if werr := g.Wait(); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if last > 0 {
		rb.pos[i] = last
	}
	return nil
}

// read calls fn with source i's messages after the shadow's position up
// to target.
func (rb *rebuild) read(ctx context.Context, i int, target uint64, fn func(jsrouter.Msg) error) error {
	s := rb.model.Sources[i]
	from := Position{Seq: rb.pos[i] + 1}
	if rb.pos[i] == 0 {
		from = rb.opts.From
	}
	if target == 0 || (from.Seq > 0 && from.Seq > target) {
		return nil
	}
	_, err := ReadMeta(ctx, rb.js, Range{Stream: s.Stream, From: from, To: Position{Seq: target}, Batch: rb.opts.Batch}, func(m jetstream.Msg, meta *jetstream.MsgMetadata) error {
		// Data and headers stay valid: ordered consumer messages are not
		// reused.
		return fn(jsrouter.Msg{Stream: s.Stream, Consumer: s.Consumer, Subject: m.Subject(), Seq: meta.Sequence.Stream,
			NumDelivered: 1, Data: m.Data(), Header: m.Headers(), Time: meta.Timestamp})
	})
	return err
}

// useShadow points tx's statements at the shadow (search_path: the
// shadow's tables first) and has every statement planned for its own
// parameters and the shadow as it is now (plan_cache_mode
// force_custom_plan), until tx ends.
//
// The connections' statement caches (pgx prepares every statement) make
// Postgres choose, after 5 executions of a statement, whether to keep a
// generic plan: one costed without the parameters' values, against the
// tables' size at that moment. The shadow tables start empty at each
// rebuild, grow by hundreds of thousands of rows within it, and are never
// analyzed, so nothing replans a generic plan as they grow; and a pooled
// connection keeps its statements' plan history from a previous rebuild,
// which makes the generic plan, costed on the new, empty shadow, look far
// cheaper than the custom plans were. So a rebuild of the quotas over
// live rows (its second on the same pool) sometimes had the quota batch
// form's `execution_id = ANY($1)` run as a seq scan of the grown
// quota_executions shadow, every row checked against the 10,000 ids one
// by one (a parameter array is not hashed): 2 to 7 s a run instead of
// milliseconds, the bulk pass 10-21 s instead of 1.5-2.5 s. The custom
// plans cost a planning per statement: the batch forms run a few
// statements per run of thousands of messages.
func (rb *rebuild) useShadow(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+rb.shadow+`, `+rb.live); err != nil {
		return fmt.Errorf("shadow search_path: %w", err)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode TO force_custom_plan`); err != nil {
		return fmt.Errorf("shadow plans: %w", err)
	}
	return nil
}

// apply runs msgs of source i in tx against the shadow. A message the
// schema refuses (projection.Permanent: the live consumer dead-lettered
// it) is skipped: the batch is retried with a savepoint per message.
func (rb *rebuild) apply(ctx context.Context, tx pgx.Tx, i int, msgs []jsrouter.Msg) error {
	if err := rb.useShadow(ctx, tx); err != nil {
		return err
	}
	defer func() {
		// Back to the live schema for what the transaction does next (the
		// swap); harmless when the transaction is over.
		_, _ = tx.Exec(ctx, `SET LOCAL search_path TO `+rb.live)
	}()
	if rb.model.Sources[i].ApplyBatch != nil && !rb.opts.PerMessage {
		if err := rb.applyBatch(ctx, tx, i, msgs); err == nil {
			return nil
		} else if !projection.Permanent(err) {
			return err
		}
		// Something in the run is refused: find it message by message.
		return rb.applyEach(ctx, tx, i, msgs, true)
	}
	if err := rb.applyEach(ctx, tx, i, msgs, false); err == nil {
		return nil
	} else if !projection.Permanent(err) {
		return err
	}
	return rb.applyEach(ctx, tx, i, msgs, true)
}

// applyBatch applies msgs with source i's ApplyBatch in one savepoint
// (rolled back on error).
func (rb *rebuild) applyBatch(ctx context.Context, tx pgx.Tx, i int, msgs []jsrouter.Msg) error {
	s := rb.model.Sources[i]
	sp, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	defer func() { _ = sp.Rollback(ctx) }() // no-op after Commit
	res, err := s.ApplyBatch(ctx, sp, msgs)
	if err != nil {
		return fmt.Errorf("%s seq %d-%d: %w", s.Stream, msgs[0].Seq, msgs[len(msgs)-1].Seq, err)
	}
	if err := sp.Commit(ctx); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	rb.src[i].Applied += uint64(res.Applied)
	rb.src[i].Ignored += uint64(res.Ignored)
	rb.src[i].Malformed += uint64(res.Malformed)
	return nil
}

// applyEach applies msgs in one savepoint (perMessage false: any error
// rolls the savepoint back and is returned), or each in its own savepoint
// (perMessage: a refused message is counted and skipped).
func (rb *rebuild) applyEach(ctx context.Context, tx pgx.Tx, i int, msgs []jsrouter.Msg, perMessage bool) error {
	s := rb.model.Sources[i]
	var sr SourceReport
	batch, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	defer func() { _ = batch.Rollback(ctx) }() // no-op after Commit
	for _, m := range msgs {
		ch, err := s.Decode(m)
		if err != nil {
			if !errors.Is(err, streams.ErrMalformed) {
				return fmt.Errorf("decode %s seq %d: %w", m.Stream, m.Seq, err)
			}
			sr.Malformed++ // the live consumer dead-lettered it
			continue
		}
		if ch.Apply == nil {
			sr.Ignored++
			continue
		}
		if !perMessage {
			if err := ch.Apply(ctx, batch); err != nil {
				return fmt.Errorf("%s seq %d: %w", m.Stream, m.Seq, err)
			}
			sr.Applied++
			continue
		}
		one, err := batch.Begin(ctx)
		if err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		if err := ch.Apply(ctx, one); err != nil {
			_ = one.Rollback(ctx)
			if !projection.Permanent(err) {
				return fmt.Errorf("%s seq %d: %w", m.Stream, m.Seq, err)
			}
			sr.Refused++ // the live consumer dead-lettered it
			continue
		}
		if err := one.Commit(ctx); err != nil {
			return fmt.Errorf("release savepoint: %w", err)
		}
		sr.Applied++
	}
	if err := batch.Commit(ctx); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	rb.src[i].Applied += sr.Applied
	rb.src[i].Ignored += sr.Ignored
	rb.src[i].Malformed += sr.Malformed
	rb.src[i].Refused += sr.Refused
	return nil
}
