package projection

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
)

// ReadModel is what a service declares about one of its read models so
// that pkg/replay can rebuild it from the streams: the live consumers that
// feed it (with the decoders the live consumers use), the tables it owns,
// and the tables it writes as a side effect. A service registers its read
// models by returning them (projector.ReadModels, auditor.ReadModels); the
// facho command collects them in a Registry.
type ReadModel struct {
	// Name is what `facho rebuild NAME` takes.
	Name string
	// Description is one line for the command's help.
	Description string
	// Sources are the live consumers feeding the model: each stream is
	// replayed with the same decoder, and the consumer's checkpoint moves
	// with the tables when the rebuild is swapped in.
	Sources []Source
	// Tables are the tables the model owns: rebuilt in the shadow,
	// compared, and swapped in.
	Tables []Table
	// Scratch are tables the decoders also write (an outbox) that must not
	// be touched by a rebuild: they get an empty copy in the shadow, which
	// is dropped. A table a decoder writes that is in neither list would be
	// written live: list every one.
	Scratch []string
	// Window, when set, is how far back the model needs the streams: rows
	// of older events are pruned anyway (Prune), so a stream that lost
	// only messages older than the window still holds the whole model.
	Window time.Duration
	// Prune, when set, runs on the shadow (search_path set to it) before
	// the comparison: what the live service deletes by itself (a
	// retention clean-up) is deleted from the rebuild too.
	Prune func(ctx context.Context, tx pgx.Tx) error
	// Fold, when set, gives a rebuild's first pass a way to apply the
	// leading sources it folds (Folder.Folds) into the empty shadow without
	// a statement per batch: their messages are decoded in parallel and
	// folded in memory in stream order, and the result written once (COPY).
	// Nil: every source goes batch by batch (ApplyBatch) or message by
	// message.
	Fold func() Folder
}

// Folder folds a read model's leading sources in memory for a rebuild's
// first pass, into a shadow that is empty when it starts. Sources are
// folded one after the other, each in stream order, as the per-batch
// path applies them; the sources after the folded ones then go the
// per-batch way on top of what Write wrote. The result must be exactly
// what ApplyBatch (or each message's Apply) leaves: Decode and Fold
// count applied, ignored and malformed messages the same way.
type Folder interface {
	// Folds reports whether source i (an index in ReadModel.Sources) is
	// folded; only a leading run of sources is.
	Folds(source int) bool
	// Decode parses a run of source's messages; it is called from several
	// goroutines at once, so it must not touch the fold.
	Decode(source int, msgs []jsrouter.Msg) (any, BatchResult, error)
	// Fold applies what Decode returned, in stream order, one run at a
	// time.
	Fold(source int, decoded any) error
	// Rows is how many rows the fold holds (a rebuild gives up folding
	// past a bound and goes batch by batch instead).
	Rows() int
	// Writes are how the fold is written into the shadow's tables (empty
	// then): each in a transaction of its own (search_path set to the
	// shadow), all at once, e.g. one per table. An error that is
	// Permanent makes the rebuild empty the shadow and start the folded
	// sources again batch by batch.
	Writes() []func(ctx context.Context, tx pgx.Tx) error
}

// Source is one live consumer of a read model.
type Source struct {
	Stream   string
	Consumer string // the live durable consumer, and checkpoint name
	Decode   Decoder
	// Partition, when set, names the partition of a message's subject:
	// messages of different partitions touch different rows, so a
	// rebuild may apply them in parallel transactions (each partition in
	// stream order). Nil: one transaction at a time.
	Partition func(subject string) string
	// ApplyBatch, when set, is how a rebuild applies a run of the
	// source's messages (stream order, one partition's when Partition is
	// set) in tx: set-based, a few statements for the whole run where the
	// live path runs a few per message. It must leave the tables exactly
	// as applying each message's Decode(m).Apply in order would (the
	// rebuild's own tests compare both on 100k events), including what
	// is malformed (counted, skipped) or ignored. An error that is
	// Permanent makes the rebuild apply the run again message by message
	// (one savepoint each: the refused one is skipped). Nil: message by
	// message, always.
	ApplyBatch BatchApplier
	// Batch, when set, is how many messages a rebuild applies per
	// transaction from this source (unless the rebuild is told a size):
	// a batch form whose cost per run does not shrink with the run (the
	// quotas recompute each touched tracker once per run) wants long runs.
	Batch int
}

// BatchApplier applies msgs in tx; see Source.ApplyBatch.
type BatchApplier func(ctx context.Context, tx pgx.Tx, msgs []jsrouter.Msg) (BatchResult, error)

// BatchResult counts what a BatchApplier did with its messages.
type BatchResult struct {
	Applied, Ignored, Malformed int
}

// SubjectToken returns a Partition by the subject's token i (0-based),
// e.g. SubjectToken(2) for the OLT id of facho.exec.<olt>.<phase>.
func SubjectToken(i int) func(subject string) string {
	return func(subject string) string {
		for n := 0; n < i; n++ {
			dot := strings.IndexByte(subject, '.')
			if dot < 0 {
				return ""
			}
			subject = subject[dot+1:]
		}
		if dot := strings.IndexByte(subject, '.'); dot >= 0 {
			return subject[:dot]
		}
		return subject
	}
}

// Table is one table of a read model.
type Table struct {
	Name string
	// Key identifies a row, for the difference report.
	Key []string
	// Ignore are columns not compared: what the projection sets from the
	// clock (updated_at = now()) or a sequence (a bigserial id).
	Ignore []string
	// Generated are columns not copied on swap: the live table's default
	// (its sequence) fills them.
	Generated []string
	// ShadowUniqueOnly gives the rebuild's shadow copy of the table only
	// the live table's unique indexes (the key, what ON CONFLICT names):
	// the others serve readers of the live table, and every row the
	// rebuild writes would pay for each. Only for a table the model's
	// statements look up by a unique index alone. Its Generated columns
	// stay empty in the shadow (no default, no index over them): nothing
	// reads them there.
	ShadowUniqueOnly bool
	// ShadowNoIndex gives the shadow copy no index at all during the
	// rebuild's bulk pass, not even the key's: for a table the model only
	// appends to (a history), whose rows a rebuild writes once each (the
	// swap's comparison hash-joins). Each row copied in then pays for no
	// index entry; an index on the key is built once, after the bulk
	// pass, before any message is applied on top.
	ShadowNoIndex bool
}

// Consumers returns the model's live consumers, sorted (the order the
// rebuild locks their checkpoints in).
func (m ReadModel) Consumers() []string {
	out := make([]string, 0, len(m.Sources))
	for _, s := range m.Sources {
		out = append(out, s.Consumer)
	}
	sort.Strings(out)
	return out
}

// Validate checks a registration.
func (m ReadModel) Validate() error {
	if m.Name == "" || len(m.Sources) == 0 || len(m.Tables) == 0 {
		return fmt.Errorf("read model %q: want a name, sources and tables", m.Name)
	}
	for _, s := range m.Sources {
		if s.Stream == "" || s.Consumer == "" || s.Decode == nil {
			return fmt.Errorf("read model %s: source %q/%q incomplete", m.Name, s.Stream, s.Consumer)
		}
	}
	for _, t := range m.Tables {
		if t.Name == "" || len(t.Key) == 0 {
			return fmt.Errorf("read model %s: table %q without key", m.Name, t.Name)
		}
	}
	return nil
}

// Registry holds the read models a command can rebuild, by name.
type Registry struct {
	models map[string]ReadModel
}

// Register adds models; a name registered twice is an error.
func (r *Registry) Register(models ...ReadModel) error {
	if r.models == nil {
		r.models = map[string]ReadModel{}
	}
	for _, m := range models {
		if err := m.Validate(); err != nil {
			return err
		}
		if _, dup := r.models[m.Name]; dup {
			return fmt.Errorf("read model %s registered twice", m.Name)
		}
		r.models[m.Name] = m
	}
	return nil
}

// Lookup returns the model called name.
func (r *Registry) Lookup(name string) (ReadModel, bool) {
	m, ok := r.models[name]
	return m, ok
}

// Names lists the registered models, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.models))
	for n := range r.models {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
