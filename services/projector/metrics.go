package projector

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/pkg/jsrouter"
)

// metrics are the projector's domain metrics; the per-consumer outcomes
// (applied, skipped, dead_lettered, ...) and handling times are pkg/jsrouter's
// facho_consumer_* metrics.
type metrics struct {
	onuRows         prometheus.Counter
	varbindsSkipped *prometheus.CounterVec
	// varbindsUnplaced: per OLT (one series per OLT the projector saw).
	varbindsUnplaced *prometheus.CounterVec
	// varbindsFiltered: varbinds of rows that are no ONU by design.
	varbindsFiltered prometheus.Counter
	staleExec        prometheus.Counter
	onuEvents        *prometheus.CounterVec
	outboxFailures   prometheus.Counter
	// trapStatus: ONU statuses set by a decoded trap, by kind (traps.go).
	trapStatus *prometheus.CounterVec
	// trapMessages: trap events applied or skipped (traps_loop.go).
	trapMessages prometheus.Counter
	// The varbind projection's own loop (varbindloop.go).
	varbindLeader       prometheus.Gauge
	varbindMessages     *prometheus.CounterVec
	varbindGroups       prometheus.Histogram
	varbindGroupSeconds prometheus.Histogram
	varbindOutageTries  prometheus.Counter
	// What the projector refused to apply (trust.go), by kind.
	refused *prometheus.CounterVec
	// Readings older than their ONU's current state, not applied to it.
	staleReadings prometheus.Counter
	// Messages held because the schedule projection was behind.
	scheduleWaits prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		onuRows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_onu_rows_upserted_total",
			Help: "onu_data rows inserted or updated.",
		}),
		varbindsSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_varbinds_skipped_total",
			Help: "Varbinds that fed no field, by reason (unknown_column, bad_index, undecodable, wrong_type: a value of a type its decoder does not take, no_value, unknown_field).",
		}, []string{"reason"}),
		varbindsUnplaced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_varbinds_unplaced_total",
			Help: "Varbinds the projector could not place in an ONU field (bad index, unknown column, undecodable value, no value), by OLT.",
		}, []string{"olt_id"}),
		varbindsFiltered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_varbinds_filtered_total",
			Help: "Varbinds of rows that are no ONU by the index definition (a row filter, or a key pattern the row's value does not match).",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_refused_total",
			Help: "Messages dead-lettered because they break what the projector applies: work never dispatched, another OLT's execution, a stale attempt, a batch published after its execution ended, impossible values, configuration field rules; by reason.",
		}, []string{"reason"}),
		staleReadings: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_stale_readings_total",
			Help: "ONU readings older than the ONU's current state: not applied to it (no state change, event or history row).",
		}),
		scheduleWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_schedule_waits_total",
			Help: "Times a varbind batch or execution event of an execution not known as dispatched was held because the schedule projection had not caught up.",
		}),
		staleExec: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_stale_execution_events_total",
			Help: "Execution events ignored: an older lease revision (stale poller) or a state that would move backwards.",
		}),
		onuEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_onu_events_total",
			Help: "ONU-change events written to the outbox, by change (discovered, status, updated).",
		}, []string{"change"}),
		outboxFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_outbox_publish_failures_total",
			Help: "Rounds of ONU-change publishing that failed and will be retried.",
		}),
		trapStatus: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_trap_status_changes_total",
			Help: "ONU statuses set at once by a decoded trap (onu_data, onu_history source trap, onu.changed), by trap kind.",
		}, []string{"kind"}),
		trapMessages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_trap_messages_total",
			Help: "Trap events (trap.received, trap.decoded) the trap projection took, in groups of one transaction each.",
		}),
		varbindLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "facho_projector_varbind_leader",
			Help: "Varbind projection partitions this projector leads (0: standing by; with one partition, 1 while it holds the projection).",
		}),
		varbindMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facho_projector_varbind_messages_total",
			Help: "Varbind batches by outcome (applied, skipped: already applied, dead_lettered).",
		}, []string{"outcome"}),
		varbindGroups: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "facho_projector_varbind_group_messages",
			Help:    "Varbind batches per group (one fetch, one transaction per worker).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 13),
		}),
		varbindGroupSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "facho_projector_varbind_group_seconds",
			Help:    "Time to apply, publish and ack one group of varbind batches.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		varbindOutageTries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facho_projector_varbind_outage_retries_total",
			Help: "Tries of a group of varbind batches held through a database outage (not counted toward dead-lettering).",
		}),
	}
	if reg == nil {
		return m, nil
	}
	err := errors.Join(
		jsrouter.Register(reg, &m.onuRows),
		jsrouter.Register(reg, &m.varbindsSkipped),
		jsrouter.Register(reg, &m.varbindsUnplaced),
		jsrouter.Register(reg, &m.varbindsFiltered),
		jsrouter.Register(reg, &m.staleExec),
		jsrouter.Register(reg, &m.onuEvents),
		jsrouter.Register(reg, &m.outboxFailures),
		jsrouter.Register(reg, &m.trapStatus),
		jsrouter.Register(reg, &m.trapMessages),
		jsrouter.Register(reg, &m.varbindLeader),
		jsrouter.Register(reg, &m.varbindMessages),
		jsrouter.Register(reg, &m.varbindGroups),
		jsrouter.Register(reg, &m.varbindGroupSeconds),
		jsrouter.Register(reg, &m.varbindOutageTries),
		jsrouter.Register(reg, &m.refused),
		jsrouter.Register(reg, &m.staleReadings),
		jsrouter.Register(reg, &m.scheduleWaits),
	)
	if err != nil {
		return nil, err
	}
	return m, nil
}
