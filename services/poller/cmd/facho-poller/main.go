// Command facho-poller takes NodeDue events, holds per-OLT leases and polls
// OLTs over SNMP v2c. Configuration: flags, with environment fallbacks.
package main

import (
	"context"
	"flag"
	"io"
	"strings"
	"time"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/pkg/servicemain"
	"github.com/facho-olt/facho/services/poller"
)

func main() { servicemain.Main("facho-poller", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg poller.Config
	var oltMetrics bool
	return servicemain.Binary{
		Name:      "poller",
		HTTPAddr:  "127.0.0.1:9102",
		SecretKey: true, // unseals the communities of NodeDue targets
		LogTo:     stderr,
		Flags: func(fs *flag.FlagSet, env *servicemain.Env, common *servicemain.Common) {
			// The poller's historical names of -nats-url and -http-addr.
			fs.StringVar(&common.NATSURL, "nats", common.NATSURL, "NATS URL, same as -nats-url (FACHO_NATS_URL)")
			fs.StringVar(&common.HTTPAddr, "http", common.HTTPAddr, "address of /metrics and /healthz, same as -http-addr (FACHO_HTTP_ADDR); empty disables")
			fs.StringVar(&cfg.PollerID, "poller-id", env.String("FACHO_POLLER_ID", ""), "lease holder id of this instance (FACHO_POLLER_ID); default: random")
			fs.IntVar(&cfg.Workers, "workers", env.Int("FACHO_POLLER_WORKERS", 0), "most operations of this process at once, on top of the class limits; 0: the sum of the class concurrencies (FACHO_POLLER_WORKERS)")
			d := poller.DefaultClasses()
			for _, c := range []struct {
				name string
				l    *poller.ClassLimit
				def  poller.ClassLimit
				tip  string
			}{
				{"discovery", &cfg.Classes.Discovery, d.Discovery, "nodes of kind discovery"},
				{"polling", &cfg.Classes.Polling, d.Polling, "nodes of kind get, walk, bulkwalk"},
				{"retry", &cfg.Classes.Retry, d.Retry, "retried executions, attempt > 1"},
				{"high_priority", &cfg.Classes.High, d.High, "manual runs"},
			} {
				up := strings.ToUpper(c.name)
				flagName := strings.ReplaceAll(c.name, "_", "-")
				fs.IntVar(&c.l.Concurrency, "class-"+flagName+"-concurrency", env.Int("FACHO_CLASS_"+up+"_CONCURRENCY", c.def.Concurrency),
					"queue class "+c.name+" ("+c.tip+"): NodeDue this process runs at once, 1..256 (FACHO_CLASS_"+up+"_CONCURRENCY)")
				tip := "node timeout when the job has none"
				if c.def.Timeout == 0 {
					tip += "; 0: the timeout of the class of the node's kind"
				}
				fs.DurationVar(&c.l.Timeout, "class-"+flagName+"-timeout", env.Duration("FACHO_CLASS_"+up+"_TIMEOUT", c.def.Timeout),
					"queue class "+c.name+": "+tip+" (FACHO_CLASS_"+up+"_TIMEOUT)")
			}
			fs.DurationVar(&cfg.SNMPTimeout, "snmp-timeout", env.Duration("FACHO_SNMP_TIMEOUT", 2*time.Second), "timeout of one SNMP request (FACHO_SNMP_TIMEOUT)")
			fs.IntVar(&cfg.SNMPRetries, "snmp-retries", env.Int("FACHO_SNMP_RETRIES", 1), "retries of one SNMP request, -1 for none (FACHO_SNMP_RETRIES)")
			fs.IntVar(&cfg.PDURetries, "snmp-pdu-retries", env.Int("FACHO_SNMP_PDU_RETRIES", 4), "times a request still unanswered after -snmp-retries is sent again within the walk, with backoff, resuming from the last OID received (0..10, -1 for none) (FACHO_SNMP_PDU_RETRIES)")
			fs.DurationVar(&cfg.PDUBackoff, "snmp-pdu-backoff", env.Duration("FACHO_SNMP_PDU_BACKOFF", 250*time.Millisecond), "wait before the first PDU retry, doubled for each next one up to 10s (FACHO_SNMP_PDU_BACKOFF)")
			fs.IntVar(&cfg.PDURetryBudget, "snmp-pdu-retry-budget", env.Int("FACHO_SNMP_PDU_RETRY_BUDGET", 100), "most PDU retries of one execution, -1 for none (FACHO_SNMP_PDU_RETRY_BUDGET)")
			fs.IntVar(&cfg.MaxRepetitions, "max-repetitions", env.Int("FACHO_SNMP_MAX_REPETITIONS", poller.DefaultMaxRepetitions), "GETBULK max-repetitions of walks (as snmpbulkwalk -Cr25), unless the OLT's or brand's snmp.max_repetitions says otherwise; halved on tooBig (1..255) (FACHO_SNMP_MAX_REPETITIONS)")
			fs.IntVar(&cfg.GetChunk, "get-varbinds", env.Int("FACHO_SNMP_GET_VARBINDS", 20), "first GET PDU size of a get job, in varbinds, unless the OLT's or brand's snmp.get_varbinds or the size remembered for the OLT says otherwise; halved on timeout or tooBig (1..60) (FACHO_SNMP_GET_VARBINDS)")
			fs.IntVar(&cfg.GetConcurrency, "get-concurrency", env.Int("FACHO_SNMP_GET_CONCURRENCY", 2), "GET PDUs of a get job in flight per OLT, unless the OLT's or brand's snmp.get_concurrency says otherwise (1..16) (FACHO_SNMP_GET_CONCURRENCY)")
			fs.IntVar(&cfg.BatchSize, "batch-size", env.Int("FACHO_POLLER_BATCH_SIZE", 500), "most varbinds per batch event; a batch is also cut at half the NATS max payload (FACHO_POLLER_BATCH_SIZE)")
			fs.IntVar(&cfg.RowBufferVarbinds, "row-buffer-varbinds", env.Int("FACHO_POLLER_ROW_BUFFER_VARBINDS", poller.DefaultRowBufferVarbinds), "most varbinds an execution buffers to publish them grouped by ONU row (every column of an ONU in one batch); a fuller buffer is published at once, less grouped (1..16777216) (FACHO_POLLER_ROW_BUFFER_VARBINDS)")
			fs.DurationVar(&cfg.ChainONUWait, "chain-onu-wait", env.Duration("FACHO_CHAIN_ONU_WAIT", 15*time.Second), "how long a chained get right after its composite's discovery waits for the OLT's first discovered ONUs (up to 5m) (FACHO_CHAIN_ONU_WAIT)")
			fs.DurationVar(&cfg.LeaseBusyDelay, "lease-busy-delay", env.Duration("FACHO_LEASE_BUSY_DELAY", time.Second), "redelivery delay of a NodeDue whose OLT is busy (FACHO_LEASE_BUSY_DELAY)")
			fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", env.Duration("FACHO_SHUTDOWN_GRACE", 10*time.Second), "time in-flight operations get on shutdown (FACHO_SHUTDOWN_GRACE)")
			fs.DurationVar(&cfg.InterruptSweepEvery, "interrupt-sweep-every", env.Duration("FACHO_INTERRUPT_SWEEP_EVERY", 5*time.Minute), "how often to look for executions whose lease expired unseen and end them INTERRUPTED; also once at start (FACHO_INTERRUPT_SWEEP_EVERY)")
			fs.DurationVar(&cfg.StatsEvery, "stats-every", env.Duration("FACHO_POLLER_STATS_EVERY", 2*time.Second), "how often this process writes its pollers' state to the facho_pollers bucket, at most a third of FACHO_POLLERS_TTL (FACHO_POLLER_STATS_EVERY)")
			fs.DurationVar(&cfg.StatsWindow, "stats-window", env.Duration("FACHO_POLLER_STATS_WINDOW", 5*time.Minute), "span of busy_percentage (FACHO_POLLER_STATS_WINDOW)")
			fs.DurationVar(&cfg.DelayedAfter, "delayed-after", env.Duration("FACHO_POLLER_DELAYED_AFTER", 2*time.Second), "a node started later than scheduled_at + this counts in tasks_delayed (FACHO_POLLER_DELAYED_AFTER)")
			db := profiles.DefaultBounds()
			fs.IntVar(&cfg.Bounds.RowsPerTable, "bound-rows-per-table", env.Int("FACHO_BOUND_ROWS_PER_TABLE", db.RowsPerTable), "ceiling of the rows of one table a walk may read; a vendor profile's own bound is capped by it (FACHO_BOUND_ROWS_PER_TABLE)")
			fs.IntVar(&cfg.Bounds.ONUsPerPON, "bound-onus-per-pon", env.Int("FACHO_BOUND_ONUS_PER_PON", db.ONUsPerPON), "ceiling of the distinct ONUs of one PON a walk may read (the vendor profiles say 128) (FACHO_BOUND_ONUS_PER_PON)")
			fs.IntVar(&cfg.Bounds.ONUsPerOLT, "bound-onus-per-olt", env.Int("FACHO_BOUND_ONUS_PER_OLT", db.ONUsPerOLT), "ceiling of the distinct ONUs of one OLT a walk may read or a get may start with (FACHO_BOUND_ONUS_PER_OLT)")
			fs.IntVar(&cfg.Bounds.VarbindsPerExecution, "bound-varbinds-per-execution", env.Int("FACHO_BOUND_VARBINDS_PER_EXECUTION", db.VarbindsPerExecution), "ceiling of the varbinds one execution may read (FACHO_BOUND_VARBINDS_PER_EXECUTION)")
			fs.Int64Var(&cfg.Bounds.BytesPerExecution, "bound-bytes-per-execution", int64(env.Int("FACHO_BOUND_BYTES_PER_EXECUTION", int(db.BytesPerExecution))), "ceiling of the bytes of SNMP answers one execution may receive (FACHO_BOUND_BYTES_PER_EXECUTION)")
			fs.IntVar(&cfg.Bounds.ValueBytes, "bound-value-bytes", env.Int("FACHO_BOUND_VALUE_BYTES", db.ValueBytes), "longest value kept, in bytes; a longer one is cut to it and counted (16..65535) (FACHO_BOUND_VALUE_BYTES)")
			fs.StringVar(&cfg.ProfilesDir, "profiles-dir", env.String("FACHO_PROFILES_DIR", ""), "folder of vendor profiles added to the built-in ones, for their bounds (FACHO_PROFILES_DIR)")
			fs.BoolVar(&oltMetrics, "olt-metrics", env.String("FACHO_POLLER_OLT_METRICS", "true") != "false", "export facho_poller_olt_executions_total, one series per OLT and result; false where OLTs are too many (FACHO_POLLER_OLT_METRICS)")
			fs.DurationVar(&cfg.InterruptLookback, "interrupt-lookback", env.Duration("FACHO_INTERRUPT_LOOKBACK", time.Hour), "how far back that sweep reads execution events (FACHO_INTERRUPT_LOOKBACK)")
			// These override streams.OptionsFromEnv for this instance's
			// provisioning only.
			fs.DurationVar(&common.Streams.LeaseTTL, "lease-ttl", common.Streams.LeaseTTL, "OLT lease TTL, provisioned on the lease bucket (FACHO_LEASE_TTL)")
			fs.DurationVar(&common.Streams.PollerAckWait, "ack-wait", common.Streams.PollerAckWait, "AckWait of the poller consumer (FACHO_POLLER_ACK_WAIT)")
			fs.IntVar(&common.Streams.Replicas, "replicas", common.Streams.Replicas, "JetStream replicas (FACHO_STREAM_REPLICAS)")
		},
		Check:      servicemain.CheckConfig(&cfg),
		ClientName: func() string { return "facho-poller " + cfg.PollerID },
		Service: func(ctx context.Context, d servicemain.Deps) error {
			cfg.DisableOLTMetrics = !oltMetrics
			return poller.Run(ctx, cfg, poller.Deps{JS: d.JS, Log: d.Log, Registry: d.Registry, Box: d.Box})
		},
	}.Run(ctx, args, getenv, stdout, stderr)
}
