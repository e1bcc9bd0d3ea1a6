package telemetry

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// PublicCheckRemind is how often PublicCheck repeats the detail of a
// failure that has not changed.
const PublicCheckRemind = 5 * time.Minute

// PublicCheck wraps a health check for /healthz, which anyone who reaches
// the port can read: a failure answers only public (e.g. "database
// unavailable"), never the error's text, which may carry a user, database,
// host and port. The detail goes to log at warn when it changes (first
// failure, another error) and again every PublicCheckRemind while it lasts,
// not at every probe; the recovery is logged at info. name is the check's
// name in the log.
func PublicCheck(log zerolog.Logger, name, public string, check func(context.Context) error) func(context.Context) error {
	pc := &publicCheck{log: log, name: name, public: errors.New(public), check: check, now: time.Now}
	return pc.run
}

type publicCheck struct {
	log    zerolog.Logger
	name   string
	public error
	check  func(context.Context) error
	now    func() time.Time

	mu        sync.Mutex
	failing   bool
	detail    string
	lastLogAt time.Time
}

func (p *publicCheck) run(ctx context.Context) error {
	err := p.check(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		if p.failing {
			p.log.Info().Str("check", p.name).Msg("health check passes again")
		}
		p.failing, p.detail = false, ""
		return nil
	}
	now := p.now()
	if !p.failing || err.Error() != p.detail || now.Sub(p.lastLogAt) >= PublicCheckRemind {
		p.log.Warn().Str("check", p.name).Err(err).Msg("health check fails")
		p.lastLogAt = now
	}
	p.failing, p.detail = true, err.Error()
	return p.public
}
