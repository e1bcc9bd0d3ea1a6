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
