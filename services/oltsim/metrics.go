package oltsim

import (
	"github.com/prometheus/client_golang/prometheus"
)

// fleetCollector exports per-OLT traffic counters.
type fleetCollector struct {
	f                                               *Fleet
	requests, responses, dropped, bytesIn, bytesOut *prometheus.Desc
	inFlight, maxConcurrent, onus                   *prometheus.Desc
}

func newFleetCollector(f *Fleet) *fleetCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("oltsim_"+name, help, []string{"olt"}, nil)
	}
	return &fleetCollector{
		f:             f,
		requests:      d("requests_total", "SNMP datagrams received."),
		responses:     d("responses_total", "SNMP responses sent."),
		dropped:       d("dropped_total", "Requests not answered (faults, wrong community, garbage)."),
		bytesIn:       d("received_bytes_total", "Bytes received."),
		bytesOut:      d("sent_bytes_total", "Bytes sent."),
		inFlight:      d("in_flight_requests", "Requests in flight now."),
		maxConcurrent: d("max_concurrent_requests", "Highest number of requests in flight since the last reset."),
		onus:          d("onus", "ONU rows served."),
	}
}

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.requests, c.responses, c.dropped, c.bytesIn, c.bytesOut, c.inFlight, c.maxConcurrent, c.onus} {
		ch <- d
	}
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, olt string) {
		m, err := prometheus.NewConstMetric(d, t, v, olt)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
	for _, o := range c.f.olts {
		r := o.rec.counters()
		n := o.Name()
		send(c.requests, prometheus.CounterValue, float64(r.Requests), n)
		send(c.responses, prometheus.CounterValue, float64(r.Responses), n)
		send(c.dropped, prometheus.CounterValue, float64(r.Dropped), n)
		send(c.bytesIn, prometheus.CounterValue, float64(r.BytesIn), n)
		send(c.bytesOut, prometheus.CounterValue, float64(r.BytesOut), n)
		send(c.inFlight, prometheus.GaugeValue, float64(r.InFlight), n)
		send(c.maxConcurrent, prometheus.GaugeValue, float64(r.MaxConcurrent), n)
		send(c.onus, prometheus.GaugeValue, float64(o.onuCount()), n)
	}
}
