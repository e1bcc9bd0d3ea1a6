// Package scheduling holds the end-to-end tests of the scheduling rules
// (planner, pollers and the OLT simulator over UDP on embedded JetStream):
// per-OLT queue and finish-driven dispatch. It has no code of its own.
package scheduling
