package alerter

import (
	"errors"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/jsrouter"
)

// metrics are the alerter's own; per-consumer outcomes are pkg/jsrouter's.
type metrics struct {
	evalSeconds prometheus.Histogram
	transitions *prometheus.CounterVec
	published   prometheus.Counter
	deliveries  *prometheus.CounterVec
	onuEvents   *prometheus.CounterVec
	alertEvents *prometheus.CounterVec
	lag         prometheus.Histogram
}

var (
	descFiring  = prometheus.NewDesc("facho_alerts_firing", "Alerts firing now (held ONU down alerts not counted).", []string{"rule", "severity"}, nil)
	descPONONUs = prometheus.NewDesc("facho_pon_onus", "ONUs of a PON: total, online, down.", []string{"olt_id", "pon", "state"}, nil)
	descPONRx   = prometheus.NewDesc("facho_pon_rx_dbm", "Rx power of a PON's online ONUs (dBm): min and median.", []string{"olt_id", "pon", "stat"}, nil)
	descDropped = prometheus.NewDesc("facho_alerter_dropped_total", "Events ignored because a bound of the evaluation state was reached (raise the limits).", nil, nil)
	descTracked = prometheus.NewDesc("facho_alerter_tracked", "Entities in the evaluation state.", []string{"kind"}, nil)
)

func newMetrics(reg prometheus.Registerer, a *alerter) (*metrics, error) {
	m := &metrics{
		evalSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "facho_alerter_eval_seconds", Help: "Time to evaluate and persist one event (with its checkpoint).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "facho_alerter_transitions_total", Help: "Alert events decided, by rule and state."}, []string{"rule", "state"}),
		published:   prometheus.NewCounter(prometheus.CounterOpts{Name: "facho_alerter_published_total", Help: "Alert events published on FACHO_ALERT."}),
		deliveries:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "facho_alerter_deliveries_total", Help: "Receiver deliveries by receiver kind and outcome."}, []string{"receiver", "status"}),
		onuEvents:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "facho_alerter_onu_events_total", Help: "onu.changed events by outcome (applied, skipped: already applied, dead_lettered)."}, []string{"outcome"}),
		alertEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "facho_alerter_alert_events_total", Help: "Alert events projected into the alerts read model by outcome (applied, skipped: already applied, dead_lettered)."}, []string{"outcome"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "facho_alerter_onu_lag_seconds", Help: "From an onu.changed's observed_at (the poll that saw the change) to its evaluation committed.",
			Buckets: prometheus.ExponentialBuckets(0.001, 1.5, 30),
		}),
	}
	if reg == nil {
		return m, nil
	}
	err := errors.Join(jsrouter.Register(reg, &m.evalSeconds), jsrouter.Register(reg, &m.transitions), jsrouter.Register(reg, &m.published),
		jsrouter.Register(reg, &m.deliveries), jsrouter.Register(reg, &m.onuEvents), jsrouter.Register(reg, &m.alertEvents), jsrouter.Register(reg, &m.lag), reg.Register(collector{a}))
	if err != nil {
		return nil, err
	}
	return m, nil
}

// collector reads the gauges from the engine at scrape time: one series
// per rule and severity, and per PON (never per ONU).
type collector struct{ a *alerter }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descFiring
	ch <- descDropped
	ch <- descTracked
	if !c.a.cfg.PONGaugesOff {
		ch <- descPONONUs
		ch <- descPONRx
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	e := c.a.eng
	if e == nil {
		return
	}
	type rs struct{ rule, sev string }
	firing := map[rs]int{}
	for _, rule := range AllRules() {
		firing[rs{rule, severityOf(rule)}] = 0
	}
	for _, act := range e.active {
		if !act.Pending {
			firing[rs{act.A.Rule, act.A.Severity}]++
		}
	}
	for k, n := range firing {
		ch <- prometheus.MustNewConstMetric(descFiring, prometheus.GaugeValue, float64(n), k.rule, k.sev)
	}
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(e.Dropped))
	for kind, n := range map[string]int{"onu": e.onus.len(), "pon": len(e.pons), "olt": len(e.olts), "alert": len(e.active), "silence": len(e.silences)} {
		ch <- prometheus.MustNewConstMetric(descTracked, prometheus.GaugeValue, float64(n), kind)
	}
	if c.a.cfg.PONGaugesOff {
		return
	}
	rx := map[ponKey][]float64{}
	e.onus.each(func(o *onuState) bool {
		if !o.Down && hasReading(o.rx) {
			pk := ponKey{o.OLT, o.PON}
			rx[pk] = append(rx[pk], dBm(o.rx))
		}
		return true
	})
	for pk, p := range e.pons {
		pon := ponName(p)
		ch <- prometheus.MustNewConstMetric(descPONONUs, prometheus.GaugeValue, float64(p.Members), pk.OLT, pon, "total")
		ch <- prometheus.MustNewConstMetric(descPONONUs, prometheus.GaugeValue, float64(p.Members-p.Down), pk.OLT, pon, "online")
		ch <- prometheus.MustNewConstMetric(descPONONUs, prometheus.GaugeValue, float64(p.Down), pk.OLT, pon, "down")
		if v := rx[pk]; len(v) > 0 {
			sort.Float64s(v)
			ch <- prometheus.MustNewConstMetric(descPONRx, prometheus.GaugeValue, v[0], pk.OLT, pon, "min")
			ch <- prometheus.MustNewConstMetric(descPONRx, prometheus.GaugeValue, median(v), pk.OLT, pon, "median")
		}
	}
}
