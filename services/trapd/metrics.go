package trapd

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Drop reasons (facho_trapd_dropped_total{reason}).
const (
	dropTooLarge      = "too_large"
	dropRateLimited   = "rate_limited"
	dropUnknownSource = "unknown_source"
	dropMalformed     = "malformed"
	dropUnsupported   = "unsupported"
	dropBadCommunity  = "bad_community"
	dropPublish       = "publish_failed"
	dropBacklog       = "backlog"
)

// Undecoded reasons (facho_trapd_undecoded_total{reason}): published raw
// only.
const (
	undecodedNoProfile = "no_profile"
	undecodedUnmapped  = "unmapped"
	undecodedInvalid   = "invalid"
)

type metrics struct {
	// receivedDropped and droppedBy are the series of the hot path
	// (a flood), resolved once.
	receivedDropped prometheus.Counter
	droppedBy       map[string]prometheus.Counter
	received        *prometheus.CounterVec
	dropped         *prometheus.CounterVec
	undecoded       *prometheus.CounterVec
	decoded         *prometheus.CounterVec
	published       *prometheus.CounterVec
	acked           prometheus.Counter
	handle          prometheus.Histogram
	olts            prometheus.Gauge
	sources         prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, sources func() float64) (*metrics, error) {
	m := &metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "facho_trapd_received_total",
			Help: "Datagrams read from the trap socket, by SNMP version of those accepted (v1, v2c, v2c-inform) or \"dropped\"."}, []string{"version"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "facho_trapd_dropped_total",
			Help: "Traps dropped, by reason: too_large, rate_limited, unknown_source, malformed, unsupported, bad_community, backlog (the handlers behind by QueueBytes), publish_failed."}, []string{"reason"}),
		undecoded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "facho_trapd_undecoded_total",
			Help: "Accepted traps published raw only, by reason: no_profile (the OLT's brand has no trap map), unmapped (the trap OID is not in it), invalid (mapped, but the trap lacks what the map reads)."}, []string{"reason"}),
		decoded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "facho_trapd_decoded_total",
			Help: "Traps decoded, by kind."}, []string{"kind"}),
		published: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "facho_trapd_published_total",
			Help: "Trap events published and acknowledged by JetStream, by type."}, []string{"type"}),
		acked: prometheus.NewCounter(prometheus.CounterOpts{Name: "facho_trapd_informs_acknowledged_total",
			Help: "Informs acknowledged (the only packets trapd sends to an OLT)."}),
		handle: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "facho_trapd_handle_seconds",
			Help:    "Time from reading a datagram to handing its events to the publisher.",
			Buckets: []float64{0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05}}),
		olts: prometheus.NewGauge(prometheus.GaugeOpts{Name: "facho_trapd_olts",
			Help: "Configured OLTs whose traps are accepted."}),
		sources: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "facho_trapd_rate_limited_sources",
			Help: "Source addresses with their own token bucket."}, sources),
	}
	for _, c := range []prometheus.Collector{m.received, m.dropped, m.undecoded, m.decoded, m.published, m.acked, m.handle, m.olts, m.sources} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("trapd metrics: %w", err)
		}
	}
	m.receivedDropped = m.received.WithLabelValues("dropped")
	m.droppedBy = map[string]prometheus.Counter{}
	for _, r := range []string{dropTooLarge, dropRateLimited, dropUnknownSource, dropMalformed, dropUnsupported, dropBadCommunity, dropPublish, dropBacklog} {
		m.droppedBy[r] = m.dropped.WithLabelValues(r)
	}
	return m, nil
}

// drop counts a dropped datagram.
func (m *metrics) drop(reason string) {
	if c, ok := m.droppedBy[reason]; ok {
		c.Inc()
		return
	}
	m.dropped.WithLabelValues(reason).Inc()
}
