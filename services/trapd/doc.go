// Package trapd receives the OLTs' SNMP traps and informs and publishes
// them as events: one more event source beside polling.
//
// Data flow (any number of replicas: behind one UDP address, or one per
// site; they share nothing but the streams):
//
//	FACHO_CONFIG olt.upserted/deleted, brand.upserted/deleted --> directory
//	    (source IP -> OLTs with their opened communities and the trap
//	    decoder of their vendor profile; an immutable snapshot swapped on
//	    each change)
//	UDP socket (FACHO_TRAP_ADDR, :162) --> readers (Readers goroutines,
//	    up to 64 datagrams per recvmmsg), screening on the source alone:
//	    packet > MaxPacket                     --> dropped: too_large
//	    per-source token bucket empty          --> dropped: rate_limited
//	    source IP not a configured OLT         --> dropped: unknown_source
//	    handlers QueueBytes behind             --> dropped: backlog
//	--> queue (one handler per source: its traps stay in order)
//	--> handlers (Handlers goroutines):
//	    BER that does not decode               --> dropped: malformed
//	    SNMPv3 / a PDU that is no trap         --> dropped: unsupported
//	    community not the OLT's                --> dropped: bad_community
//	    more than 64 varbinds, a value > 1 KiB --> dropped: too_large
//	    otherwise: an inform is acknowledged (the only packet trapd ever
//	    sends to an OLT), then
//	    --> facho.trap.<olt_id> trap.received (raw varbinds, for replay)
//	    --> facho.trap.<olt_id> trap.decoded (when the OLT's profile maps
//	        the trap OID: kind, ONU or PON through the profile's index)
//
// Every drop is counted (facho_trapd_dropped_total{reason}) and logged at
// most once per LogEvery per reason, with the number left unlogged. The
// community is compared in constant time and never logged.
//
// Why not gosnmp's TrapListener: it decodes every packet before its
// callback sees it, acknowledges every inform whoever sent it, reads the
// socket from one goroutine and logs each bad packet. trapd reads the
// socket itself so that a flood is shed before any BER decoding (the
// per-source bucket is checked on the source address alone), an inform is
// acknowledged only once its source and community are known, and several
// readers drain the socket. It still uses gosnmp for the BER: UnmarshalTrap
// to decode and SnmpPacket.MarshalMsg for the acknowledgement.
//
// The receiver never sends a request to an OLT. The effects of a decoded
// trap (the ONU's status at once, a confirmation poll under the lease) are
// the projector's (services/projector traps.go).
package trapd
