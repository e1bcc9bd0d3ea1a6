package planner

import "github.com/facho-olt/facho/streams"

// QueueClass is the queue class (seed 001) of a dispatch: a manual run is
// high priority, a retried execution (attempt > 1) goes to the retry
// class, a discovery to the discovery class and every other kind (get,
// walk, bulkwalk) to polling. The class is the last token of the NodeDue's
// subject and picks the poller consumer, so a flood of one class does not
// hold back another.
func QueueClass(kind string, attempt int, manual bool) string {
	switch {
	case manual:
		return streams.ClassHigh
	case attempt > 1:
		return streams.ClassRetry
	case kind == streams.KindDiscovery:
		return streams.ClassDiscovery
	}
	return streams.ClassPolling
}

// MaxJobRetries is the most retries a job may ask for (the API's bound).
const MaxJobRetries = 10

// ClassRetries are the retries of a failed execution per queue class
// (seed 001). A job's max_retries overrides its class's count: 0 (unset)
// takes the class's, 1..10 that many, -1 none. Manual runs (the high
// priority class) are not retried: the operator sees the failure and runs
// the node again.
//
// In a Config, 0 takes the default and a negative count means none.
type ClassRetries struct {
	// Discovery: jobs of kind discovery (default 3).
	Discovery int
	// Polling: jobs of kind get, walk and bulkwalk (default 2).
	Polling int
	// Retry is the retry class's ceiling (seed 001 "máximo reintentos:
	// 3"): no execution is retried more often, whatever its class or its
	// job says (default 3).
	Retry int
}

// DefaultClassRetries are seed 001's counts.
func DefaultClassRetries() ClassRetries { return ClassRetries{Discovery: 3, Polling: 2, Retry: 3} }

// withDefaults fills zero counts; negative ones stay (none).
func (c ClassRetries) withDefaults() ClassRetries {
	d := DefaultClassRetries()
	for _, p := range []struct{ c, d *int }{{&c.Discovery, &d.Discovery}, {&c.Polling, &d.Polling}, {&c.Retry, &d.Retry}} {
		if *p.c == 0 {
			*p.c = *p.d
		}
	}
	return c
}

// resolved is c after defaults with "none" as 0.
func (c ClassRetries) resolved() ClassRetries {
	c = c.withDefaults()
	for _, p := range []*int{&c.Discovery, &c.Polling, &c.Retry} {
		*p = max(*p, 0)
	}
	return c
}

// of is the retries of a failed execution of job (c resolved): the job's
// own count, else its class's, never above the retry class's ceiling.
func (c ClassRetries) of(job streams.JobUpserted) int {
	n := job.MaxRetries
	switch {
	case n < 0:
		return 0
	case n == 0 && QueueClass(job.Kind, 1, false) == streams.ClassDiscovery:
		n = c.Discovery
	case n == 0:
		n = c.Polling
	}
	return min(n, c.Retry)
}
