package oltsim

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rs/zerolog"
)

// Fleet is a set of running simulated OLTs.
type Fleet struct {
	olts   []*OLT
	byName map[string]*OLT
	log    zerolog.Logger

	closeOnce sync.Once
	closeErr  error
	stop      context.CancelFunc
	done      chan struct{}
}

// Start builds and starts every OLT of cfg; all endpoints are listening when
// it returns. Cancelling ctx closes the fleet.
func Start(ctx context.Context, cfg FleetConfig, log zerolog.Logger) (*Fleet, error) {
	f := &Fleet{byName: make(map[string]*OLT, len(cfg.OLTs)), log: log, done: make(chan struct{})}
	ctx, f.stop = context.WithCancel(ctx)
	pl := newPools()
	for _, oc := range cfg.OLTs {
		if _, dup := f.byName[oc.Name]; dup {
			f.abort()
			return nil, fmt.Errorf("start fleet: duplicate olt name %q", oc.Name)
		}
		o, err := newOLT(ctx, oc, log, pl)
		if err != nil {
			f.abort()
			return nil, fmt.Errorf("start fleet: %w", err)
		}
		if err := o.listen(); err != nil {
			o.cancel()
			f.abort()
			return nil, fmt.Errorf("start fleet: %w", err)
		}
		f.olts = append(f.olts, o)
		f.byName[o.name] = o
		o.wg.Add(1)
		go o.serve()
		o.startLife()
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = f.Close()
		case <-f.done:
		}
	}()
	log.Info().Int("olts", len(f.olts)).Msg("fleet started")
	return f, nil
}

func (f *Fleet) abort() {
	for _, o := range f.olts {
		_ = o.close()
	}
	f.stop()
}

// OLT returns the OLT named name, or nil.
func (f *Fleet) OLT(name string) *OLT { return f.byName[name] }

// OLTs returns the OLTs in configuration order.
func (f *Fleet) OLTs() []*OLT { return append([]*OLT(nil), f.olts...) }

// Close stops every OLT and waits for their goroutines. It is idempotent.
func (f *Fleet) Close() error {
	f.closeOnce.Do(func() {
		close(f.done)
		f.stop()
		var errs []error
		for _, o := range f.olts {
			if err := o.close(); err != nil {
				errs = append(errs, err)
			}
		}
		f.closeErr = errors.Join(errs...)
		f.log.Info().Msg("fleet closed")
	})
	return f.closeErr
}
