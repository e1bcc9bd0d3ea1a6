package planner

import (
	"testing"

	"github.com/facho-olt/facho/streams"
)

func TestQueueClass(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		attempt int
		manual  bool
		want    string
	}{
		{streams.KindDiscovery, 1, false, streams.ClassDiscovery},
		{streams.KindDiscovery, 0, false, streams.ClassDiscovery},
		{streams.KindGet, 1, false, streams.ClassPolling},
		{streams.KindWalk, 1, false, streams.ClassPolling},
		{streams.KindBulkWalk, 1, false, streams.ClassPolling},
		{streams.KindGet, 2, false, streams.ClassRetry},
		{streams.KindDiscovery, 3, false, streams.ClassRetry},
		{streams.KindGet, 1, true, streams.ClassHigh},
		{streams.KindDiscovery, 1, true, streams.ClassHigh},
		{streams.KindGet, 2, true, streams.ClassHigh}, // manual wins over retry
	} {
		if got := QueueClass(tc.kind, tc.attempt, tc.manual); got != tc.want {
			t.Errorf("QueueClass(%q, %d, %v) = %q, want %q", tc.kind, tc.attempt, tc.manual, got, tc.want)
		}
	}
}

func TestClassRetriesOf(t *testing.T) {
	c := ClassRetries{Polling: -1, Retry: 5}.resolved()
	for _, tc := range []struct {
		kind string
		max  int
		want int
	}{
		{streams.KindDiscovery, 0, 3}, {streams.KindGet, 0, 0}, {streams.KindBulkWalk, 0, 0},
		{streams.KindGet, 2, 2}, {streams.KindDiscovery, -1, 0}, {streams.KindDiscovery, 9, 5},
	} {
		if got := c.of(streams.JobUpserted{Kind: tc.kind, MaxRetries: tc.max}); got != tc.want {
			t.Errorf("%s max_retries %d: %d retries, want %d", tc.kind, tc.max, got, tc.want)
		}
	}
}
