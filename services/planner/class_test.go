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
