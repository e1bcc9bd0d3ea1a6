package streams

// EventSpec documents one event of the public contract.
type EventSpec struct {
	Type        string   `json:"type"`
	Version     int      `json:"version"`
	Subject     string   `json:"subject"`
	Stream      string   `json:"stream"`
	Publishers  []string `json:"publishers"`
	Consumers   []string `json:"consumers"`
	Description string   `json:"description"`
	// Payload is a zero value of the payload type; its JSON Schema is
	// generated from it into schemas/<type>.v<version>.json.
	Payload Event `json:"-"`
}

// Catalogue lists every event Facho publishes. CATALOGUE.md and schemas/
// are generated from it (go test ./... -run TestCatalogue -update).
func Catalogue() []EventSpec {
	cfg := []string{"planner (ordered replay)", "projector (" + ConsumerProjectorConfig + ")", "api (existence checks)"}
	return []EventSpec{
		{TypeBrandUpserted, 1, "facho.config.brand.<brand_id>", StreamConfig, []string{"api"}, cfg, "A brand (vendor) was created or changed.", BrandUpserted{}},
		{TypeOIDUpserted, 1, "facho.config.oid.<oid_id>", StreamConfig, []string{"api"}, cfg, "An OID definition of a brand: what it means (field) and how to decode it.", OIDUpserted{}},
		{TypeBrandDeleted, 1, "facho.config.brand.<brand_id>", StreamConfig, []string{"api"}, cfg, "A brand was deleted (the API refuses it while an OID, OLT or job uses it).", BrandDeleted{}},
		{TypeOIDDeleted, 1, "facho.config.oid.<oid_id>", StreamConfig, []string{"api"}, cfg, "An OID definition was deleted (the API refuses it while a job uses it).", OIDDeleted{}},
		{TypeOLTUpserted, 1, "facho.config.olt.<olt_id>", StreamConfig, []string{"api"}, cfg, "An OLT was created or changed. The SNMP community is sealed (AES-256-GCM), never plaintext.", OLTUpserted{}},
		{TypeOLTDeleted, 1, "facho.config.olt.<olt_id>", StreamConfig, []string{"api"}, cfg, "An OLT was deleted: it loses all pending work.", OLTDeleted{}},
		{TypeJobUpserted, 1, "facho.config.job.<job_id>", StreamConfig, []string{"api"}, cfg, "An SNMP job was created or changed.", JobUpserted{}},
		{TypeJobDeleted, 1, "facho.config.job.<job_id>", StreamConfig, []string{"api"}, cfg, "An SNMP job was deleted.", JobDeleted{}},
		{TypeJobOLTAssigned, 1, "facho.config.assignment.<job_id>.<olt_id>", StreamConfig, []string{"api"}, cfg, "A job was assigned to an OLT (or its assignment enabled/disabled).", JobOLTAssigned{}},
		{TypeJobOLTUnassigned, 1, "facho.config.assignment.<job_id>.<olt_id>", StreamConfig, []string{"api"}, cfg, "A job was removed from an OLT.", JobOLTUnassigned{}},
		{TypeNodeDue, 1, "facho.schedule.due.<olt_id>", StreamSchedule, []string{"planner"}, []string{"poller (" + ConsumerPoller + ")", "projector (" + ConsumerProjectorSchedule + ")", "auditor (" + ConsumerAuditorSchedule + ": quota trackers)"}, "A node (job on an OLT) is due: the poller runs it under the OLT's lease. Carries everything the poller needs, including the sealed community.", NodeDue{}},
		{TypeExecutionStarted, 1, "facho.exec.<olt_id>.started", StreamExec, []string{"poller"}, []string{"projector (" + ConsumerProjectorExec + ")", "auditor (" + ConsumerAuditorExec + ", " + ConsumerAuditorQuotaExec + ")"}, "A poller holds the OLT's lease and started the SNMP work. lease_revision is the fencing token.", ExecutionStarted{}},
		{TypeExecutionSucceeded, 1, "facho.exec.<olt_id>.succeeded", StreamExec, []string{"poller"}, []string{"projector (" + ConsumerProjectorExec + ")", "auditor (" + ConsumerAuditorExec + ", " + ConsumerAuditorQuotaExec + ")"}, "The SNMP work ended and every varbind batch was published. Of a get: onus (the OLT's discovered ONUs it read), failed_onus and failed_varbinds (what failed even one OID per PDU) and onu_failures (the first 100 such ONUs: instance, pon_index, onu_id, oids, error); each such get also publishes an ONU_READ_FAILED audit event.", ExecutionSucceeded{}},
		{TypeExecutionFailed, 1, "facho.exec.<olt_id>.failed", StreamExec, []string{"poller"}, []string{"projector (" + ConsumerProjectorExec + ")", "auditor (" + ConsumerAuditorExec + ", " + ConsumerAuditorQuotaExec + ")"}, "The SNMP work failed, with the error.", ExecutionFailed{}},
		{TypeExecutionSkipped, 1, "facho.exec.<olt_id>.skipped", StreamExec, []string{"poller"}, []string{"projector (" + ConsumerProjectorExec + ")", "auditor (" + ConsumerAuditorExec + ", " + ConsumerAuditorQuotaExec + ")"}, "A NodeDue was not run because it came later than scheduled_at + interval: the planner has already emitted the node's next run, so running it would replay a missed run (no catch-up). No lease taken, no SNMP request sent. Nats-Msg-Id <execution_id>:skipped. The QuotaTracker's quota_skipped (executions omitted, seeds 002/003) is to count these.", ExecutionSkipped{}},
		{TypeExecutionInterrupted, 1, "facho.exec.<olt_id>.interrupted", StreamExec, []string{"poller (any replica: the lease watcher)"}, []string{"projector (" + ConsumerProjectorExec + ")", "auditor (" + ConsumerAuditorExec + ", " + ConsumerAuditorQuotaExec + ")"}, "A started attempt's lease expired (its poller was killed, frozen or cut off mid-walk) without a succeeded or failed event. Every poller watches the lease bucket's expiry markers (and sweeps recent attempts at start-up and periodically) and publishes it with Nats-Msg-Id <execution_id>:<attempt>:interrupted, so it is recorded once. Final for the attempt: a late succeeded/failed of the same attempt does not replace it; a newer attempt of the execution still runs.", ExecutionInterrupted{}},
		{TypeVarbindBatch, 1, "facho.varbinds.<olt_id>", StreamVarbinds, []string{"poller"}, []string{"projector (" + ConsumerProjectorVarbinds + ")", "replay tools"}, "A chunk of raw varbinds of one execution, self-describing (columns with decoders) so it can be decoded on replay. Nats-Msg-Id <execution_id>:<attempt>:<batch>.", VarbindBatch{}},
		{TypeONUChanged, 1, "facho.onu.<olt_id>.<discovered|status|updated>", StreamONU, []string{"projector"}, []string{"integrators", "operators (live tail)"}, "An ONU appeared, changed status, or changed another field.", ONUChanged{}},
		{TypeAudit, 1, "facho.audit.<category>", StreamAudit, []string{"planner", "poller", "api"}, []string{"auditor (" + ConsumerAuditorAudit + ", " + ConsumerAuditorQuotaAudit + ")"}, "A coordinator decision or notable fact (TASK_ADDED, TASK_REMOVED, PLAN_ADJUSTED, OLT_DISABLED, ...). An OLT_DISABLED event is also notified (facho.notify.olt_disabled.<olt_id> and webhooks).", AuditEvent{}},
		{TypeNotification, 1, "facho.notify.<quota_violation|olt_disabled|repeated_failures>.<olt_id|global>", StreamNotify, []string{"auditor"}, []string{"operators (subscribe to facho.notify.>)", "webhooks (the same envelope, HMAC-signed)", "auditor (" + ConsumerAuditorNotify + ", " + ConsumerAuditorNotifyLog + ": quota_violations, QUOTA_VIOLATION coordinator logs)"}, "A notification: an hour's quota below the threshold (details: the violation's report, severity LOW/MEDIUM/HIGH/CRITICAL), an OLT disabled (an OLT_DISABLED audit event), or N consecutive final failures of an OLT's executions. Published from the auditor's outbox after the transaction that decided it, with Nats-Msg-Id notify:<id>, so a re-publish inside the duplicate window is stored once; id (e.g. quota_violation:<olt_id>:<task_type>:<period_start unix>) is also the webhook's X-Facho-Notification: deduplicate on it.", Notification{}},
		{TypeDeadLetter, DeadLetterVersion, "facho.dlq.<consumer>", StreamDLQ, []string{"every consumer"}, []string{"operators"}, "A message a consumer could not process, with the reason (bounded to 1 KiB) and how many times it was delivered; the original stays in its stream: stream and stream_seq find it, payload_size and payload_sha256 identify it, payload_excerpt shows its first 4 KiB. event_type, olt_id and execution_id are copied from the original when it is a parseable envelope. Nats-Msg-Id dlq:<consumer>:<stream>:<stream_seq>. Version 1 embedded the whole payload, which a message near the maximum payload could not fit (schemas/dead_letter.v1.json is kept for readers of old dead letters).", DeadLetter{}},
	}
}
