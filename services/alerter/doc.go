// Package alerter is Facho's alerting: it evaluates the alert rules over
// the streams Facho already has and tells the NOC, once per alert, through
// Alertmanager and Facho's signed webhooks.
//
// Data flow:
//
//	FACHO_ONU    onu.changed ─────────┐  alerter-onu     (ONU down, optical low/high, Rx drift,
//	                                  │                   flapping, PON and OLT outages)
//	FACHO_OLT    olt.availability ────┤  alerter-olt     (olt_unreachable)
//	FACHO_EXEC   execution.failed ────┤  alerter-exec    (olt_empty_read, from its cause)
//	FACHO_NOTIFY notification ────────┤  alerter-notify  (quota_violation, olt_auto_disabled)
//	FACHO_CONFIG olt/brand/job/silence┤  alerter-config  (OLT names, vendor profiles, discovery
//	                                  │                   intervals: the outage window, silences)
//	FACHO_ALERT  alert.acknowledged ──┘  alerter-acks
//	                   │
//	                   ▼  one transaction per group of onu.changed (onuloop.go), per message
//	                      for the others (pkg/projection.Apply):
//	      Engine (engine.go, in memory: a compact, nearly pointer-free struct per ONU
//	      (onustate.go), one per PON, OLT and active alert)
//	      → changed state rows (alerter_state) + outbox rows (alerter_outbox)
//	        + one delivery per receiver (alerter_deliveries) + the consumer checkpoint
//	                   │
//	      publishLoop ─┴─► FACHO_ALERT facho.alert.<olt_id>.<firing|resolved|updated>
//	                         Nats-Msg-Id alert:<id>:<state>[:<revision>] (updated: an
//	                         incident's count changed; published, never notified)
//	      deliverLoop ───► Alertmanager POST /api/v2/alerts, webhooks (HMAC-signed)
//	      resendLoop  ───► Alertmanager: firing alerts re-sent every ResendInterval
//	      tickLoop    ───► held down alerts, calmed flapping, point alerts (own transaction)
//
//	FACHO_ALERT facho.alert.> ── alerter-alerts ──► alerts (read model; `facho rebuild alerts`),
//	                             in groups, one transaction each (alertsloop.go)
//
// The evaluation state, the outbox and the checkpoint move together, so a
// restart or a redelivery neither loses a transition nor makes one twice;
// a resolved alert is gone from the state and cannot fire again under its
// id. Only one replica is active (a Postgres advisory lock); the others
// stand by. The per-PON gauges (facho_pon_onus, facho_pon_rx_dbm) and
// facho_alerts_firing are read from the engine at scrape time.
//
// Rules and thresholds: rules.go (defaults, per vendor profile, per OLT).
package alerter
