// Package integration holds in-process tests across services: real
// services wired on one embedded JetStream (with Facho's identities and
// permissions), a real Postgres and the OLT simulator, for what no single
// service's tests can show.
package integration
