// Package e2e holds black-box tests that run Facho the way production
// does: every service as its own process, talking only through JetStream.
package e2e
