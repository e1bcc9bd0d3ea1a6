// Package oltsim simulates a fleet of GPON OLTs as real SNMP v2c agents over
// UDP: generated vendor profiles (Huawei MA5800, ZTE C300, FiberHome AN5516,
// V-SOL V1600G) or snmpsim .snmprec recordings, with per-OLT fault injection
// and a record of the traffic (including in-flight concurrency) for tests.
package oltsim
